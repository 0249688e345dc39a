"""Knowledge bases, their documents, and the chunks ``query_kb`` searches.

Full-text and trigram indexes on ``Chunk.content`` are PostgreSQL-only and created by a migration;
the models themselves migrate on SQLite too.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import FileExtensionValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

DOCUMENT_EXTENSIONS = ["txt", "md", "markdown"]
MAX_DOCUMENT_BYTES = 5 * 1024 * 1024


def validate_utf8_text(file) -> None:
    if file.size is not None and file.size > MAX_DOCUMENT_BYTES:
        raise ValidationError(_("The file is larger than 5 MB."))
    position = file.tell() if hasattr(file, "tell") else 0
    try:
        file.seek(0)
        file.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(_("The file is not UTF-8 text.")) from exc
    finally:
        file.seek(position)


class KnowledgeBase(models.Model):
    name = models.CharField(verbose_name=_("name"), max_length=200)
    slug = models.SlugField(verbose_name=_("slug"), unique=True)
    description = models.TextField(verbose_name=_("description"), blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("knowledge base")
        verbose_name_plural = _("knowledge bases")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    kb = models.ForeignKey(
        KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="documents"
    )
    title = models.CharField(verbose_name=_("title"), max_length=300)
    source = models.CharField(
        verbose_name=_("source"),
        max_length=500,
        blank=True,
        help_text=_("Where the text comes from (a URL or a citation)."),
    )
    file = models.FileField(
        verbose_name=_("file"),
        upload_to="knowledge/%Y/%m/",
        blank=True,
        validators=[FileExtensionValidator(DOCUMENT_EXTENSIONS), validate_utf8_text],
        help_text=_("A .txt or .md file in UTF-8. Uploading replaces the text below."),
    )
    filename = models.CharField(verbose_name=_("filename"), max_length=255, blank=True, editable=False)
    text = models.TextField(verbose_name=_("text"), blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("document")
        verbose_name_plural = _("documents")
        ordering = ["kb", "title"]

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        if not self.file and not (self.text or "").strip():
            raise ValidationError(_("Upload a file or enter the text."))


class Chunk(models.Model):
    document = models.ForeignKey(
        Document, verbose_name=_("document"), on_delete=models.CASCADE, related_name="chunks"
    )
    kb = models.ForeignKey(
        KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="chunks"
    )
    index = models.PositiveIntegerField(verbose_name=_("index"))
    content = models.TextField(verbose_name=_("content"))
    metadata = models.JSONField(verbose_name=_("metadata"), default=dict, blank=True)

    class Meta:
        verbose_name = _("chunk")
        verbose_name_plural = _("chunks")
        ordering = ["document_id", "index"]
        constraints = [models.UniqueConstraint(fields=["document", "index"], name="unique_chunk_index")]

    def __str__(self) -> str:
        return f"{self.document} #{self.index}"

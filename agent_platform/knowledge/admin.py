"""Admin for knowledge bases and their documents; saving a document (re)ingests it via the service."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from agent_platform.knowledge.models import Chunk, Document, KnowledgeBase
from agent_platform.knowledge.services import document_ingest, document_rechunk


def _ingest_from_form(form, document: Document) -> Document:
    file = form.cleaned_data.get("file") if "file" in form.changed_data else None
    return document_ingest(
        kb=document.kb,
        title=document.title,
        source=document.source,
        text=document.text,
        file=file or None,
        document=document,
    )


class DocumentInline(admin.StackedInline):
    model = Document
    extra = 0
    fields = ("title", "source", "file", "text", "chunk_count")
    readonly_fields = ("chunk_count",)
    show_change_link = True

    @admin.display(description=_("Chunks"))
    def chunk_count(self, obj: Document) -> int:
        return obj.chunks.count() if obj.pk else 0


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "document_count", "chunk_count", "created_at")
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [DocumentInline]

    def get_queryset(self, request: HttpRequest):
        return (
            super()
            .get_queryset(request)
            .annotate(
                document_total=Count("documents", distinct=True), chunk_total=Count("chunks", distinct=True)
            )
        )

    @admin.display(description=_("Documents"), ordering="document_total")
    def document_count(self, obj: KnowledgeBase) -> int:
        return obj.document_total

    @admin.display(description=_("Chunks"), ordering="chunk_total")
    def chunk_count(self, obj: KnowledgeBase) -> int:
        return obj.chunk_total

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        if formset.model is not Document:
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)
        for document in formset.deleted_objects:
            document.delete()
        for inline_form in formset.forms:
            if inline_form in formset.deleted_forms or not inline_form.has_changed():
                continue
            _ingest_from_form(inline_form, inline_form.instance)
        return None


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "kb", "source", "filename", "chunk_count", "updated_at")
    list_filter = ("kb",)
    search_fields = ("title", "source", "filename", "text")
    fields = ("kb", "title", "source", "file", "filename", "text", "chunk_count", "created_at", "updated_at")
    readonly_fields = ("filename", "chunk_count", "created_at", "updated_at")
    actions = ["rechunk"]

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("kb").annotate(chunk_total=Count("chunks"))

    @admin.display(description=_("Chunks"), ordering="chunk_total")
    def chunk_count(self, obj: Document) -> int:
        if hasattr(obj, "chunk_total"):
            return obj.chunk_total
        return obj.chunks.count() if obj.pk else 0

    def save_model(self, request: HttpRequest, obj: Document, form, change: bool) -> None:
        _ingest_from_form(form, obj)

    @admin.action(description=_("Rebuild the chunks of the selected documents"), permissions=["change"])
    def rechunk(self, request: HttpRequest, queryset) -> None:
        total = sum(document_rechunk(document=document) for document in queryset)
        self.message_user(request, _("Rebuilt %(total)d chunks.") % {"total": total}, level=messages.SUCCESS)


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    """Read-only: chunks come from their document."""

    list_display = ("document", "index", "kb", "short_content")
    list_filter = ("kb",)
    search_fields = ("content", "document__title")
    list_select_related = ("document", "kb")

    @admin.display(description=_("Content"))
    def short_content(self, obj: Chunk) -> str:
        return obj.content[:100]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

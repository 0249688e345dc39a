"""Writes of knowledge bases: ingesting a document replaces its chunks."""

from __future__ import annotations

import os

from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from agent_platform.knowledge.chunking import chunk_text
from agent_platform.knowledge.models import Chunk, Document, KnowledgeBase


def upload_read_text(file: UploadedFile) -> str:
    """The text of an uploaded .txt/.md file: UTF-8 (a BOM is dropped), with ``\\n`` line ends."""
    file.seek(0)
    try:
        text = file.read().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError({"file": "The file is not UTF-8 text."}) from exc
    finally:
        file.seek(0)
    return text.replace("\r\n", "\n").replace("\r", "\n")


@transaction.atomic
def document_ingest(
    *,
    kb: KnowledgeBase,
    title: str,
    text: str | None = None,
    file: UploadedFile | None = None,
    source: str = "",
    document: Document | None = None,
) -> Document:
    """Create (or, given ``document``, update) a document from ``text`` or an uploaded ``file`` and
    rebuild its chunks. A file's text replaces ``text``. Raises ``ValidationError`` on bad input."""
    document = document or Document()
    document.kb = kb
    document.title = title
    document.source = source or ""
    if file is not None:
        document.text = upload_read_text(file)
        document.file = file
        document.filename = os.path.basename(file.name or "")
    elif text is not None:
        document.text = text
    document.full_clean()
    document.save()
    document_rechunk(document=document)
    return document


@transaction.atomic
def document_rechunk(*, document: Document) -> int:
    """Replace the chunks of ``document`` by fresh ones from its text; return how many."""
    document.chunks.all().delete()
    chunks = [
        Chunk(
            document=document,
            kb_id=document.kb_id,
            index=piece.index,
            content=piece.content,
            metadata={
                "source": document.source,
                "filename": document.filename,
                "chunk_index": piece.index,
                "char_start": piece.start,
                "char_end": piece.end,
            },
        )
        for piece in chunk_text(document.text or "")
    ]
    Chunk.objects.bulk_create(chunks)
    return len(chunks)

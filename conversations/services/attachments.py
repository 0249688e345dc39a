"""Attachments: check uploads against the limits, save them in the thread's workdir, and build what
the model is sent for them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from agent_platform.workdir import Workdir, workdir_for
from context_engine.errors import StoreError
from conversations.attachments import (
    AttachmentRefused,
    AttachmentTooLarge,
    Kind,
    ModelAttachment,
    model_blocks,
    pdf_text,
    sha256_bytes,
    sniff,
    text_path,
    upload_path,
)
from conversations.models import Attachment, Conversation, Message


@dataclass(frozen=True)
class Upload:
    """One file as received: the name the user gave it and its bytes."""

    name: str
    data: bytes


@dataclass(frozen=True)
class CheckedUpload:
    name: str
    data: bytes
    mime_type: str
    kind: str
    sha256: str
    path: str
    text: str | None  # UTF-8 text, or the text extracted from a PDF


def upload_read(*, name: str, file) -> Upload:
    """Read an uploaded file (Django ``UploadedFile``), refusing it before reading past the size limit."""
    limit = settings.ATTACHMENT_MAX_FILE_BYTES
    if getattr(file, "size", 0) and file.size > limit:
        raise _too_large(name)
    data = file.read(limit + 1)
    if len(data) > limit:
        raise _too_large(name)
    return Upload(name=name, data=data)


def uploads_from(files) -> list[Upload]:
    r"""The uploaded files of one request (Django ``UploadedFile``\ s), each read within the size limit."""
    return [upload_read(name=file.name or "file", file=file) for file in files]


def _too_large(name: str) -> AttachmentTooLarge:
    return AttachmentTooLarge(
        _("%(name)s is larger than %(limit)s.")
        % {"name": name, "limit": filesizeformat(settings.ATTACHMENT_MAX_FILE_BYTES)}
    )


def attachments_check(*, uploads: Sequence[Upload]) -> list[CheckedUpload]:
    """Each upload checked by its content against the per-file limits; nothing is written. Every
    refused file is named in the one error raised (the first refusal's kind), not only the first."""
    if len(uploads) > settings.ATTACHMENT_MAX_FILES:
        raise _too_many()
    checked, refused = [], []
    for upload in uploads:
        try:
            checked.append(_checked(upload))
        except (AttachmentRefused, AttachmentTooLarge) as exc:
            refused.append(exc)
    if refused:
        first = refused[0]
        raise type(first)("\n".join(exc.message for exc in refused), code=first.code)
    return checked


@dataclass(frozen=True)
class Refusal:
    index: int | None  # the refused file's position among those checked; None: about them all
    reason: str


def attachments_refusals(*, files: Sequence[UploadedFile]) -> list[Refusal]:
    """Every reason the picked ``files`` would be refused at Send, all at once: the count first, then
    each file's, in order. ``[]`` when all may be attached. Nothing is written."""
    refusals = [Refusal(None, _too_many().message)] if len(files) > settings.ATTACHMENT_MAX_FILES else []
    for index, file in enumerate(files):
        try:
            _checked(upload_read(name=file.name or "file", file=file))
        except (AttachmentRefused, AttachmentTooLarge) as exc:
            refusals.append(Refusal(index, exc.message))
    return refusals


def _too_many() -> AttachmentTooLarge:
    return AttachmentTooLarge(
        _("At most %(count)d files can be attached to one message.")
        % {"count": settings.ATTACHMENT_MAX_FILES},
        code="too_many_attachments",
    )


def _checked(upload: Upload) -> CheckedUpload:
    if len(upload.data) > settings.ATTACHMENT_MAX_FILE_BYTES:
        raise _too_large(upload.name)
    if not upload.data:
        raise AttachmentRefused(_("%(name)s is empty.") % {"name": upload.name})
    sniffed = sniff(upload.data, name=upload.name)
    text = pdf_text(upload.data) if sniffed.kind == Kind.PDF else sniffed.text
    digest = sha256_bytes(upload.data)
    return CheckedUpload(
        name=upload.name[:255] or "file",
        data=upload.data,
        mime_type=sniffed.mime_type,
        kind=sniffed.kind,
        sha256=digest,
        path=upload_path(upload.name, digest),
        text=text,
    )


def attachments_save(
    *, conversation: Conversation, message: Message, checked: Sequence[CheckedUpload]
) -> list[Attachment]:
    """Save ``checked`` in the thread's workdir and record them on ``message``.

    The caller holds the thread's row lock, so the per-thread total cannot be raced past. Files are
    named by content, so saving one twice writes it once.
    """
    if not checked:
        return []
    # A file counts once however many rows name it (an edit's copy, the same file sent again): rows
    # with one stored path are one file in the workdir.
    stored = dict(Attachment.objects.filter(conversation=conversation).values_list("path", "size").distinct())
    used = sum(stored.values())
    adding = sum(len(item.data) for item in {i.path: i for i in checked if i.path not in stored}.values())
    if used + adding > settings.ATTACHMENT_MAX_THREAD_BYTES:
        raise AttachmentTooLarge(
            _("This thread's attachments would exceed %(limit)s (%(used)s used).")
            % {
                "limit": filesizeformat(settings.ATTACHMENT_MAX_THREAD_BYTES),
                "used": filesizeformat(used),
            },
            code="thread_attachments_full",
        )
    workdir = workdir_for(conversation)
    rows = []
    for item in checked:
        _write_once(workdir, item.path, item.data)
        if item.kind == Kind.PDF:
            _write_once(workdir, text_path(item.path, item.kind), (item.text or "").encode("utf-8"))
        rows.append(
            Attachment(
                conversation=conversation,
                message=message,
                name=item.name,
                path=item.path,
                mime_type=item.mime_type,
                kind=item.kind,
                size=len(item.data),
                sha256=item.sha256,
            )
        )
    return Attachment.objects.bulk_create(rows)


def _write_once(workdir: Workdir, path: str, data: bytes) -> None:
    try:
        if not workdir.exists(path):
            workdir.write_bytes(path, data)
    except StoreError as exc:
        raise AttachmentRefused(_("The file could not be saved: %(reason)s") % {"reason": exc}) from exc


def message_model_content(*, message: Message, vision: bool) -> str | list[dict]:
    """What the model is sent for a user message: its text, plus a block per attachment."""
    attachments = list(message.attachments.all())
    if not attachments:
        return message.content
    workdir = workdir_for(message.conversation)
    blocks: list[dict] = [{"type": "text", "text": message.content}] if message.content else []
    for attachment in attachments:
        blocks += model_blocks(
            _model_attachment(attachment, workdir=workdir, vision=vision),
            inline_max_chars=settings.ATTACHMENT_INLINE_MAX_CHARS,
            preview_tokens=settings.ATTACHMENT_PREVIEW_TOKENS,
            vision=vision,
        )
    return blocks


def _model_attachment(attachment: Attachment, *, workdir: Workdir, vision: bool) -> ModelAttachment:
    text = data = None
    if attachment.kind == Attachment.Kind.IMAGE:
        data = workdir.read_bytes(attachment.path) if vision else None
    else:
        text = workdir.read_text(text_path(attachment.path, attachment.kind))
    return ModelAttachment(
        name=attachment.name,
        path=attachment.path,
        mime_type=attachment.mime_type,
        kind=attachment.kind,
        size=attachment.size,
        sha256=attachment.sha256,
        text=text,
        data=data,
    )

"""Attachments, pure parts: what a file is (by its bytes, never its name), where it is saved, and what
the model is shown for it. No ORM and no storage here; ``services/attachments.py`` does the writing.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

import filetype
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agent_platform.errors import ApplicationError
from context_engine.compaction.previews import tool_result_preview
from context_engine.formats import (
    ATTACHMENT_DIGEST_CHARS,
    ATTACHMENT_FILE_TEMPLATE,
    ATTACHMENT_IMAGE_LABEL,
    ATTACHMENT_INLINE_TEMPLATE,
    ATTACHMENT_NO_VISION_HINT,
    ATTACHMENT_NOTE_TEMPLATE,
    ATTACHMENT_PREVIEW_HEADER,
    ATTACHMENT_READ_HINT,
    ATTACHMENT_TEXT_SUFFIX,
    UPLOADS_DIR,
)

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
PDF_TYPE = "application/pdf"
# Text files: the type is read from the name only once the bytes are known to be UTF-8 text.
_TEXT_TYPES_BY_SUFFIX = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
}
# What a refused file looks like, in the words of someone who attached it (by its sniffed type).
_LOOKS_LIKE = {
    "application/x-msdownload": gettext_lazy("a Windows program"),
    "application/x-executable": gettext_lazy("a Linux program"),
    "application/x-elf": gettext_lazy("a Linux program"),
    "application/x-mach-binary": gettext_lazy("a Mac program"),
    "application/x-sharedlib": gettext_lazy("a program library"),
    "application/wasm": gettext_lazy("a program"),
    "application/java-archive": gettext_lazy("a Java program"),
    "application/vnd.android.package-archive": gettext_lazy("an Android app"),
    "application/x-ms-shortcut": gettext_lazy("a Windows shortcut"),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": gettext_lazy(
        "a Word document"
    ),
    "application/msword": gettext_lazy("a Word document"),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": gettext_lazy("an Excel spreadsheet"),
    "application/vnd.ms-excel": gettext_lazy("an Excel spreadsheet"),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": gettext_lazy(
        "a PowerPoint presentation"
    ),
    "application/vnd.ms-powerpoint": gettext_lazy("a PowerPoint presentation"),
    "application/x-sqlite3": gettext_lazy("a database"),
}
_LOOKS_LIKE_FAMILY = {
    "image/": gettext_lazy("an image of a kind that can't be attached"),
    "audio/": gettext_lazy("a sound recording"),
    "video/": gettext_lazy("a video"),
    "font/": gettext_lazy("a font"),
    "application/font": gettext_lazy("a font"),
}
_ARCHIVES = (
    "zip",
    "tar",
    "gzip",
    "bzip2",
    "x-7z",
    "x-rar",
    "x-xz",
    "zstd",
    "x-lzip",
    "x-compress",
    "x-apple-diskimage",
)
SUPPORTED_KINDS = gettext_lazy("text, Markdown, CSV, JSON, source code, PDF, PNG, JPEG, WebP or GIF")
MAX_NAME_CHARS = 100
_UNSAFE_NAME_CHARS = re.compile(r"[^\w.+-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class AttachmentRefused(ApplicationError):
    status = 422
    code = "attachment_refused"


class AttachmentTooLarge(ApplicationError):
    status = 413
    code = "attachment_too_large"


class Kind:
    TEXT = "text"
    PDF = "pdf"
    IMAGE = "image"


@dataclass(frozen=True)
class Sniffed:
    mime_type: str
    kind: str
    text: str | None = None  # the decoded text of a text file (decoded once, here)


def sniff(data: bytes, *, name: str) -> Sniffed:
    """The file's type from its bytes: an allowed image, a PDF, or UTF-8 text; anything else is refused.

    The name only chooses among text types (Markdown, CSV, JSON, plain text and source code), so a
    renamed executable is refused and a renamed text file is text.
    """
    guessed = filetype.guess(data[:8192])
    if guessed is not None:
        if guessed.mime in IMAGE_TYPES:
            return Sniffed(guessed.mime, Kind.IMAGE)
        if guessed.mime == PDF_TYPE:
            return Sniffed(PDF_TYPE, Kind.PDF)
        raise AttachmentRefused(
            _("%(name)s looks like %(what)s; it can't be attached. Attach %(kinds)s.")
            % {"name": name, "what": looks_like(guessed.mime), "kinds": SUPPORTED_KINDS},
            mime_type=guessed.mime,
        )
    if data.startswith(b"%PDF-"):  # filetype wants the header at offset 0 exactly; so do we
        return Sniffed(PDF_TYPE, Kind.PDF)
    text = decode_text(data)
    if text is None:
        raise AttachmentRefused(
            _("%(name)s is not text and not a file type that can be attached. Attach %(kinds)s.")
            % {"name": name, "kinds": SUPPORTED_KINDS}
        )
    suffix = PurePosixPath(name.lower()).suffix
    return Sniffed(_TEXT_TYPES_BY_SUFFIX.get(suffix, "text/plain"), Kind.TEXT, text)


def looks_like(mime_type: str) -> str:
    """A refused file's type in plain words ("a Windows program"), never a MIME type."""
    if mime_type in _LOOKS_LIKE:
        return str(_LOOKS_LIKE[mime_type])
    if any(mime_type.endswith(kind) or f"/{kind}" in mime_type for kind in _ARCHIVES):
        return _("a compressed archive")
    for prefix, words in _LOOKS_LIKE_FAMILY.items():
        if mime_type.startswith(prefix):
            return str(words)
    return _("a file of a kind that can't be attached")


def decode_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 without NUL or other binary control bytes, else ``None``."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return None if _CONTROL.search(text) else text


def served_type(data: bytes) -> tuple[str, bool]:
    """How a workdir file is served: ``(content type, inline)``. Images, PDFs (the browser's viewer) and
    UTF-8 text are shown; anything else is a download. Never HTML or SVG: user content must not run in
    the page."""
    guessed = filetype.guess(data[:8192])
    if guessed is not None and guessed.mime in IMAGE_TYPES:
        return guessed.mime, True
    if guessed is None and decode_text(data) is not None:
        return "text/plain; charset=utf-8", True
    if guessed is not None and guessed.mime == PDF_TYPE or data.startswith(b"%PDF-"):
        return PDF_TYPE, True
    return "application/octet-stream", False


def safe_name(name: str) -> str:
    """A file name that can only name a file in ``uploads/``: no directories, no hidden or control names."""
    name = unicodedata.normalize("NFKC", name or "")
    name = re.split(r"[\\/]", name)[-1]
    name = _UNSAFE_NAME_CHARS.sub("-", name).strip(".-")
    name = re.sub(r"\.{2,}", ".", name)
    if len(name) > MAX_NAME_CHARS:
        stem, dot, suffix = name.rpartition(".")
        keep = suffix if dot and len(suffix) <= 10 else ""
        name = (name[: MAX_NAME_CHARS - len(keep) - 1] + "." + keep) if keep else name[:MAX_NAME_CHARS]
    return name or "file"


def upload_path(name: str, sha256: str) -> str:
    return ATTACHMENT_FILE_TEMPLATE.format(
        directory=UPLOADS_DIR, digest=sha256[:ATTACHMENT_DIGEST_CHARS], name=safe_name(name)
    )


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pdf_text(data: bytes) -> str:
    """The text of a PDF, page by page; an unreadable PDF is refused."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise AttachmentRefused(_("The PDF could not be read: %(reason)s") % {"reason": exc}) from exc
    return "\n\n".join(page.strip() for page in pages).strip()


def text_path(path: str, kind: str) -> str:
    """Where the model reads the attachment's text: the file itself, or the text extracted from a PDF."""
    return path + ATTACHMENT_TEXT_SUFFIX if kind == Kind.PDF else path


@dataclass(frozen=True)
class ModelAttachment:
    """What the model is told about one attachment."""

    name: str
    path: str
    mime_type: str
    kind: str
    size: int
    sha256: str
    text: str | None = None  # the file's text, or the PDF's extracted text
    data: bytes | None = None  # the image's bytes, when the model can see images


def model_blocks(
    attachment: ModelAttachment, *, inline_max_chars: int, preview_tokens: int, vision: bool
) -> list[dict]:
    """Content blocks for ``attachment``: small text inline; larger text and PDFs as a note with a
    preview (``read_file`` reads the rest); images as image blocks for vision models, else a note."""
    facts = {
        "name": attachment.name,
        "path": attachment.path,
        "mime_type": attachment.mime_type,
        "size": attachment.size,
        "sha256": attachment.sha256,
    }
    if attachment.kind == Kind.IMAGE:
        if vision and attachment.data is not None:
            url = f"data:{attachment.mime_type};base64,{base64.b64encode(attachment.data).decode()}"
            return [
                {"type": "text", "text": ATTACHMENT_IMAGE_LABEL.format(**facts)},
                {"type": "image_url", "image_url": {"url": url}},
            ]
        return [
            {
                "type": "text",
                "text": ATTACHMENT_NOTE_TEMPLATE.format(**facts) + "\n" + ATTACHMENT_NO_VISION_HINT,
            }
        ]
    text = attachment.text or ""
    if attachment.kind == Kind.TEXT and len(text) <= inline_max_chars:
        return [{"type": "text", "text": ATTACHMENT_INLINE_TEMPLATE.format(**facts, text=text)}]
    preview = tool_result_preview(text, limit_tokens=preview_tokens).text
    lines = [
        ATTACHMENT_NOTE_TEMPLATE.format(**facts),
        ATTACHMENT_READ_HINT.format(text_path=text_path(attachment.path, attachment.kind)),
    ]
    if preview:
        lines += ["", ATTACHMENT_PREVIEW_HEADER, preview]
    return [{"type": "text", "text": "\n".join(lines)}]

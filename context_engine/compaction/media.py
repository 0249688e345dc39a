"""Inline media (``data:`` URIs, base64 image/file/audio blocks) saved to the workdir before any summary.

Each payload is decoded, written once to ``outputs/media/<sha256[:16]>.<ext>`` (the digest of the
decoded bytes, so identical media are saved once) and replaced, in the model's view only, by a short
receipt with its path, type, size and SHA-256. A payload whose file cannot be written stays inline and
is reported, never dropped.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from context_engine.formats import (
    MEDIA_DIGEST_CHARS,
    MEDIA_DIR,
    MEDIA_FALLBACK_EXT,
    MEDIA_FILE_TEMPLATE,
    MEDIA_RECEIPT_TEMPLATE,
    MEDIA_SAVED_KEY,
)
from context_engine.store import ResultStore

# ``data:<type>[;param=value]*;base64,<payload>``; payloads shorter than this are left alone (a few
# bytes are cheaper inline than as a receipt, and short matches in prose are rarely real media).
MIN_PAYLOAD_CHARS = 64
_DATA_URI = re.compile(
    r"data:(?P<mime>[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+)(?:;[A-Za-z0-9.+-]+=[A-Za-z0-9.+\"-]+)*;base64,"
    r"(?P<payload>[A-Za-z0-9+/]{" + str(MIN_PAYLOAD_CHARS) + r",}={0,2})"
)
_EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
    "application/json": "json",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mpeg": "mp3",
}
_AUDIO_FORMATS = {"wav": "audio/wav", "mp3": "audio/mpeg"}


@dataclass(frozen=True)
class SavedMedia:
    message_id: str | None
    path: str
    mime_type: str
    size: int
    sha256: str
    written: bool  # False when an identical file already existed


@dataclass(frozen=True)
class FailedMedia:
    message_id: str | None
    path: str
    error: str


@dataclass(frozen=True)
class MediaResult:
    messages: list[BaseMessage]
    saved: tuple[SavedMedia, ...] = ()
    failed: tuple[FailedMedia, ...] = ()


def media_extension(mime_type: str) -> str:
    mime_type = mime_type.lower()
    if mime_type in _EXTENSIONS:
        return _EXTENSIONS[mime_type]
    guessed = mimetypes.guess_extension(mime_type, strict=False)
    return guessed.lstrip(".") if guessed else MEDIA_FALLBACK_EXT


def media_path(mime_type: str, sha256: str) -> str:
    return MEDIA_FILE_TEMPLATE.format(
        directory=MEDIA_DIR, digest=sha256[:MEDIA_DIGEST_CHARS], ext=media_extension(mime_type)
    )


def media_receipt(*, path: str, mime_type: str, size: int, sha256: str) -> str:
    return MEDIA_RECEIPT_TEMPLATE.format(path=path, mime_type=mime_type, size=size, sha256=sha256)


def _decode(payload: str) -> bytes | None:
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


class _Pass:
    """One pass over one message: saves each payload it is shown and returns its receipt."""

    def __init__(self, store: ResultStore | None, message_id: str | None) -> None:
        self.store = store
        self.message_id = message_id
        self.saved: list[SavedMedia] = []
        self.failed: list[FailedMedia] = []

    def save(self, mime_type: str, payload: str) -> str | None:
        """The receipt for ``payload``, or ``None`` to leave it inline (not base64, or not written)."""
        data = _decode(payload.strip())
        if data is None or not data:
            return None
        mime_type = mime_type.lower() or "application/octet-stream"
        digest = hashlib.sha256(data).hexdigest()
        path = media_path(mime_type, digest)
        try:
            if self.store is None:
                raise RuntimeError("no result store is available")
            written = not self.store.exists(path)
            if written:
                self.store.write_bytes(path, data)
        except Exception as exc:  # the payload stays inline; reported, not raised
            self.failed.append(FailedMedia(self.message_id, path, f"{type(exc).__name__}: {exc}"))
            return None
        self.saved.append(SavedMedia(self.message_id, path, mime_type, len(data), digest, written))
        return media_receipt(path=path, mime_type=mime_type, size=len(data), sha256=digest)

    def text(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            return self.save(match["mime"], match["payload"]) or match.group(0)

        return _DATA_URI.sub(replace, text) if "base64," in text else text

    def data_uri(self, uri: Any) -> str | None:
        if not isinstance(uri, str):
            return None
        match = _DATA_URI.fullmatch(uri.strip())
        return self.save(match["mime"], match["payload"]) if match else None

    def block(self, block: Any) -> Any:
        """``block`` with its payload replaced by a text block holding the receipt (or unchanged)."""
        if isinstance(block, str):
            return self.text(block)
        if not isinstance(block, dict):
            return block
        receipt = self._block_receipt(block)
        if receipt is not None:
            return {"type": "text", "text": receipt}
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            text = self.text(block["text"])
            return block if text == block["text"] else {**block, "text": text}
        return block

    def _block_receipt(self, block: dict) -> str | None:
        kind = block.get("type")
        # OpenAI chat: {"type": "image_url", "image_url": {"url": "data:..."}} (or the URL directly).
        if kind in ("image_url", "input_image"):
            value = block.get("image_url")
            return self.data_uri(value.get("url") if isinstance(value, dict) else value)
        # OpenAI chat file part: {"type": "file", "file": {"file_data": "data:...", "filename": ...}}.
        if kind == "file" and isinstance(block.get("file"), dict):
            return self.data_uri(block["file"].get("file_data"))
        # OpenAI audio input: {"type": "input_audio", "input_audio": {"data": ..., "format": "wav"}}.
        if kind == "input_audio" and isinstance(block.get("input_audio"), dict):
            audio = block["input_audio"]
            mime = _AUDIO_FORMATS.get(str(audio.get("format", "")).lower(), "application/octet-stream")
            return self.save(mime, audio["data"]) if isinstance(audio.get("data"), str) else None
        # Anthropic: {"type": "image"|"document", "source": {"type": "base64", "media_type", "data"}}.
        source = block.get("source")
        if (
            isinstance(source, dict)
            and source.get("type") == "base64"
            and isinstance(source.get("data"), str)
        ):
            return self.save(str(source.get("media_type") or ""), source["data"])
        # LangChain standard blocks: {"type": "image", "base64": ..., "mime_type": ...} and the older
        # {"type": "image", "source_type": "base64", "data": ..., "mime_type": ...}.
        if kind in ("image", "file", "audio", "video"):
            payload = block.get("base64")
            if payload is None and block.get("source_type") == "base64":
                payload = block.get("data")
            if isinstance(payload, str):
                return self.save(str(block.get("mime_type") or ""), payload)
            return self.data_uri(block.get("url"))
        return None


class _Reader(_Pass):
    """A pass that writes nothing: it only names the file each payload is (or would be) saved as."""

    def __init__(self) -> None:
        super().__init__(None, None)

    def save(self, mime_type: str, payload: str) -> str | None:
        data = _decode(payload.strip())
        if not data:
            return None
        mime_type = mime_type.lower() or "application/octet-stream"
        digest = hashlib.sha256(data).hexdigest()
        self.saved.append(
            SavedMedia(None, media_path(mime_type, digest), mime_type, len(data), digest, False)
        )
        return ""


def media_of(content: str | list[Any]) -> list[SavedMedia]:
    """The inline media in ``content`` and the paths they are saved at (``written`` is always False);
    writes nothing. Lets a page link a transcript message to its saved media."""
    if isinstance(content, str) and "base64," not in content:
        return []
    reader = _Reader()
    if isinstance(content, str):
        reader.text(content)
    else:
        for block in content:
            reader.block(block)
    return reader.saved


def has_inline_media(message: BaseMessage) -> bool:
    """A cheap pre-check: ``False`` means the message certainly carries no base64 payload."""
    content = message.content
    if isinstance(content, str):
        return "base64," in content
    return any(not isinstance(block, str) or "base64," in block for block in content)


def offload_message_media(
    message: BaseMessage, *, store: ResultStore | None
) -> tuple[BaseMessage, list[SavedMedia], list[FailedMedia]]:
    """``message`` with every inline payload saved and replaced by its receipt (same id and type)."""
    if not has_inline_media(message):
        return message, [], []
    run = _Pass(store, message.id)
    content = message.content
    new_content: Any = run.text(content) if isinstance(content, str) else [run.block(b) for b in content]
    if not run.saved:
        return message, [], run.failed
    kwargs = {**message.additional_kwargs}
    kwargs[MEDIA_SAVED_KEY] = [*kwargs.get(MEDIA_SAVED_KEY, []), *(item.path for item in run.saved)]
    return (
        message.model_copy(update={"content": new_content, "additional_kwargs": kwargs}),
        run.saved,
        run.failed,
    )


def offload_media(
    messages: Sequence[BaseMessage],
    *,
    store: ResultStore | None,
    keep: Callable[[int, BaseMessage], bool] | None = None,
) -> MediaResult:
    """A copy of ``messages`` with inline media saved; ``keep(index, message)`` exempts a message.

    ``result.messages`` is ``messages`` itself (as a list) when nothing was saved.
    """
    out: list[BaseMessage] = []
    saved: list[SavedMedia] = []
    failed: list[FailedMedia] = []
    for index, message in enumerate(messages):
        if keep is not None and keep(index, message):
            out.append(message)
            continue
        new, done, missed = offload_message_media(message, store=store)
        out.append(new)
        saved += done
        failed += missed
    if not saved:
        return MediaResult(list(messages), failed=tuple(failed))
    return MediaResult(out, tuple(saved), tuple(failed))

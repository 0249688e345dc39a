"""Inline media (``data:`` URIs, base64 image/file/audio blocks, and bare base64 runs whose bytes are a
known media type) saved to the workdir before any summary; standard or URL-safe base64, padded or not.

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

# ``data:<type>[;param=value]*;base64,<payload>``, in any letter case; payloads shorter than this are
# left alone (a few bytes are cheaper inline than as a receipt, and short matches in prose are rarely
# real media).
MIN_PAYLOAD_CHARS = 64
_DATA_URI_HEAD = (
    r"data:(?P<mime>[a-z0-9.+-]+/[a-z0-9.+-]+)(?:;[a-z0-9.+-]+=[a-z0-9.+\"-]+)*;base64,"
    r"[ \t]*(?:\r?\n[ \t]*)?"  # the payload may start on the next line
)
_B64_RUN = r"[A-Za-z0-9+/_=-]+"  # standard or URL-safe (RFC 4648 §5) alphabet
# In text: the head, then every line of base64 that follows it; ``_payload_end`` decides where the
# payload really ends (a wrapped payload's lines are full-width but for the last).
_DATA_URI = re.compile(
    _DATA_URI_HEAD + r"(?P<payload>" + _B64_RUN + r"(?:[ \t]*\r?\n[ \t]*" + _B64_RUN + r")*)", re.IGNORECASE
)
# A whole field (an image or file part's URL): everything after the head is the payload.
_DATA_URI_FIELD = re.compile(_DATA_URI_HEAD + r"(?P<payload>[A-Za-z0-9+/_=\s-]+)", re.IGNORECASE)
_MARKER = re.compile(r"base64,", re.IGNORECASE)
# Bare base64 (no ``data:`` head): a long run of the alphabet, taken only when its bytes start with a
# media type's signature (``_SIGNATURES``), so hashes, ids and other long tokens stay text.
MIN_BARE_CHARS = 256
_BARE = re.compile(
    r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{" + str(MIN_BARE_CHARS) + r",}={0,2}(?![A-Za-z0-9+/_=-])"
)
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)
_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}  # RIFF....<form>
_B64_LINE = re.compile(_B64_RUN)
_WHITESPACE = re.compile(r"\s+")
# Line widths base64 encoders wrap at (PEM 64, MIME 76, and the like); only lines this wide continue.
WRAP_WIDTHS = range(16, 201)
_LINE_CLOSERS = frozenset("\r\n\"')]>}`")
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


_URL_SAFE = str.maketrans("-_", "+/")


def _decode(payload: str) -> bytes | None:
    """The bytes of ``payload``, standard or URL-safe base64, its padding optional (line breaks and other
    whitespace inside it ignored), or None."""
    compact = _WHITESPACE.sub("", payload).translate(_URL_SAFE)
    compact += "=" * (-len(compact.rstrip("=")) % 4) if "=" not in compact else ""
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None


def sniff_media_type(data: bytes) -> str | None:
    """The media type ``data`` starts with the signature of, or None."""
    if data[:4] == b"RIFF" and data[8:12] in _RIFF:
        return _RIFF[data[8:12]]
    return next((mime for signature, mime in _SIGNATURES if data.startswith(signature)), None)


def _ends_its_line(text: str, end: int) -> bool:
    """Whether only spaces stand between ``end`` and the end of its line (or a closing quote/bracket)."""
    while end < len(text) and text[end] in " \t":
        end += 1
    return end == len(text) or text[end] in _LINE_CLOSERS


def _payload_end(text: str, start: int, end: int) -> int:
    """Where the payload that begins at ``start`` ends, within the run of base64 lines ``[start, end)``.

    One line, unless it is wrapped: then every line is as wide as the widest of the first two (the
    first may share its line with the ``data:`` head), within ``WRAP_WIDTHS``; a shorter line, or one
    with ``=`` padding, is the last, and each line without padding must fill its line (so prose after a
    payload stays prose: a last line followed by words on the same line is taken only when padded).
    Trailing lines are given back while the whole does not decode."""
    lines = [(m.start(), m.end()) for m in _B64_LINE.finditer(text, start, end)]
    taken = lines[:1]
    if len(lines) > 1 and "=" not in text[slice(*lines[0])]:
        width = max(lines[0][1] - lines[0][0], lines[1][1] - lines[1][0])
        if width in WRAP_WIDTHS:
            for line_start, line_end in lines[1:]:
                previous = taken[-1]
                if previous is not taken[0] and previous[1] - previous[0] != width:
                    break
                size, padded = line_end - line_start, "=" in text[line_start:line_end]
                if size > width or not (padded or _ends_its_line(text, line_end)):
                    break
                taken.append((line_start, line_end))
                if padded:
                    break
    while len(taken) > 1 and _decode(text[start : taken[-1][1]]) is None:
        taken.pop()
    return taken[-1][1] if taken else start


class _Pass:
    """One pass over one message: saves each payload it is shown and returns its receipt."""

    def __init__(self, store: ResultStore | None, message_id: str | None) -> None:
        self.store = store
        self.message_id = message_id
        self.saved: list[SavedMedia] = []
        self.failed: list[FailedMedia] = []

    def save(self, mime_type: str, payload: str) -> str | None:
        """The receipt for ``payload``, or ``None`` to leave it inline (not base64, or not written)."""
        data = _decode(payload)
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
            start = match.start("payload")
            end = _payload_end(text, start, match.end("payload"))
            payload = text[start:end]
            if len(_WHITESPACE.sub("", payload)) < MIN_PAYLOAD_CHARS:
                return match.group(0)
            receipt = self.save(match["mime"], payload)
            return match.group(0) if receipt is None else receipt + text[end : match.end()]

        text = _DATA_URI.sub(replace, text) if _MARKER.search(text) else text
        return _BARE.sub(self._bare, text) if _BARE.search(text) else text

    def _bare(self, match: re.Match[str]) -> str:
        """A bare base64 run's receipt when its bytes are media, else the run as it was."""
        head = _decode(match.group(0)[:64])  # the signature, before decoding the whole run
        mime = sniff_media_type(head) if head else None
        receipt = self.save(mime, match.group(0)) if mime else None
        return match.group(0) if receipt is None else receipt

    def data_uri(self, uri: Any) -> str | None:
        if not isinstance(uri, str):
            return None
        match = _DATA_URI_FIELD.fullmatch(uri.strip())
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

    def _block_receipt(self, block: dict[str, Any]) -> str | None:
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
        data = _decode(payload)
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
    if isinstance(content, str) and not _may_hold_media(content):
        return []
    reader = _Reader()
    if isinstance(content, str):
        reader.text(content)
    else:
        for block in content:
            reader.block(block)
    return reader.saved


def _may_hold_media(text: str) -> bool:
    return _MARKER.search(text) is not None or _BARE.search(text) is not None


def has_inline_media(message: BaseMessage) -> bool:
    """A cheap pre-check: ``False`` means the message certainly carries no base64 payload."""
    content = message.content
    if isinstance(content, str):
        return _may_hold_media(content)
    return any(not isinstance(block, str) or _may_hold_media(block) for block in content)


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

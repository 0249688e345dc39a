"""Deterministic compaction (SPEC §6 step 2): tool-call argument truncation and tool-result offloading.

A large ToolMessage is written whole to ``outputs/large_tool_results/<tool>-<sha256[:16]>.txt`` and
replaced, in the returned view only, by a receipt with a preview. Nothing is ever trimmed without a
saved copy: a message whose file cannot be written stays whole and is reported. Estimates and
receipts are cached by content hash, so re-running on a state that grew by one message redoes no
work for the unchanged messages.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from context_engine.compaction.arguments import truncate_tool_call_args
from context_engine.compaction.media import FailedMedia, SavedMedia, offload_message_media
from context_engine.compaction.previews import tool_result_preview
from context_engine.compaction.receipts import render_receipt
from context_engine.config import CompressionConfig
from context_engine.errors import OffloadError
from context_engine.formats import (
    FALLBACK_TOOL_FILE_NAME,
    LARGE_TOOL_RESULTS_DIR,
    RECEIPT_UNKNOWN_TOOL,
    RECOVERY_TOOLS,
    TOOL_RESULT_DIGEST_CHARS,
    TOOL_RESULT_FILE_TEMPLATE,
    TOOL_RESULT_SAVED_KEY,
)
from context_engine.lru import LRU
from context_engine.store import ResultStore
from context_engine.tokens.messages import (
    DEFAULT_PROFILE,
    TokenProfile,
    estimate_text,
    stored_text_estimate,
    without_estimate,
)

MAX_TOOL_FILE_NAME_CHARS = 64
CACHE_SIZE = 16384


@dataclass(frozen=True)
class SavedToolResult:
    message_id: str | None
    tool_call_id: str
    tool_name: str
    path: str
    sha256: str
    tokens: int
    written: bool  # False when an identical file already existed


@dataclass(frozen=True)
class FailedToolResult:
    message_id: str | None
    tool_call_id: str
    tool_name: str
    path: str
    error: str


@dataclass(frozen=True)
class CompactionResult:
    messages: list[BaseMessage]
    saved: tuple[SavedToolResult, ...] = ()
    failed: tuple[FailedToolResult, ...] = ()
    truncated_tool_calls: int = 0
    media: tuple[SavedMedia, ...] = ()
    media_failed: tuple[FailedMedia, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.saved or self.truncated_tool_calls or self.media)


_text_tokens = LRU(CACHE_SIZE)  # (profile, sha256) -> estimate_text of the full text
_receipts = LRU(CACHE_SIZE)  # (profile, sha256, tool name, preview limit) -> (receipt text, its tokens)


def clear_caches() -> None:
    _text_tokens.clear()
    _receipts.clear()


# --- content, hashes, names --------------------------------------------------------------------


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def sha256_text(text: str) -> str:
    return hashlib.sha256(_encode(text)).hexdigest()


def _plain_text(block: Any) -> str | None:
    """A block's text when the text is all it holds (a string or ``{"type": "text", "text": ...}``)."""
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.keys() == {"type", "text"} and block["type"] == "text":
        return block["text"] if isinstance(block["text"], str) else None
    return None


def tool_result_text(content: str | list[Any]) -> str:
    """The exact text saved for a tool result: the string, the joined text blocks, or JSON of the blocks.

    Blocks are joined only when that loses nothing; images, and text blocks carrying more than their
    text (annotations, citations, ids), are saved whole as JSON so they stay recoverable.
    """
    if isinstance(content, str):
        return content
    texts = [_plain_text(block) for block in content]
    if any(text is None for text in texts):
        return json.dumps(content, ensure_ascii=False, default=str)
    return "\n".join(texts)  # type: ignore[arg-type]


def safe_tool_file_name(tool_name: str | None) -> str:
    """``tool_name`` reduced to ``[A-Za-z0-9_.-]`` (no dot runs, no leading/trailing ``.-``), else ``tool-result``."""
    reduced = re.sub(r"[^A-Za-z0-9_.-]+", "-", (tool_name or "").strip())
    reduced = re.sub(r"\.{2,}", ".", reduced)[:MAX_TOOL_FILE_NAME_CHARS].strip(".-")
    return reduced or FALLBACK_TOOL_FILE_NAME


def tool_result_path(tool_name: str | None, sha256: str) -> str:
    return TOOL_RESULT_FILE_TEMPLATE.format(
        directory=LARGE_TOOL_RESULTS_DIR,
        tool=safe_tool_file_name(tool_name),
        digest=sha256[:TOOL_RESULT_DIGEST_CHARS],
    )


def text_tokens(text: str, *, sha256: str, profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """``estimate_text(text)``, cached by content hash."""
    key = (profile, sha256)
    cached = _text_tokens.get(key)
    if cached is None:
        cached = estimate_text(text, profile)
        _text_tokens.put(key, cached)
    return cached


# --- receipts ----------------------------------------------------------------------------------


def is_saved(message: BaseMessage) -> bool:
    return message.additional_kwargs.get(TOOL_RESULT_SAVED_KEY) is True


def should_offload(tokens: int, *, limit_tokens: int) -> bool:
    """Offload when the estimate exceeds the limit; a limit of 0 (or less) offloads every tool result."""
    return limit_tokens <= 0 or tokens > limit_tokens


def offload_tool_message(
    message: ToolMessage,
    *,
    store: ResultStore | None,
    preview_tokens: int,
    tool_name: str | None = None,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> tuple[ToolMessage, SavedToolResult]:
    """Save ``message``'s full text and return its receipt (same id, tool_call_id) and the record.

    Raises ``OffloadError`` when the file cannot be written; an identical existing file is not rewritten.
    """
    text = tool_result_text(message.content)
    return _offload(
        message,
        text=text,
        digest=sha256_text(text),
        store=store,
        preview_tokens=preview_tokens,
        tool_name=tool_name or message.name,
        profile=profile,
    )


def _offload(
    message: ToolMessage,
    *,
    text: str,
    digest: str,
    store: ResultStore | None,
    preview_tokens: int,
    tool_name: str | None,
    profile: TokenProfile,
    tokens: int | None = None,
) -> tuple[ToolMessage, SavedToolResult]:
    name = tool_name
    path = tool_result_path(name, digest)
    if tokens is None:
        tokens = text_tokens(text, sha256=digest, profile=profile)
    written = _write_once(store, path, text)
    receipt, _size = _receipt(
        text, digest=digest, name=name, preview_tokens=preview_tokens, profile=profile, tokens=tokens
    )
    replaced = message.model_copy(
        update={
            "content": receipt,
            "additional_kwargs": {**message.additional_kwargs, TOOL_RESULT_SAVED_KEY: True},
            "response_metadata": without_estimate(message.response_metadata),
        }
    )
    saved = SavedToolResult(
        message.id, message.tool_call_id, name or RECEIPT_UNKNOWN_TOOL, path, digest, tokens, written
    )
    return replaced, saved


def _receipt(
    text: str, *, digest: str, name: str | None, preview_tokens: int, profile: TokenProfile, tokens: int
) -> tuple[str, int]:
    """The receipt that stands for ``text`` in the model's view and its tokens (cached: the same result,
    the same bytes, estimated once)."""
    key = (profile, digest, name, preview_tokens)
    cached = _receipts.get(key)
    if cached is None:
        preview = tool_result_preview(
            text, limit_tokens=preview_tokens, tool_name=name, profile=profile, text_tokens=tokens
        )
        receipt = render_receipt(
            tool_name=name,
            tokens=tokens,
            sha256=digest,
            path=tool_result_path(name, digest),
            preview=preview.text,
            omitted_chars=preview.omitted_chars,
        )
        cached = (receipt, estimate_text(receipt, profile))
        _receipts.put(key, cached)
    return cached


def receipt_is_smaller(
    text: str, *, digest: str, name: str | None, preview_tokens: int, profile: TokenProfile, tokens: int
) -> bool:
    """Compaction never makes the view bigger: a result just over the limit whose receipt (header plus
    preview) would take as many tokens as the result itself stays whole. A limit of 0 is the admin's
    "offload every tool result" (SPEC) and is honoured as asked."""
    if preview_tokens <= 0:
        return True
    _text, size = _receipt(
        text, digest=digest, name=name, preview_tokens=preview_tokens, profile=profile, tokens=tokens
    )
    return size < tokens


def _write_once(store: ResultStore | None, path: str, text: str) -> bool:
    if store is None:
        raise OffloadError(path, "no result store is available")
    try:
        if store.exists(path):
            return False  # same name means same content hash
        store.write_text(path, text)
    except Exception as exc:  # any store failure keeps the message whole; it is reported, not raised further
        raise OffloadError(path, f"{type(exc).__name__}: {exc}") from exc
    return True


# --- the whole pass ----------------------------------------------------------------------------


def trailing_tool_batch_start(messages: Sequence[BaseMessage]) -> int:
    """Index where the trailing run of ToolMessages begins (``len(messages)`` when there is none)."""
    index = len(messages)
    while index > 0 and isinstance(messages[index - 1], ToolMessage):
        index -= 1
    return index


def seen_until(messages: Sequence[BaseMessage]) -> int:
    """Index just after the latest AIMessage: what comes later the model has not answered yet."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            return index + 1
    return 0


def compact_messages(
    messages: Sequence[BaseMessage],
    *,
    config: CompressionConfig,
    store: ResultStore | None,
    profile: TokenProfile | None = None,
) -> CompactionResult:
    """A compacted copy of ``messages``: same order, ids and tool_call_ids.

    ``result.messages`` is ``messages`` itself when nothing changed. Failed writes leave the message
    whole and are listed in ``result.failed``. A ``read_file`` result the model has not seen yet (in
    the trailing tool batch) is left whole: it is the model reading a saved file back, and replacing
    it by another receipt would send it round in circles. Once answered, it is compacted like any other.
    Inline media (``data:`` URIs, base64 blocks) of every message the model has answered are saved to
    ``outputs/media/`` and replaced by receipts; the unanswered ones keep their media this once.
    """
    profile = profile or config.profile
    limit = config.tool_result_token_limit
    unseen_from = trailing_tool_batch_start(messages)
    answered = seen_until(messages)
    call_names: dict[str, str] = {}
    out: list[BaseMessage] = []
    saved: list[SavedToolResult] = []
    failed: list[FailedToolResult] = []
    media: list[SavedMedia] = []
    media_failed: list[FailedMedia] = []
    truncated = 0
    for index, message in enumerate(messages):
        if index < answered:
            message, done, missed = offload_message_media(message, store=store)
            media += done
            media_failed += missed
        new = message
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id"):
                    call_names[call["id"]] = call.get("name") or ""
            new, count = truncate_tool_call_args(message, max_length=config.tool_arg_max_length)
            truncated += count
        elif isinstance(message, ToolMessage) and not is_saved(message):
            name = message.name or call_names.get(message.tool_call_id) or None
            if index >= unseen_from and name in RECOVERY_TOOLS:
                out.append(new)
                continue
            tokens = stored_text_estimate(message, profile)
            text = tool_result_text(message.content) if tokens is None else None
            digest = sha256_text(text) if text is not None else None
            if tokens is None:
                tokens = text_tokens(text, sha256=digest, profile=profile)
            if should_offload(tokens, limit_tokens=limit):
                if text is None:
                    text = tool_result_text(message.content)
                    digest = sha256_text(text)
                if not receipt_is_smaller(
                    text, digest=digest, name=name, preview_tokens=limit, profile=profile, tokens=tokens
                ):
                    out.append(new)
                    continue
                try:
                    new, record = _offload(
                        message,
                        text=text,
                        digest=digest,
                        tokens=tokens,
                        store=store,
                        preview_tokens=limit,
                        tool_name=name,
                        profile=profile,
                    )
                    saved.append(record)
                except OffloadError as exc:
                    failed.append(
                        FailedToolResult(
                            message.id, message.tool_call_id, name or RECEIPT_UNKNOWN_TOOL, exc.path, str(exc)
                        )
                    )
        out.append(new)
    if not saved and not truncated and not media:
        return CompactionResult(
            messages if isinstance(messages, list) else list(messages),
            failed=tuple(failed),
            media_failed=tuple(media_failed),
        )
    return CompactionResult(out, tuple(saved), tuple(failed), truncated, tuple(media), tuple(media_failed))

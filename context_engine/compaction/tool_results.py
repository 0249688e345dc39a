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


@dataclass(frozen=True)
class _Result:
    """A tool result as compaction reads it: the text the model would see (inline media already behind
    their own receipts), its size, and its tool; and what is saved: the result's original text, its
    content hash and size (the same unless media were taken out of it)."""

    text: str
    digest: str
    tokens: int
    name: str | None
    original: str | None = None  # the result as the tool returned it, when ``text`` differs
    original_tokens: int | None = None

    @property
    def saved(self) -> str:
        return self.text if self.original is None else self.original

    @property
    def saved_tokens(self) -> int:
        return self.tokens if self.original_tokens is None else self.original_tokens


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
    digest = sha256_text(text)
    result = _Result(
        text, digest, text_tokens(text, sha256=digest, profile=profile), tool_name or message.name
    )
    return _offload(message, result, store=store, preview_tokens=preview_tokens, profile=profile)


def _offload(
    message: ToolMessage,
    result: _Result,
    *,
    store: ResultStore | None,
    preview_tokens: int,
    profile: TokenProfile,
) -> tuple[ToolMessage, SavedToolResult]:
    path = tool_result_path(result.name, result.digest)
    written = _write_once(store, path, result.saved)
    receipt, _size = _receipt(result, preview_tokens=preview_tokens, profile=profile)
    replaced = message.model_copy(
        update={
            "content": receipt,
            "additional_kwargs": {**message.additional_kwargs, TOOL_RESULT_SAVED_KEY: True},
            "response_metadata": without_estimate(message.response_metadata),
        }
    )
    name = result.name or RECEIPT_UNKNOWN_TOOL
    saved = SavedToolResult(
        message.id, message.tool_call_id, name, path, result.digest, result.saved_tokens, written
    )
    return replaced, saved


def _receipt(result: _Result, *, preview_tokens: int, profile: TokenProfile) -> tuple[str, int]:
    """The receipt that stands for ``result`` in the model's view and its tokens (cached: the same
    result, the same bytes, estimated once)."""
    key = (profile, result.digest, result.name, preview_tokens)
    cached = _receipts.get(key)
    if cached is None:
        preview = tool_result_preview(
            result.text,
            limit_tokens=preview_tokens,
            tool_name=result.name,
            profile=profile,
            text_tokens=result.tokens,
        )
        receipt = render_receipt(
            tool_name=result.name,
            tokens=result.saved_tokens,
            sha256=result.digest,
            path=tool_result_path(result.name, result.digest),
            preview=preview.text,
            omitted_chars=preview.omitted_chars,
        )
        cached = (receipt, estimate_text(receipt, profile))
        _receipts.put(key, cached)
    return cached


def _receipt_is_smaller(result: _Result, *, preview_tokens: int, profile: TokenProfile) -> bool:
    """Compaction never makes the view bigger: a result just over the limit whose receipt (header plus
    preview) would take as many tokens as the result itself stays whole. A limit of 0 is the admin's
    "offload every tool result" (SPEC) and is honoured as asked."""
    if preview_tokens <= 0:
        return True
    _text, size = _receipt(result, preview_tokens=preview_tokens, profile=profile)
    return size < result.tokens


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
    the trailing tool batch) is left whole within its share of ``T``: it is the model
    reading a saved file back a page at a time, and replacing it by another receipt would send it round
    in circles. Past its share (``CompressionConfig.fresh_result_cap``) it is saved like any other, so any tool result fits; once answered, it is
    compacted like any other.
    Inline media (``data:`` URIs, base64 blocks) of every message the model has answered are saved to
    ``outputs/media/`` and replaced by receipts; the unanswered ones keep their media this once.
    """
    compaction = _Compaction(config=config, store=store, profile=profile or config.profile)
    unseen_from = trailing_tool_batch_start(messages)
    answered = seen_until(messages)
    out = [
        compaction.message(m, answered=i < answered, unseen=i >= unseen_from) for i, m in enumerate(messages)
    ]
    return compaction.result(messages, out)


class _Compaction:
    """One pass of ``compact_messages``: what it saved, failed to save and truncated so far."""

    def __init__(
        self, *, config: CompressionConfig, store: ResultStore | None, profile: TokenProfile
    ) -> None:
        self.config, self.store, self.profile = config, store, profile
        self.call_names: dict[str, str] = {}
        self.saved: list[SavedToolResult] = []
        self.failed: list[FailedToolResult] = []
        self.media: list[SavedMedia] = []
        self.media_failed: list[FailedMedia] = []
        self.truncated = 0
        self.fresh_kept = 0  # tokens of the fresh read-back results kept whole so far

    def message(self, message: BaseMessage, *, answered: bool, unseen: bool) -> BaseMessage:
        original = message
        if answered:
            message, done, missed = offload_message_media(message, store=self.store)
            self.media += done
            self.media_failed += missed
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call_id := call.get("id"):
                    self.call_names[call_id] = call.get("name") or ""
            new, count = truncate_tool_call_args(message, max_length=self.config.tool_arg_max_length)
            self.truncated += count
            return new
        if isinstance(message, ToolMessage) and not is_saved(message):
            name = message.name or self.call_names.get(message.tool_call_id) or None
            if not (unseen and name in RECOVERY_TOOLS and self.fresh_fits(message)):
                return self.tool_result(message, name, original=original)
        return message

    def fresh_fits(self, message: ToolMessage) -> bool:
        """Does this fresh read-back result stay whole: within its share and its batch's?"""
        tokens, _read_once = self.tokens(message)
        cap, batch_cap = self.config.fresh_result_cap, self.config.fresh_batch_cap
        if tokens > cap or self.fresh_kept + tokens > batch_cap:
            return False
        self.fresh_kept += tokens
        return True

    def tokens(self, message: ToolMessage) -> tuple[int, tuple[str, str] | None]:
        """A tool result's estimate and, when it had to be read for that, its text and hash."""
        tokens = stored_text_estimate(message, self.profile)
        if tokens is not None:
            return tokens, None
        read = _read(message)
        return text_tokens(read[0], sha256=read[1], profile=self.profile), read

    def tool_result(self, message: ToolMessage, name: str | None, *, original: BaseMessage) -> BaseMessage:
        """The receipt for a tool result over the limit (when it is smaller), else the result itself.
        ``original``: the result before its inline media were saved; the file holds it byte for byte."""
        limit, profile = self.config.tool_result_token_limit, self.profile
        tokens, read = self.tokens(message)  # the text and its hash, read once when needed
        if not should_offload(tokens, limit_tokens=limit):
            return message
        text, digest = read or _read(message)
        result = _Result(text, digest, tokens, name)
        if original is not message and isinstance(original, ToolMessage):
            saved, saved_digest = _read(original)
            saved_tokens = text_tokens(saved, sha256=saved_digest, profile=profile)
            result = _Result(text, saved_digest, tokens, name, saved, saved_tokens)
        if not _receipt_is_smaller(result, preview_tokens=limit, profile=profile):
            return message
        try:
            new, record = _offload(message, result, store=self.store, preview_tokens=limit, profile=profile)
        except OffloadError as exc:
            tool = name or RECEIPT_UNKNOWN_TOOL
            self.failed.append(FailedToolResult(message.id, message.tool_call_id, tool, exc.path, str(exc)))
            return message
        self.saved.append(record)
        return new

    def result(self, messages: Sequence[BaseMessage], out: list[BaseMessage]) -> CompactionResult:
        failed, media_failed = tuple(self.failed), tuple(self.media_failed)
        if not self.saved and not self.truncated and not self.media:
            unchanged = messages if isinstance(messages, list) else list(messages)
            return CompactionResult(unchanged, failed=failed, media_failed=media_failed)
        return CompactionResult(
            out, tuple(self.saved), failed, self.truncated, tuple(self.media), media_failed
        )


def _read(message: ToolMessage) -> tuple[str, str]:
    text = tool_result_text(message.content)
    return text, sha256_text(text)

"""Script-aware token estimation (SPEC §4).

The estimate is a weighted sum of character-class counts taken in one linear pass of a few
compiled regexes: CJK characters, full-width punctuation, other non-ASCII characters, Latin words
(and their letters), digits (and digit groups), ASCII punctuation/JSON symbols (and their runs),
newlines, indentation runs, and long random-looking strings (hashes, base64, hex ids), which
tokenize far worse than words. The weights form a :class:`TokenProfile` per tokenizer family; the
profile is chosen from the agent's model name (:func:`profile_for_model`), unknown models get the
conservative :data:`DEFAULT_PROFILE`, which errs towards more tokens so compression triggers early.

Weights are fitted by ``bench/fit_estimator.py`` on the FIT half of the real traces and checked by
``bench/estimator_accuracy.py`` on the CHECK half (never the same text).

Per-message estimates are cached by (profile, content hash) in a bounded LRU, so a message that did
not change is never re-estimated across model calls.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

ESTIMATOR_NAME = "script-aware-v1"


@dataclass(frozen=True)
class TokenProfile:
    """Per-class weights (tokens per unit) for one tokenizer family."""

    name: str
    cjk: float  # per CJK ideograph / kana / hangul character
    cjk_punct: float  # per full-width / CJK punctuation character
    other: float  # per other non-ASCII character (accented, Cyrillic, emoji, ...)
    word: float  # per Latin letter run
    word_char: float  # per Latin letter beyond the first in a run
    digit: float  # per digit
    digit_group: float  # per group of up to three digits (cl100k merges digits in threes)
    punct: float  # per ASCII punctuation / JSON symbol character
    punct_run: float  # per run of ASCII punctuation
    newline: float  # per newline
    space_run: float  # per run of 2+ spaces/tabs (indentation)
    random_char: float  # per character of a long random-looking string (hash, base64, hex id)
    message_overhead: float = 4.0  # role markers and separators per message
    reply_overhead: float = 3.0  # priming of the assistant reply, once per request
    tool_call_overhead: float = 4.0  # per tool call, besides its name and JSON arguments
    tool_overhead: float = 8.0  # per tool schema, besides its JSON
    image: int = 1000  # fixed cost per image block


# Rough first weights; replaced by fitted constants (see bench/fit_estimator.py).
_CL100K = TokenProfile(
    name="cl100k",
    cjk=1.2,
    cjk_punct=1.0,
    other=1.0,
    word=1.0,
    word_char=0.04,
    digit=0.0,
    digit_group=1.0,
    punct=0.3,
    punct_run=0.7,
    newline=0.6,
    space_run=1.0,
    random_char=0.45,
    image=765,
)
_QWEN = TokenProfile(
    name="qwen",
    cjk=0.7,
    cjk_punct=1.0,
    other=1.0,
    word=1.0,
    word_char=0.04,
    digit=1.0,
    digit_group=0.0,
    punct=0.3,
    punct_run=0.7,
    newline=0.6,
    space_run=1.0,
    random_char=0.45,
    image=1000,
)
_O200K = TokenProfile(**{**_CL100K.__dict__, "name": "o200k"})


def _max_profile(name: str, *profiles: TokenProfile) -> TokenProfile:
    fields = {k: max(getattr(p, k) for p in profiles) for k in _CL100K.__dict__ if k != "name"}
    return TokenProfile(name=name, **fields)


DEFAULT_PROFILE = _max_profile("conservative", _CL100K, _O200K, _QWEN)

PROFILES: dict[str, TokenProfile] = {
    p.name: p for p in (_CL100K, _O200K, _QWEN, DEFAULT_PROFILE)
}

# Known-models table: (name prefix, profile name). First match wins; unknown models -> DEFAULT_PROFILE.
_MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k"),
    ("chatgpt-4o", "o200k"),
    ("gpt-4.1", "o200k"),
    ("gpt-4.5", "o200k"),
    ("gpt-5", "o200k"),
    ("gpt-oss", "o200k"),
    ("o1", "o200k"),
    ("o3", "o200k"),
    ("o4", "o200k"),
    ("gpt-4", "cl100k"),
    ("gpt-3.5", "cl100k"),
    ("text-embedding-3", "cl100k"),
    ("text-embedding-ada", "cl100k"),
    ("qwen", "qwen"),
    ("qwq", "qwen"),
    ("qvq", "qwen"),
    ("deepseek", "qwen"),
)


def profile_for_model(model_name: str | None) -> TokenProfile:
    """The profile for a model name (``gpt-4o``, ``openai:gpt-4o``, ``Qwen/Qwen2.5-7B``...)."""
    if not model_name:
        return DEFAULT_PROFILE
    name = model_name.strip().lower()
    for sep in (":", "/"):
        if sep in name:
            name = name.rsplit(sep, 1)[1]
    for prefix, profile_name in _MODEL_PREFIXES:
        if name.startswith(prefix):
            return PROFILES[profile_name]
    return DEFAULT_PROFILE


# ---------------------------------------------------------------------------------------------
# Text

_CJK = "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
_CJK_PUNCT = "\u3000-\u303f\ufe30-\ufe4f\uff00-\uffef"
_CJK_RE = re.compile(f"[{_CJK}]+")
_CJK_PUNCT_RE = re.compile(f"[{_CJK_PUNCT}]+")
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")
# Long random-looking strings: hex ids (8+ chars with a digit), base64-ish runs (16+ chars mixing
# letters and digits). Removed before the word/digit counts.
_RANDOM_RE = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}"
    r"|(?=[A-Za-z0-9+/]*[0-9])(?=[A-Za-z0-9+/]*[A-Za-z])[A-Za-z0-9+/]{16,}={0,2}"
    r")(?![A-Za-z0-9])"
)
_WORD_RE = re.compile(r"[A-Za-z]+")
_DIGIT_RE = re.compile(r"[0-9]+")
_PUNCT_RE = re.compile(r"[!-/:-@\[-`{-~]+")
_SPACE_RUN_RE = re.compile(r"[ \t]{2,}")


def _sum_len(matches: list[str]) -> int:
    return sum(map(len, matches))


def text_features(text: str) -> dict[str, int]:
    """Character-class counts of ``text`` (the estimator's features)."""
    if text.isascii():
        cjk = cjk_punct = other = 0
    else:
        cjk = _sum_len(_CJK_RE.findall(text))
        cjk_punct = _sum_len(_CJK_PUNCT_RE.findall(text))
        other = _sum_len(_NON_ASCII_RE.findall(text)) - cjk - cjk_punct
    randoms = _RANDOM_RE.findall(text)
    random_chars = _sum_len(randoms)
    if randoms:
        text = _RANDOM_RE.sub(" ", text)
    words = _WORD_RE.findall(text)
    digits = _DIGIT_RE.findall(text)
    puncts = _PUNCT_RE.findall(text)
    return {
        "cjk": cjk,
        "cjk_punct": cjk_punct,
        "other": other,
        "word": len(words),
        "word_char": _sum_len(words) - len(words),
        "digit": _sum_len(digits),
        "digit_group": sum((len(d) + 2) // 3 for d in digits),
        "punct": _sum_len(puncts),
        "punct_run": len(puncts),
        "newline": text.count("\n"),
        "space_run": len(_SPACE_RUN_RE.findall(text)),
        "random_char": random_chars,
    }


FEATURES: tuple[str, ...] = (
    "cjk",
    "cjk_punct",
    "other",
    "word",
    "word_char",
    "digit",
    "digit_group",
    "punct",
    "punct_run",
    "newline",
    "space_run",
    "random_char",
)


def estimate_text(text: str, profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of ``text`` under ``profile``; 0 for empty text."""
    if not text:
        return 0
    feats = text_features(text)
    total = 0.0
    for key in FEATURES:
        n = feats[key]
        if n:
            total += n * getattr(profile, key)
    return max(1, math.ceil(total))


# ---------------------------------------------------------------------------------------------
# Messages


_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _content_tokens(content: Any, profile: TokenProfile) -> float:
    if isinstance(content, str):
        return estimate_text(content, profile)
    total = 0.0
    for block in content or ():
        if isinstance(block, str):
            total += estimate_text(block, profile)
        elif isinstance(block, dict):
            btype = block.get("type")
            if btype in _IMAGE_TYPES or block.get("source_type") and btype in (None, "image"):
                total += profile.image
            elif btype == "text" and isinstance(block.get("text"), str):
                total += estimate_text(block["text"], profile)
            elif isinstance(block.get("text"), str) and len(block) <= 3:
                total += estimate_text(block["text"], profile)
            else:
                total += estimate_text(_dumps(block), profile)
        else:
            total += estimate_text(str(block), profile)
    return total


def _message_key(message: BaseMessage) -> str:
    parts = [
        message.type,
        message.content if isinstance(message.content, str) else _dumps(message.content),
        message.name or "",
        getattr(message, "tool_call_id", None) or "",
    ]
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        parts.append(_dumps([(tc.get("name"), tc.get("args")) for tc in tool_calls]))
    invalid = getattr(message, "invalid_tool_calls", None)
    if invalid:
        parts.append(_dumps([(tc.get("name"), tc.get("args")) for tc in invalid]))
    legacy = message.additional_kwargs.get("function_call") if message.additional_kwargs else None
    if legacy:
        parts.append(_dumps(legacy))
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _estimate_message_uncached(message: BaseMessage, profile: TokenProfile) -> int:
    total = profile.message_overhead + _content_tokens(message.content, profile)
    total += estimate_text(message.type, profile)
    if message.name:
        total += estimate_text(message.name, profile) + 1
    tool_call_id = getattr(message, "tool_call_id", None)
    if tool_call_id:
        total += estimate_text(str(tool_call_id), profile)
    for tc in getattr(message, "tool_calls", None) or ():
        total += profile.tool_call_overhead + estimate_text(tc.get("name") or "", profile)
        total += estimate_text(_dumps(tc.get("args") or {}), profile)
        if tc.get("id"):
            total += estimate_text(str(tc["id"]), profile)
    for tc in getattr(message, "invalid_tool_calls", None) or ():
        total += profile.tool_call_overhead + estimate_text(tc.get("name") or "", profile)
        total += estimate_text(str(tc.get("args") or ""), profile)
    legacy = message.additional_kwargs.get("function_call") if message.additional_kwargs else None
    if legacy:
        total += profile.tool_call_overhead + estimate_text(_dumps(legacy), profile)
    return math.ceil(total)


class _LRU:
    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> Any:
        with self._lock:
            try:
                value = self._data[key]
            except KeyError:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


MESSAGE_CACHE_SIZE = 65536
_message_cache = _LRU(MESSAGE_CACHE_SIZE)
_tool_cache = _LRU(1024)


def cache_info() -> dict[str, int]:
    """Hits, misses and size of the per-message estimate cache."""
    return {"hits": _message_cache.hits, "misses": _message_cache.misses, "size": len(_message_cache)}


def clear_cache() -> None:
    _message_cache.clear()
    _tool_cache.clear()


def estimate_message(message: BaseMessage, profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of one message: content, role, name, tool calls, tool_call_id, overhead."""
    key = (profile, _message_key(message))
    cached = _message_cache.get(key)
    if cached is not None:
        return cached
    value = _estimate_message_uncached(message, profile)
    _message_cache.put(key, value)
    return value


# ---------------------------------------------------------------------------------------------
# Tools and whole requests


def _tool_schema(tool: Any) -> dict:
    if isinstance(tool, dict) and ("function" in tool or "name" in tool and "parameters" in tool):
        return tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)


def estimate_tool(tool: Any, profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of one tool's JSON schema (BaseTool, OpenAI tool dict, or anything
    ``convert_to_openai_tool`` accepts)."""
    if isinstance(tool, dict):
        return math.ceil(profile.tool_overhead + estimate_text(_dumps(_tool_schema(tool)), profile))
    key = (profile, id(tool))
    cached = _tool_cache.get(key)
    # The cached entry holds the tool itself, so its id cannot be reused while the entry lives.
    if cached is not None and cached[0] is tool and cached[1] == getattr(tool, "description", None):
        return cached[2]
    value = math.ceil(profile.tool_overhead + estimate_text(_dumps(_tool_schema(tool)), profile))
    _tool_cache.put(key, (tool, getattr(tool, "description", None), value))
    return value


def estimate_tools(tools: Sequence[Any], profile: TokenProfile = DEFAULT_PROFILE) -> int:
    """Estimated tokens of the tool schemas sent with a request."""
    return sum(estimate_tool(t, profile) for t in tools or ())


def estimate_messages(
    messages: Sequence[BaseMessage],
    *,
    system: str | SystemMessage | None = None,
    tools: Sequence[Any] = (),
    profile: TokenProfile = DEFAULT_PROFILE,
) -> int:
    """Estimated prompt tokens of a request: system prompt + tool schemas + messages + reply priming."""
    total = 0
    if isinstance(system, str):
        if system:
            total += estimate_message(SystemMessage(content=system), profile)
    elif system is not None:
        total += estimate_message(system, profile)
    total += estimate_tools(tools, profile)
    for message in messages:
        total += estimate_message(message, profile)
    return total + math.ceil(profile.reply_overhead) if (total or messages) else 0

"""Previews of offloaded tool results: generic HEAD/MIDDLE/TAIL and structured ``query_kb``/``web_search``.

Budgets are in tokens, measured with the same estimator as the trigger (SPEC §4, §6): a preview
built for ``limit_tokens`` always satisfies ``estimate_text(preview, profile) <= limit_tokens``.
To stay linear, a character budget is derived from the text's own tokens-per-character ratio and
the result is then verified and shrunk until it fits.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from context_engine.formats import (
    PREVIEW_CLIP_ELLIPSIS,
    PREVIEW_HEAD_LABEL,
    PREVIEW_MIDDLE_LABEL,
    PREVIEW_TAIL_LABEL,
    STRUCTURED_KIND_KB,
    STRUCTURED_KIND_WEB,
)
from context_engine.tokens.messages import DEFAULT_PROFILE, TokenProfile, estimate_text

STRUCTURED_TOOL_KINDS = {"query_kb": STRUCTURED_KIND_KB, "web_search": STRUCTURED_KIND_WEB}
HEADER_FIELDS = ("kb_id", "query", "response_time", "error")
KB_RECORD_FIELDS = ("id", "kb_id", "file_id", "title", "source", "score", "distance")
KB_METADATA_FIELDS = (
    "source",
    "filename",
    "title",
    "chunk_index",
    "score",
    "rerank_score",
    "hybrid_score",
    "graph_score",
    "distance",
)
WEB_RECORD_FIELDS = ("title", "url", "site_name", "publish_time", "score")
# Values the model cites by: kept verbatim, never clipped.
IDENTITY_FIELDS = frozenset({"id", "kb_id", "file_id", "url"})
CONTENT_KEYS = ("content", "text", "snippet", "summary")
MAX_RECORDS = 8
MAX_FIELD_CHARS = 240
MIN_CONTENT_PREVIEW_CHARS = 16
_LABELS_LEN = len(PREVIEW_HEAD_LABEL) + len(PREVIEW_MIDDLE_LABEL) + len(PREVIEW_TAIL_LABEL)
_MAX_FIT_ROUNDS = 48
_DENSITY_SAMPLE_CHARS = 4000


class Preview(NamedTuple):
    text: str
    omitted_chars: int  # characters of the full text not shown in the preview


# --- character-level building blocks ----------------------------------------------------------


def clip_middle(value: str, max_chars: int) -> str:
    """``value`` shortened to ``max_chars`` as head…tail (3:1), or as a plain head when tiny."""
    if max_chars <= 0:
        return ""
    if len(value) <= max_chars:
        return value
    if max_chars <= 24:
        return value[:max_chars]
    head = ((max_chars - 1) * 3) // 4
    tail = max_chars - 1 - head
    return value[:head] + PREVIEW_CLIP_ELLIPSIS + value[-tail:]


def generic_preview_chars(text: str, max_chars: int) -> str:
    """HEAD/MIDDLE/TAIL slices of ``text`` in a 2:1:2 split, at most ``max_chars`` characters."""
    if max_chars <= 0:
        return ""
    if len(text) <= max_chars:
        return text
    budget = max_chars - _LABELS_LEN
    if budget <= 0:
        return text[:max_chars]
    head = budget * 2 // 5
    middle = budget // 5
    tail = budget - head - middle
    middle_start = max((len(text) - middle) // 2, head)
    return (
        PREVIEW_HEAD_LABEL
        + text[:head]
        + PREVIEW_MIDDLE_LABEL
        + text[middle_start : middle_start + middle]
        + PREVIEW_TAIL_LABEL
        + text[-tail:]
    )


def _chars_per_token(text: str, profile: TokenProfile) -> float:
    """The text's density, sampled at both ends so that huge strings cost O(sample)."""
    if len(text) > 2 * _DENSITY_SAMPLE_CHARS:
        text = text[:_DENSITY_SAMPLE_CHARS] + text[-_DENSITY_SAMPLE_CHARS:]
    tokens = estimate_text(text, profile)
    return len(text) / tokens if tokens else 4.0


def _shrink(current: int, limit: int, got: int) -> int:
    """A smaller character budget after a candidate measured ``got`` tokens against ``limit``."""
    scaled = int(current * limit / got * 0.95) if got else current - 1
    return max(min(scaled, current - 1), 0)


# --- generic preview ---------------------------------------------------------------------------


def generic_preview(
    text: str,
    *,
    limit_tokens: int,
    profile: TokenProfile = DEFAULT_PROFILE,
    text_tokens: int | None = None,
) -> str:
    """HEAD/MIDDLE/TAIL preview of ``text`` fitting ``limit_tokens``; the text itself if it fits."""
    if limit_tokens <= 0 or not text:
        return ""
    total = estimate_text(text, profile) if text_tokens is None else text_tokens
    if total <= limit_tokens:
        return text
    max_chars = min(len(text) - 1, math.floor(limit_tokens * _chars_per_token(text, profile)))
    for _ in range(_MAX_FIT_ROUNDS):
        if max_chars <= 0:
            return ""
        candidate = generic_preview_chars(text, max_chars)
        got = estimate_text(candidate, profile)
        if got <= limit_tokens:
            return candidate
        max_chars = _shrink(max_chars, limit_tokens, got)
    return ""


# --- structured preview ------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def parse_search_payload(text: str) -> dict[str, Any] | None:
    """The ``{"results": [...], ...}`` object of a search tool result, or None if it is not one."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, list):
        data = {"results": data}
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None
    return data


def _scalar(value: Any, *, clip: bool) -> Any:
    """A JSON scalar safe to re-encode: strings clipped (unless identity), containers stringified."""
    if isinstance(value, bool | int) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if not isinstance(value, str):
        try:
            value = _dumps(value)
        except (TypeError, ValueError, RecursionError):
            value = str(value)
    return clip_middle(value, MAX_FIELD_CHARS) if clip else value


def _pick(source: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {
        key: _scalar(source[key], clip=key not in IDENTITY_FIELDS)
        for key in fields
        if key in source and source[key] is not None
    }


def _record_body(result: dict[str, Any]) -> str | None:
    for source in (result, result.get("metadata")):
        if isinstance(source, dict):
            for key in CONTENT_KEYS:
                body = source.get(key)
                if isinstance(body, str) and body:
                    return body
    return None


def _record(kind: str, result: Any) -> tuple[dict[str, Any], str | None]:
    if not isinstance(result, dict):
        return {"value": _scalar(result, clip=True)}, None
    if kind == STRUCTURED_KIND_KB:
        record = _pick(result, KB_RECORD_FIELDS)
        metadata = result.get("metadata")
        if isinstance(metadata, dict):
            kept = _pick(metadata, KB_METADATA_FIELDS)
            if kept:
                record["metadata"] = kept
    else:
        record = _pick(result, WEB_RECORD_FIELDS)
    return record, _record_body(result)


def _encode(header: dict[str, Any], records: list[dict[str, Any]], total: int) -> str:
    payload: dict[str, Any] = {**header, "results": records}
    if total > len(records):
        payload["omitted_results"] = total - len(records)
    return _dumps(payload)


@dataclass(frozen=True)
class _SearchFit:
    """What every candidate encoding of one search result shares: its header, its result count and
    the budget it must fit."""

    header: dict[str, Any]
    total: int
    limit_tokens: int
    profile: TokenProfile

    def encode(self, records: list[dict[str, Any]]) -> str:
        return _encode(self.header, records, self.total)

    def fits(self, encoded: str) -> bool:
        return estimate_text(encoded, self.profile) <= self.limit_tokens


def _header(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    header: dict[str, Any] = {"kind": kind, "result_count": len(data["results"])}
    for key in HEADER_FIELDS:
        if data.get(key) is not None:
            header[key] = _scalar(data[key], clip=True)
    return header


def _records_that_fit(fit: _SearchFit, records: list[dict[str, Any]]) -> int:
    """How many of the first ``records`` fit without content previews (records drop from the end)."""
    count = len(records)
    while count and not fit.fits(fit.encode(records[:count])):
        count -= 1
    return count


def _header_only(fit: _SearchFit, kind: str) -> str | None:
    """The header with no records, else the bare kind and count, else None when neither fits."""
    for header in (fit.header, {"kind": kind, "result_count": fit.total}):
        encoded = _encode(header, [], fit.total)
        if fit.fits(encoded):
            return encoded
    return None


def _with_content_previews(fit: _SearchFit, picked: list[tuple[dict[str, Any], str | None]]) -> str:
    """The records with a ``content_preview`` each, shortened together until the whole fits."""
    records = [dict(record) for record, _ in picked]
    bodies = [body for _, body in picked]
    base = fit.encode(records)
    base_tokens = estimate_text(base, fit.profile)
    spare_tokens = fit.limit_tokens - base_tokens
    per_record_tokens = spare_tokens // len(records) - 6  # 6: the "content_preview" key and quotes
    lengths = [
        math.floor(per_record_tokens * _chars_per_token(body, fit.profile)) if body else 0 for body in bodies
    ]
    for _ in range(_MAX_FIT_ROUNDS):
        for record, body, length in zip(records, bodies, lengths, strict=True):
            if body and length >= MIN_CONTENT_PREVIEW_CHARS:
                record["content_preview"] = clip_middle(body, length)
            else:
                record.pop("content_preview", None)
        encoded = fit.encode(records)
        got = estimate_text(encoded, fit.profile)
        if got <= fit.limit_tokens:
            return encoded
        # Shorten every content preview (at least 16 characters) until the whole fits.
        # Scale only the content part, since the base does not shrink.
        ratio = max(spare_tokens, 0) / max(got - base_tokens, 1) * 0.95
        lengths = [min(length - MIN_CONTENT_PREVIEW_CHARS, int(length * ratio)) for length in lengths]
    return base


def structured_preview(
    text: str,
    *,
    tool_name: str,
    limit_tokens: int,
    profile: TokenProfile = DEFAULT_PROFILE,
) -> str | None:
    """Compact JSON of a ``query_kb``/``web_search`` result fitting ``limit_tokens``, or None.

    None means "use the generic preview": the tool is not a search tool, the text is not a search
    payload, or not even the bare header fits.
    """
    kind = STRUCTURED_TOOL_KINDS.get(tool_name)
    if kind is None or limit_tokens <= 0:
        return None
    data = parse_search_payload(text)
    if data is None:
        return None
    results = data["results"]
    fit = _SearchFit(_header(kind, data), len(results), limit_tokens, profile)
    picked = [_record(kind, result) for result in results[:MAX_RECORDS]]
    count = _records_that_fit(fit, [record for record, _ in picked])
    if count == 0:
        return _header_only(fit, kind)
    return _with_content_previews(fit, picked[:count])


# --- entry point -------------------------------------------------------------------------------


def tool_result_preview(
    text: str,
    *,
    limit_tokens: int,
    tool_name: str | None = None,
    profile: TokenProfile = DEFAULT_PROFILE,
    text_tokens: int | None = None,
) -> Preview:
    """The preview shown in a receipt: structured for search tools, else generic; empty at limit 0."""
    body = text.strip()
    if limit_tokens <= 0 or not body:
        return Preview("", len(text))
    body_tokens = text_tokens if text_tokens is not None and body is text else estimate_text(body, profile)
    if body_tokens <= limit_tokens:
        return Preview(body, len(text) - len(body))
    preview: str | None = None
    if tool_name in STRUCTURED_TOOL_KINDS:
        preview = structured_preview(body, tool_name=tool_name, limit_tokens=limit_tokens, profile=profile)
    if preview is None:
        preview = generic_preview(body, limit_tokens=limit_tokens, profile=profile, text_tokens=body_tokens)
    return Preview(preview, max(len(text) - len(preview), 0))

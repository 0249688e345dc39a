"""What reads as a summary: the positive check a summary model's answer must pass before it may become
the thread's memory. With the default prompt its five headings, in order; with a custom prompt what the
admin says a summary must contain, or else a length in proportion to what was folded. Never markup, a
JSON object, a refusal, or an answer the model was cut off in (error texts: ``error_texts``). Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from context_engine.formats import DEFAULT_SUMMARY_PROMPT

# The default prompt's headings, read from the prompt itself so the two can never disagree.
DEFAULT_HEADINGS: tuple[str, ...] = tuple(
    line.strip() for line in DEFAULT_SUMMARY_PROMPT.splitlines() if line.startswith("## ")
)
# A custom prompt with nothing required: the summary has at least 1/SHARE of the folded characters,
# within [FLOOR, CAP] (and never more than a quarter of them).
MIN_CHARS_SHARE = 100
MIN_CHARS_FLOOR = 24
MIN_CHARS_CAP = 200
# The answer stopped because it ran out of tokens (OpenAI, vLLM, Ollama; Anthropic).
_CUT_OFF_REASONS = frozenset({"length", "max_tokens"})
_MARKUP_DOCUMENT = re.compile(r"^<(?:!doctype|\?xml|html|head|body|title)\b", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,300}>")
MARKUP_SHARE = 0.3  # tags making up this share of the text make it markup, not prose
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n(?P<body>.*)\n```$", re.DOTALL)
_APOSTROPHE = r"['\u2019]"
_REFUSAL = re.compile(
    rf"^(?:(?:(?:i{_APOSTROPHE}m|i am)\s+(?:sorry|afraid)|sorry|i apologi[sz]e|unfortunately)[^\n]{{0,80}}?)?"
    rf"\bi(?:\s+|{_APOSTROPHE}m\s+)(?:can(?:no|{_APOSTROPHE})?t|(?:am\s+)?(?:unable|not able) to"
    rf"|won{_APOSTROPHE}t|will not)"
    r"\s+(?:\w+\s+){0,2}?(?:help|assist|comply|provide|summari[sz]e|do|fulfil|create|process|complete)"
    r"|^as an ai\b|^(?:抱歉|对不起|很抱歉|不好意思)|^我(?:无法|不能)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SummaryRule:
    """What a summary must contain: ``required`` lines in this order (each starting a line, heading
    marks and bold ignored, the last one followed by text); with none, at least ``min_chars``."""

    required: tuple[str, ...] = DEFAULT_HEADINGS
    min_chars: int = 0


DEFAULT_RULE = SummaryRule()


def min_summary_chars(folded_chars: int) -> int:
    """The shortest summary of ``folded_chars`` characters a custom prompt with nothing required takes."""
    return max(
        1, min(max(folded_chars // MIN_CHARS_SHARE, MIN_CHARS_FLOOR), MIN_CHARS_CAP, folded_chars // 4)
    )


def summary_rule(*, prompt: str, required: Sequence[str] = (), folded_chars: int = 0) -> SummaryRule:
    """The rule for a summary asked with ``prompt``: the default prompt's headings; a custom prompt's
    ``required`` lines (the agent's setting); else a length in proportion to ``folded_chars``."""
    if prompt.strip() == DEFAULT_SUMMARY_PROMPT.strip():
        return DEFAULT_RULE
    lines = tuple(item for line in required if (item := _normalized(line)))
    if lines:
        return SummaryRule(required=lines)
    return SummaryRule(required=(), min_chars=min_summary_chars(folded_chars))


def summary_problem(text: str, rule: SummaryRule, *, metadata: Mapping[str, Any] | None = None) -> str | None:
    """Why the stripped ``text`` (with its response's ``metadata``) is not a summary, or None when it is."""
    metadata = metadata or {}
    if metadata.get("finish_reason") in _CUT_OFF_REASONS or metadata.get("stop_reason") in _CUT_OFF_REASONS:
        return "cut off: the model ran out of output tokens"
    if _is_markup(text):
        return "markup, not prose"
    if _is_json(text):
        return "a JSON value, not prose"
    if _REFUSAL.match(text):
        return "a refusal"
    if rule.required:
        return _missing(text, rule.required)
    if len(text) < rule.min_chars:
        return f"{len(text)} characters, fewer than the {rule.min_chars} this much history needs"
    return None


def _normalized(line: str) -> str:
    """A required line without its heading marks, bold markers, trailing colon and outer spaces."""
    return line.strip().lstrip("#").strip().strip("*_").strip().rstrip(":：").strip()


def line_start(item: str) -> re.Pattern[str]:
    """Where the required line ``item`` starts a line of a summary (heading marks and bold ignored)."""
    return re.compile(
        r"^[ \t>]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*" + re.escape(_normalized(item)) + r"(?!\w)",
        re.IGNORECASE | re.MULTILINE,
    )


def _missing(text: str, required: Sequence[str]) -> str | None:
    """The first required line missing from ``text`` (or out of order), or a last one left empty."""
    position = 0
    for item in required:
        match = line_start(item).search(text, position)
        if match is None:
            where = "out of order" if line_start(item).search(text) else "missing"
            return f"{item!r} {where}"
        position = match.end()
    if not text[position:].strip(" \t\r\n*_:："):
        return f"nothing after {required[-1]!r}: cut off"
    return None


def _is_markup(text: str) -> bool:
    if not text.startswith("<"):
        return False
    if _MARKUP_DOCUMENT.match(text):
        return True
    return sum(len(tag) for tag in _TAG.findall(text)) >= MARKUP_SHARE * len(text)


def _is_json(text: str) -> bool:
    if fenced := _FENCE.match(text):
        text = fenced["body"].strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False

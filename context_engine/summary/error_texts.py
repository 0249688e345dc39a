"""Summaries that are error messages: a summary model, a proxy in front of it, or a library wrapping
it that answered with an error's text instead of a summary. One list of the real shapes, each pinned
by a test; a summary of this shape is a failed summary, never the thread's history. Pure."""

from __future__ import annotations

import json
import re

# (name, pattern on the stripped text): anchored at the start, so a summary that mentions an error
# in passing is never taken for one.
ERROR_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # LangChain's SummarizationMiddleware returns this string when its summary call raised.
    ("langchain", re.compile(r"^error generating summary\b", re.IGNORECASE)),
    # str() of an openai SDK APIStatusError: "Error code: 429 - {'error': {...}}" (OpenAI, vLLM, DeepSeek...).
    ("openai_sdk", re.compile(r"^error code:\s*\d{3}\b", re.IGNORECASE)),
    # DashScope's message prefix: "<400> InternalError.Algo.InvalidParameter: ...".
    ("dashscope", re.compile(r"^<\d{3}>\s*[A-Za-z]+(?:\.[A-Za-z]+)+\s*:")),
    # Ollama's client and server errors as text: "Error: model \"x\" not found, try pulling it first".
    ("ollama", re.compile(r"^error:\s", re.IGNORECASE)),
    # A proxy's or server's status page: "<html><head><title>502 Bad Gateway</title>...".
    (
        "http_error_page",
        re.compile(r"^<(?:!doctype html|html)\b.*?<title>\s*[45]\d\d\b", re.IGNORECASE | re.DOTALL),
    ),
    # A bare status line: "Internal Server Error", "429 Too Many Requests".
    (
        "http_status_line",
        re.compile(
            r"^(?:[45]\d\d\s+)?(?:internal server error|bad gateway|service unavailable|gateway timeout"
            r"|too many requests|bad request)\.?$",
            re.IGNORECASE,
        ),
    ),
)


def _json_error_shape(text: str) -> str | None:
    """The shape of an error body serialised as the reply: OpenAI/Ollama ``{"error": ...}``, vLLM
    ``{"object": "error", ...}``, DashScope native ``{"code", "message", "request_id"}``."""
    if not text.startswith("{"):
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("error"), (dict, str)):
        return "json_error"
    if body.get("object") == "error":
        return "vllm_json"
    if {"code", "message"} <= body.keys() and ("request_id" in body or "requestId" in body):
        return "dashscope_json"
    return None


def error_summary_shape(text: str) -> str | None:
    """The name of the error shape ``text`` has, or None when it reads as a summary."""
    stripped = text.strip()
    if shape := _json_error_shape(stripped):
        return shape
    for name, pattern in ERROR_SHAPES:
        if pattern.search(stripped):
            return name
    return None

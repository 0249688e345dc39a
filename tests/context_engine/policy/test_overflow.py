"""Overflow classification from every error shape a provider or integration produces."""

from __future__ import annotations

import httpx
import openai
import pytest
from langchain_core.exceptions import ContextOverflowError

from context_engine.policy.overflow import is_context_overflow, summary_failed_too_long

REQUEST = httpx.Request("POST", "http://stub.local/v1/chat/completions")


def _openai_error(status: int, body: dict | str) -> openai.APIStatusError:
    """The exception the real openai client raises for this HTTP response."""
    response = (
        httpx.Response(status, request=REQUEST, json=body)
        if isinstance(body, dict)
        else httpx.Response(status, request=REQUEST, text=body)
    )
    client = openai.OpenAI(api_key="test", base_url="http://stub.local/v1")
    return client._make_status_error_from_response(response)


def test_langchain_context_overflow_error_is_overflow():
    assert is_context_overflow(ContextOverflowError("too long"))


def test_openai_code_context_length_exceeded_is_overflow_even_without_a_telling_message():
    error = _openai_error(
        400,
        {
            "error": {
                "message": "Bad request.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    )
    assert isinstance(error, openai.BadRequestError) and error.code == "context_length_exceeded"
    assert "context" not in str(error).lower()
    assert is_context_overflow(error)


def test_bad_request_error_built_directly_with_a_code_is_overflow():
    response = httpx.Response(400, request=REQUEST)
    error = openai.BadRequestError(
        "Error code: 400", response=response, body={"code": "context_length_exceeded"}
    )
    assert is_context_overflow(error)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        # vLLM / DeepSeek
        (
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
                "type": "BadRequestError",
                "code": 400,
            },
        ),
        # llama.cpp server
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            },
        ),
        # Anthropic-style via an OpenAI-compatible proxy
        (
            400,
            {
                "error": {
                    "message": "prompt is too long: 210000 tokens > 200000 maximum",
                    "type": "invalid_request_error",
                }
            },
        ),
        # Groq
        (
            400,
            {
                "error": {
                    "message": "Please reduce the length of the messages or completion.",
                    "type": "invalid_request_error",
                }
            },
        ),
        # Generic proxies
        (413, {"error": {"message": "Input is too long for requested model."}}),
        (400, {"error": {"message": "Request has too many tokens for this model's context length"}}),
        (422, "Input validation error: context length exceeded"),
    ],
)
def test_messages_of_common_openai_compatible_servers_are_overflow(status, body):
    assert is_context_overflow(_openai_error(status, body))


def test_langchain_wrapped_errors_are_found_through_the_cause_chain():
    original = _openai_error(400, {"error": {"message": "x", "code": "context_length_exceeded"}})
    try:
        try:
            raise original
        except openai.BadRequestError as exc:
            raise ValueError("invalid request") from exc
    except ValueError as wrapped:
        assert is_context_overflow(wrapped)
    try:
        try:
            raise original
        except openai.BadRequestError:
            raise RuntimeError("while handling") from None
    except RuntimeError as implicit:
        implicit.__context__ = original  # __context__ survives even when the cause is suppressed
        assert is_context_overflow(implicit)


@pytest.mark.parametrize(
    "error",
    [
        _openai_error(
            400, {"error": {"message": "Invalid value for 'temperature'", "code": "invalid_value"}}
        ),
        _openai_error(401, {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}),
        _openai_error(429, {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
        _openai_error(500, {"error": {"message": "internal error"}}),
        _openai_error(400, {"error": {"message": "max_tokens is too large: 10000", "code": None}}),
        ValueError("too many tokens"),
        KeyError("context length"),
    ],
)
def test_other_errors_are_not_overflow(error):
    assert not is_context_overflow(error)


def test_a_specific_overflow_phrase_is_trusted_on_any_exception_but_a_loose_one_only_on_provider_errors():
    assert is_context_overflow(RuntimeError("This model's maximum context length is 8192 tokens"))
    assert not is_context_overflow(RuntimeError("context window"))
    assert is_context_overflow(_openai_error(400, {"error": {"message": "context window is full"}}))


def test_self_referencing_chains_terminate():
    error = ValueError("x")
    error.__context__ = error
    assert not is_context_overflow(error)


def test_a_failed_summary_says_what_the_provider_rejected_not_our_window():
    cause = RuntimeError("summary failed")
    # 1,653 tokens by our estimate under a 16,000 window: the window is not what refused it.
    said = summary_failed_too_long(cause, 1653, 16000, rejected=True, limit=None)
    assert "16,000" not in said and "does not fit" not in said
    assert "about 1,653 tokens by the platform's estimate" in said
    assert said.endswith("the model's server rejected it as too long without stating its limit.")
    stated = summary_failed_too_long(cause, 1653, 16000, rejected=True, limit=4096)
    assert stated.endswith("the model's server rejected it as longer than its limit of 4,096 tokens.")
    # Over the window by our own estimate: then the window is the reason, whatever the provider said.
    over = summary_failed_too_long(cause, 20000, 16000, rejected=True, limit=4096)
    assert over.endswith("(about 20,000 tokens) does not fit the model's context window (16,000 tokens).")

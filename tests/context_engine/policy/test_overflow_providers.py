"""Issue 24, invariant 5: every provider's overflow is recognised, by its wording and by structure (a
400/413/422 whose body speaks of the input's size against a limit, with a figure), while rate limits,
auth errors and other bad requests are not, whatever they mention."""

from __future__ import annotations

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.policy import overflow
from context_engine.policy.overflow import is_context_overflow
from tests.context_engine.policy.provider_errors import NOT_OVERFLOW_BODIES, OVERFLOW_BODIES

REQUEST = httpx.Request("POST", "http://stub.local/v1/chat/completions")
CLIENT = openai.OpenAI(api_key="test", base_url="http://stub.local/v1")


def _openai_error(status: int, body) -> openai.APIStatusError:
    """The exception the real openai client raises for this HTTP response (JSON object, list or text)."""
    if isinstance(body, str):
        response = httpx.Response(status, request=REQUEST, text=body)
    else:
        response = httpx.Response(status, request=REQUEST, json=body)
    return CLIENT._make_status_error_from_response(response)


@pytest.mark.parametrize("name", sorted(OVERFLOW_BODIES))
def test_every_providers_overflow_wording_is_an_overflow(name):
    assert is_context_overflow(_openai_error(*OVERFLOW_BODIES[name]))


@pytest.mark.parametrize("name", sorted(OVERFLOW_BODIES))
def test_every_providers_overflow_is_recognised_by_structure_alone(name, monkeypatch):
    # A provider we have never heard of words it its own way: no code or phrase of ours to match.
    monkeypatch.setattr(overflow, "OVERFLOW_CODES", frozenset())
    monkeypatch.setattr(overflow, "OVERFLOW_PHRASES", ())
    monkeypatch.setattr(overflow, "PROVIDER_PHRASES", ())
    assert is_context_overflow(_openai_error(*OVERFLOW_BODIES[name]))


@pytest.mark.parametrize("name", sorted(NOT_OVERFLOW_BODIES))
def test_rate_limits_auth_errors_and_other_bad_requests_are_not_overflow(name):
    assert not is_context_overflow(_openai_error(*NOT_OVERFLOW_BODIES[name]))


def test_minimaxs_wording_is_an_overflow_however_it_reaches_us():
    wording = "invalid params, context window exceeds limit (2013)"
    assert is_context_overflow(ValueError(wording))  # no HTTP status: a streamed error, a wrapper's text
    assert is_context_overflow(RuntimeError(f"Error in the model call: {wording}"))
    # Its OpenAI-compatible API answers 200 with no choices and the failure in ``base_resp``.
    for base in (
        {"status_code": 2013, "status_msg": wording},
        {"status_code": 1039, "status_msg": "token limit"},
    ):
        error = ValueError("the provider answered no completion")
        error.body = {"base_resp": base}  # type: ignore[attr-defined]
        assert is_context_overflow(error)
    other = ValueError("no completion")
    other.body = {"base_resp": {"status_code": 1002, "status_msg": "rate limit exceeded"}}  # type: ignore[attr-defined]
    assert not is_context_overflow(other)


def test_a_gemini_list_body_is_read_for_its_code():
    body = [{"error": {"code": 400, "message": "Bad request.", "status": "context_length_exceeded"}}]
    assert is_context_overflow(_openai_error(400, body))
    assert not is_context_overflow(_openai_error(400, [{"error": {"code": 400, "message": "Bad request."}}]))


def test_the_structural_rule_needs_a_provider_status():
    message = "Your request exceeded model token limit: 8192"
    assert is_context_overflow(_openai_error(400, {"error": {"message": message}}))
    assert not is_context_overflow(_openai_error(500, {"error": {"message": message.replace("model ", "")}}))
    assert not is_context_overflow(RuntimeError("request exceeded the token limit: 8192"))


def test_a_loose_phrase_on_a_rate_limit_is_not_an_overflow():
    # Bedrock's throttling message, which the loose phrase "too many tokens" used to catch on any SDK error.
    error = _openai_error(429, {"error": {"message": "Too many tokens, please wait before trying again."}})
    assert not is_context_overflow(error)
    assert is_context_overflow(_openai_error(400, {"error": {"message": "Too many tokens in the request."}}))


def test_an_overflow_wrapped_by_the_integration_is_found():
    original = _openai_error(*OVERFLOW_BODIES["moonshot"])
    try:
        try:
            raise original
        except openai.BadRequestError as exc:
            raise ValueError("model call failed") from exc
    except ValueError as wrapped:
        assert is_context_overflow(wrapped)


# --- properties: both directions, over generated wordings ------------------------------------------

FIGURES = st.integers(min_value=100, max_value=2_000_000).flatmap(
    lambda n: st.sampled_from([f"{n}", f"{n:,}"])
)
SUBJECTS = ["prompt", "input", "request", "messages", "conversation", "your prompt"]
SIZES = ["tokens", "token count", "context length", "length", "context", "prompt length", "token limit"]
LIMITS = [
    "exceeds",
    "exceeded",
    "is over the maximum of",
    "is larger than",
    "must be <=",
    "too long for",
    "limit",
]


def _layout(message: str, shape: str):
    """The same message in each body shape providers use."""
    return {
        "flat": {"message": message, "type": "invalid_request_error"},
        "nested": {"error": {"message": message, "type": "invalid_request_error", "code": None}},
        "string-error": {"code": "Client specified an invalid argument", "error": message},
        "list": [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}],
        "detail": {"detail": message},
        "text": message,
    }[shape]


SHAPES = st.sampled_from(["flat", "nested", "string-error", "list", "detail", "text"])


@st.composite
def overflow_messages(draw) -> str:
    used = draw(FIGURES)
    limit = draw(FIGURES)
    subject, size, verb = (
        draw(st.sampled_from(SUBJECTS)),
        draw(st.sampled_from(SIZES)),
        draw(st.sampled_from(LIMITS)),
    )
    template = draw(
        st.sampled_from(
            [
                "{subject} {size} {verb} {limit}",
                "{subject} {size} ({used}) {verb} {limit}",
                "Invalid request: {subject} {verb} model {size}: {limit} (requested: {used})",
                "{subject} contains {used} tokens, {verb} {limit} {size}",
                "Error: {used} {size} {verb} {limit}.",
            ]
        )
    )
    return template.format(subject=subject, size=size, verb=verb, limit=limit, used=used)


@settings(max_examples=200, deadline=None)
@given(message=overflow_messages(), shape=SHAPES, status=st.sampled_from([400, 413, 422]))
def test_a_provider_status_whose_body_states_a_size_over_a_limit_is_an_overflow(message, shape, status):
    assert is_context_overflow(_openai_error(status, _layout(message, shape)))


# Words of rate-limit and auth errors, including tokens and limits, but never a specific overflow phrase.
SPEND_WORDS = [
    "rate",
    "limit",
    "reached",
    "tokens",
    "token",
    "per",
    "min",
    "minute",
    "TPM",
    "RPM",
    "used",
    "requested",
    "limit:",
    "maximum",
    "exceeded",
    "prompt",
    "please",
    "try",
    "again",
    "in",
    "organization",
    "quota",
    "invalid",
    "API",
    "key",
    "expired",
    "auth",
    "bearer",
    "unauthorized",
    "forbidden",
    "for",
]


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.one_of(st.sampled_from(SPEND_WORDS), FIGURES), min_size=1, max_size=25),
    shape=SHAPES,
    status=st.sampled_from([401, 403, 429]),
)
def test_rate_limits_and_auth_errors_are_never_overflow(words, shape, status):
    assert not is_context_overflow(_openai_error(status, _layout(" ".join(words), shape)))


# Words of other bad requests (parameters, schemas, images), with limits and figures: tokens only as the
# reply's size ("max_tokens", "output tokens"), never tokens / context / length / prompt of the input.
PARAMETER_WORDS = [
    "invalid",
    "value",
    "for",
    "temperature",
    "top_p",
    "must",
    "be",
    "between",
    "and",
    "expected",
    "a",
    "string",
    "but",
    "got",
    "unsupported",
    "parameter",
    "max_tokens",
    "max_completion_tokens",
    "output tokens",
    "completion tokens",
    "tool",
    "schema",
    "function",
    "image",
    "exceeds",
    "maximum",
    "size",
    "MB",
    "the",
    "is",
    "not",
    "supported",
    "with",
    "this",
    "model",
    "at",
    "most",
    "limit",
    "<=",
    ">",
    "whereas",
    "you",
    "provided",
    "too",
    "large",
    "array",
    "items",
]


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(st.one_of(st.sampled_from(PARAMETER_WORDS), FIGURES), min_size=1, max_size=25),
    shape=SHAPES,
    status=st.sampled_from([400, 413, 422]),
)
def test_a_bad_request_about_something_else_is_not_an_overflow(words, shape, status):
    assert not is_context_overflow(_openai_error(status, _layout(" ".join(words), shape)))

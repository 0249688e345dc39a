"""A summary that is an error's text is a failed summary: one list of the real shapes, each pinned."""

from __future__ import annotations

import pytest

from context_engine.errors import ErrorSummaryError, NotASummaryError
from context_engine.summary.error_texts import error_summary_shape
from context_engine.summary.history import summary_text
from context_engine.summary.validation import SummaryRule

LANGCHAIN_429 = (
    "Error generating summary: Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o-mini "
    "in organization org-x on tokens per min (TPM): Limit 200000, Used 199957, Requested 1125.', "
    "'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}"
)
# (expected shape, the text a summary call answered with), as the servers and libraries write them.
ERROR_TEXTS = [
    ("langchain", LANGCHAIN_429),
    (
        "openai_sdk",
        "Error code: 500 - {'error': {'message': 'The server had an error while processing your request. "
        "Sorry about that!', 'type': 'server_error', 'param': None, 'code': None}}",
    ),
    (
        "json_error",  # OpenAI's error body
        '{"error": {"message": "You exceeded your current quota, please check your plan and billing '
        'details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}',
    ),
    (
        "vllm_json",
        '{"object": "error", "message": "The model `qwen2.5-7b` does not exist.", "type": "NotFoundError", '
        '"param": null, "code": 404}',
    ),
    ("json_error", '{"error":"model \\"llama3.1\\" not found, try pulling it first"}'),  # Ollama's body
    ("ollama", 'Error: model "llama3.1" not found, try pulling it first'),
    (
        "dashscope_json",
        '{"code":"Throttling.RateQuota","message":"Requests rate limit exceeded, please try again later.",'
        '"request_id":"b7a2c5a4-3f1e-9d2b-8a7c-5e4f3d2c1b0a"}',
    ),
    (
        "json_error",  # DashScope's OpenAI-compatible body
        '{"error":{"code":"invalid_parameter_error","param":null,"message":"<400> InternalError.Algo.'
        'InvalidParameter: Range of input length should be [1, 30720]","type":"invalid_request_error"},'
        '"id":"chatcmpl-1","request_id":"1"}',
    ),
    ("dashscope", "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]"),
    (
        "http_error_page",
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway"
        "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>",
    ),
    ("http_status_line", "Internal Server Error"),
    ("http_status_line", "429 Too Many Requests"),
]
# Summaries (under a custom prompt that requires nothing) that mention errors: never taken for one.
SUMMARIES = [
    "## SESSION INTENT\nFix the error in parse(): it raised 'Error code: 500' on empty input.",
    "The user reported `Error: model not found` from Ollama; we pulled the model and it works.",
    "Error handling was the theme: retries with backoff were added to the client.",
]
ANY_PROSE = SummaryRule(required=(), min_chars=1)


@pytest.mark.parametrize(
    ("shape", "text"), ERROR_TEXTS, ids=[f"{s}-{i}" for i, (s, _t) in enumerate(ERROR_TEXTS)]
)
def test_every_real_error_shape_is_recognised_and_refused_as_a_summary(shape, text):
    assert error_summary_shape(text) == shape
    for rule in (None, ANY_PROSE):  # refused as an error whatever the prompt
        with pytest.raises(ErrorSummaryError, match=shape):
            summary_text(f"  {text}\n", *([rule] if rule else []))


@pytest.mark.parametrize("text", SUMMARIES)
def test_summaries_that_mention_errors_are_summaries(text):
    assert error_summary_shape(text) is None
    assert summary_text(text, ANY_PROSE) == text


def test_a_json_object_that_is_no_error_body_is_still_no_summary():
    text = '{"summary": "the user asked for the error budget of the service"}'
    assert error_summary_shape(text) is None
    with pytest.raises(NotASummaryError, match="JSON"):
        summary_text(text, ANY_PROSE)

"""A summary that is an error's text is a failed summary: one list of the real shapes, each pinned; on
the manual path a 502 ``summary_failed`` with state unchanged, a ``failed`` event, a failed audit record
and no history section left behind."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from context_engine.errors import ErrorSummaryError
from context_engine.state import SUMMARY_EVENT_KEY
from context_engine.summary.error_texts import error_summary_shape
from context_engine.summary.history import summary_text
from tests.compression._agent_fakes import ScriptedChatModel
from tests.compression._threads import conversation_messages, repository_for, seed_state, workdir_files

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
SUMMARIES = [
    "## SESSION INTENT\nFix the error in parse(): it raised 'Error code: 500' on empty input.",
    "The user reported `Error: model not found` from Ollama; we pulled the model and it works.",
    "Error handling was the theme: retries with backoff were added to the client.",
    '{"summary": "the user asked for the error budget of the service"}',
]


@pytest.mark.parametrize(
    ("shape", "text"), ERROR_TEXTS, ids=[f"{s}-{i}" for i, (s, _t) in enumerate(ERROR_TEXTS)]
)
def test_every_real_error_shape_is_recognised_and_refused_as_a_summary(shape, text):
    assert error_summary_shape(text) == shape
    with pytest.raises(ErrorSummaryError, match=shape):
        summary_text(f"  {text}\n")


@pytest.mark.parametrize("text", SUMMARIES)
def test_summaries_that_mention_errors_are_summaries(text):
    assert error_summary_shape(text) is None
    assert summary_text(text) == text


@pytest.mark.django_db
def test_manual_compression_refuses_an_error_as_summary(
    client, user, agent, monkeypatch, django_capture_on_commit_callbacks
):
    from conversations.services import thread_create

    agent.summary_keep_messages = 4
    agent.save()
    thread = thread_create(user=user, agent_slug=agent.slug)
    model = ScriptedChatModel(summaries=[LANGCHAIN_429])
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    sent: list[dict] = []
    monkeypatch.setattr("conversations.events._send", lambda thread_id, event, **_kw: sent.append(event))
    seed_state(thread, conversation_messages(5))
    before = repository_for(thread).get_values()
    client.force_login(user)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/threads/{thread.thread_id}/compress")

    assert response.status_code == 502 and response.json()["code"] == "summary_failed"
    assert "error instead of a summary" in response.json()["message"]
    after = repository_for(thread).get_values()
    assert after == before and SUMMARY_EVENT_KEY not in after
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.status == "failed" and "rate_limit_exceeded" in record.error
    statuses = [e["status"] for e in sent if e["type"] == "compression"]
    assert statuses == ["started", "failed"]
    # A failed summary leaves no history section behind.
    assert not [path for path in workdir_files(thread) if "conversation_history" in path]

"""Issue 37 item 3 through the HTTP API, with the real OpenAI client against the local OpenAI-protocol
stub: on a 16,000-token window, one ``read_file`` of a 36 KB log answers a page that fits (and says how
to read the next), the pages read one after another all fit, and a fresh result of another tool as
large goes out as a receipt in the same turn. No run fails because one tool result is large."""

from __future__ import annotations

import json
import re

import pytest

from agent_platform.tools.files import build_file_tools
from agent_platform.workdir import workdir_for
from context_engine.formats import RECEIPT_HEADER
from context_engine.tokens.messages import estimate_text, profile_for_model
from conversations.models import AgentRun
from tests.conversations.test_safety_through_the_api import _agent, _summary_calls
from tests.support.openai_stub import ScriptedReply

pytestmark = pytest.mark.django_db
WINDOW = 16_000
LOG_PATH = "logs/app.log"


def _log(size: int = 36 * 1024) -> str:
    rows, n = [], 0
    while sum(len(r) + 1 for r in rows) < size:
        rows.append(
            f"2024-05-01T12:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z INFO [worker-{n % 8}] "
            f"request id=req-{n:06d} path=/api/v1/items/{n * 7 % 9973} status={200 + n % 3} "
            f"duration_ms={n * 37 % 900}"
        )
        n += 1
    return "\n".join(rows) + "\n"


def _post(client, user, agent, content, capture, *, files):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=agent.slug)
    for path, text in files.items():
        workdir_for(thread).write_text(path, text)
    client.force_login(user)
    with capture(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages", {"content": content}, content_type="application/json"
        )
    assert response.status_code == 202, response.content
    return thread, AgentRun.objects.get(conversation=thread)


def _tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


def _raw_tokens(request: dict, profile) -> int:
    """What the model received, by our own raw estimate of the texts (a floor of the request's size)."""
    return sum(estimate_text(json.dumps(m.get("content") or ""), profile) for m in request["messages"])


def test_reading_a_36_kb_log_on_a_16k_window_pages_it_and_the_run_succeeds(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    log = _log()
    openai_stub.tool_call("read_file", {"path": LOG_PATH}).reply("The log shows steady traffic.")
    agent = _agent(openai_stub, monkeypatch, context_window=WINDOW, tools=["read_file"])

    thread, run = _post(
        client, user, agent, "Read logs/app.log.", django_capture_on_commit_callbacks, files={LOG_PATH: log}
    )

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    answered = openai_stub.requests[-1]
    (page,) = _tool_results(answered)
    assert RECEIPT_HEADER not in page  # the model reads the file itself, a page of it
    assert page.startswith("     1\t2024-05-01T12:00:00.000Z INFO")
    assert "offset=" in page.rsplit("\n", 1)[-1]  # and is told how to read the next page
    profile = profile_for_model(agent.resolved_model_name)
    assert _raw_tokens(answered, profile) < WINDOW
    assert not _summary_calls(openai_stub)


def _reader(pages: list[str]):
    """A model that reads the log a page at a time, as each page's last line says, then answers."""

    def respond(body: dict) -> ScriptedReply:
        results = _tool_results(body)
        if results:
            pages.append(results[-1])
        footer = results[-1].rsplit("\n", 1)[-1] if results else ""
        if results and (more := re.search(r"offset=(\d+)", footer)):
            args = {"path": LOG_PATH, "offset": int(more.group(1))}
        elif results:
            return ScriptedReply(content=f"Read {len(pages)} pages.")
        else:
            args = {"path": LOG_PATH}
        call = {"id": f"call_{len(pages)}", "name": "read_file", "arguments": args}
        return ScriptedReply(tool_calls=[call])

    return respond


def test_every_page_of_the_log_is_read_whole_and_every_request_fits(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    log = _log()
    pages: list[str] = []
    openai_stub.responder = _reader(pages)
    agent = _agent(openai_stub, monkeypatch, context_window=WINDOW, tools=["read_file"])

    _thread, run = _post(
        client,
        user,
        agent,
        "Read all of logs/app.log.",
        django_capture_on_commit_callbacks,
        files={LOG_PATH: log},
    )

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    profile = profile_for_model(agent.resolved_model_name)
    assert len(pages) >= 3  # a 36 KB log is several pages on this window
    rows = [row.split("\t", 1)[1] for page in pages for row in page.split("\n") if "\t" in row]
    assert "\n".join(rows) + "\n" == log  # every line read, once, whole
    page_tokens = [estimate_text(page, profile) for page in pages]
    assert max(page_tokens) < WINDOW * 0.9 / 4  # each page within a fresh result's share of T
    for request in openai_stub.requests:
        assert _raw_tokens(request, profile) < WINDOW


def test_search_history_finds_a_line_of_an_attached_file_and_read_file_opens_it(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from conversations.services import thread_create

    log = _log()
    needle = "request id=req-000123 "
    openai_stub.tool_call("search_history", {"pattern": needle})
    openai_stub.reply("Request 123 is in the attached log.")
    agent = _agent(openai_stub, monkeypatch, context_window=WINDOW, tools=["read_file"])
    thread = thread_create(user=user, agent_slug=agent.slug)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages/upload",
            {"content": "Where is request 123?", "files": [SimpleUploadedFile("app.log", log.encode())]},
        )
    assert response.status_code == 202, response.content
    run = AgentRun.objects.get(conversation=thread)

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    (answer,) = _tool_results(openai_stub.requests[-1])
    hit = next(row for row in answer.split("\n") if needle in row)
    target = hit.split(": ", 1)[0]
    assert target.startswith("uploads/") and target.endswith(":L124")
    opened = build_file_tools(workdir_for(thread))["read_file"].invoke({"path": target, "limit": 1})
    assert needle in opened.split("\n")[0]


def test_a_run_that_cannot_fit_states_the_raw_figure_that_failed_the_window_check(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    from agent_platform.calibration.models import TokenCalibration
    from agent_platform.calibration.selectors import calibration_key
    from context_engine.tokens.messages import estimate_messages
    from conversations.services import thread_create
    from tests.compression._threads import seed_state
    from tests.context_engine.chats import conversation_messages

    # The summary call fails; the calibration says the model counts half of what we estimate.
    openai_stub.error(400, {"error": {"message": "summary refused", "type": "invalid_request_error"}})
    agent = _agent(
        openai_stub,
        monkeypatch,
        context_window=16_384,
        summary_threshold=100,
        summary_tool_result_token_limit=100_000,
    )
    TokenCalibration.objects.create(**calibration_key(agent=agent), factor=0.5, observations=50)
    history = conversation_messages(12, big_result_chars=10_000)
    raw = estimate_messages(history, profile=profile_for_model(agent.resolved_model_name))
    assert raw > 16_384 > raw * 0.55
    thread = thread_create(user=user, agent_slug=agent.slug)
    seed_state(thread, history)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/api/threads/{thread.thread_id}/messages",
            {"content": "Go on."},
            content_type="application/json",
        )
    run = AgentRun.objects.get(conversation=thread)

    assert run.status == AgentRun.Status.FAILED
    stated = [int(n.replace(",", "")) for n in re.findall(r"about ([\d,]+) tokens", run.error)]
    assert stated and stated[0] > 16_384, run.error  # the raw estimate that failed, not the calibrated half
    assert not any(1_000 < n < 16_384 for n in stated), run.error

"""Issue 38 through a real turn: a pattern RE2 refuses, and a tool call past its whole-call budget,
are tool errors the model reads and answers; the turn succeeds."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from agent_platform.tools import history_search
from agent_platform.workdir import workdir_for
from conversations.models import AgentRun
from conversations.services import message_intake

pytestmark = pytest.mark.django_db
HISTORY = "outputs/conversation_history/session_1.md"


def _turn(thread, user, scripted_model, django_capture_on_commit_callbacks, args):
    call = AIMessage("", tool_calls=[{"id": "call-grep", "name": "search_history", "args": args}])
    model = scripted_model(call, "I could not search that.")
    with django_capture_on_commit_callbacks(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content="search").run
    run.refresh_from_db()
    (answer,) = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
    return run, answer


@pytest.mark.parametrize("pattern", ["(?V1)[a]", "a{2147483647}"])
def test_a_pattern_re2_refuses_is_a_tool_error_not_a_failed_turn(
    thread, user, scripted_model, django_capture_on_commit_callbacks, pattern
):
    workdir_for(thread).write_text(HISTORY, "aaa\n")
    run, answer = _turn(
        thread, user, scripted_model, django_capture_on_commit_callbacks, {"pattern": pattern, "regex": True}
    )
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert answer.content.startswith("Error: not a valid regular expression in RE2 syntax")


def test_a_call_past_its_time_budget_is_a_tool_error_and_the_turn_goes_on(
    thread, user, scripted_model, django_capture_on_commit_callbacks, settings, monkeypatch
):
    settings.TOOL_CALL_SECONDS = 0.5
    workdir_for(thread).write_text(HISTORY, "".join(f"line {n}\n" for n in range(40)))
    real_split = history_search.split_lines

    def slow_lines(text):
        for line in real_split(text):
            __import__("time").sleep(0.1)
            yield line

    monkeypatch.setattr(history_search, "split_lines", slow_lines)
    run, answer = _turn(thread, user, scripted_model, django_capture_on_commit_callbacks, {"pattern": "x"})
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert answer.content.startswith("Error: the tool call ran past its time budget of 0.5 s")

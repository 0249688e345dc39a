"""Issue 25 through the HTTP API with the real OpenAI client against the local OpenAI-protocol stub:
after a summary, an identifier that was folded is in the model's next request (in the summary, the
reference index or the kept tail) with a pointer that one ``read_file`` call resolves, and the model's
``search_history`` call for it is answered with that same line in the request after it."""

from __future__ import annotations

import json
import re

import pytest

from agent_platform.tools.files import build_file_tools
from agent_platform.workdir import workdir_for
from context_engine.formats import REFERENCE_INDEX_HEADER
from context_engine.lines import pointer
from conversations.models import AgentRun
from tests.context_engine.chats import SUMMARY, conversation_messages
from tests.conversations.test_safety_through_the_api import _agent, _post, _summary_calls

pytestmark = pytest.mark.django_db
FOLDED = "https://example.com/doc/1"  # in a folded tool result; the stub's summary does not keep it


def _text(request: dict) -> str:
    return "\n".join(
        m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        for m in request["messages"]
    )


def _index_pointer(request_text: str, value: str) -> str:
    """The pointer the index in ``request_text`` gives ``value``: its entry's line, in the file above."""
    index = request_text[request_text.index(REFERENCE_INDEX_HEADER) :]
    path = None
    for row in index.split("\n"):
        if re.fullmatch(r"\S+/\S+:", row):
            path = row[:-1]
        elif path and (entry := re.fullmatch(rf"- {re.escape(value)} L(\d+)", row)):
            return pointer(path, int(entry.group(1)))
    raise AssertionError(f"{value} is not listed in the index:\n{index}")


def test_a_folded_identifier_is_in_the_next_request_and_one_call_away(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    openai_stub.context_overflow().reply(SUMMARY)  # a forced summary, whose text keeps none of the URLs
    openai_stub.tool_call("search_history", {"pattern": FOLDED})
    openai_stub.reply("Document 1 is at https://example.com/doc/1.")
    agent = _agent(openai_stub, monkeypatch)

    thread, run = _post(
        client,
        user,
        agent,
        "Where was document 1?",
        django_capture_on_commit_callbacks,
        history=conversation_messages(5),
    )

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert len(_summary_calls(openai_stub)) == 1
    after_summary, after_search = [r for r in openai_stub.requests if r not in _summary_calls(openai_stub)][
        1:
    ]
    assert "search_history" in [t["function"]["name"] for t in after_summary["tools"]]
    seen = _text(after_summary)
    assert FOLDED not in seen.split(REFERENCE_INDEX_HEADER)[0]  # not in the summary or the kept tail...
    target = _index_pointer(seen, FOLDED)  # ...but listed in the index, with its line
    # One read_file call with that pointer opens on a line holding it.
    opened = build_file_tools(workdir_for(thread))["read_file"].invoke({"path": target, "limit": 1})
    assert FOLDED in opened.split("\n")[0] and opened.startswith(f"{int(target.rsplit(':L', 1)[1]):6d}\t")
    # The model's search_history call was answered, in its next request, with hits naming that line.
    tool_results = [m["content"] for m in after_search["messages"] if m.get("role") == "tool"]
    assert any(f"{target}: " in content for content in tool_results), tool_results

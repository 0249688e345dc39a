"""Done-when of issue 14, end to end: a pinned instruction survives five successive summaries verbatim,
right after the summary, in the requests a real OpenAI client sends to a local OpenAI-protocol server."""

from __future__ import annotations

import pytest

from compression.models import CompressionRecord
from conversations.services import message_pin, thread_create
from tests.compression._threads import say
from tests.context_engine.chats import as_summary

pytestmark = pytest.mark.django_db

INSTRUCTION = "Always answer in French, and quote ticket OPS-4711 in every reply."


@pytest.fixture
def stub_agent(stub_agent_with):
    return stub_agent_with(
        tools=["ls"],
        summary_threshold=1,  # T = 1,024 tokens: every long message below forces a summary
        summary_keep_messages=2,
        summary_pinned_token_limit=200,
    )


def _is_summary_call(request: dict) -> bool:
    return "<messages>" in str(request["messages"][-1].get("content"))


def test_a_pinned_instruction_survives_five_summaries_verbatim_in_what_the_server_receives(
    user, stub_agent, openai_stub, django_capture_on_commit_callbacks
):
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    # A reply long enough that folding it into a summary makes the request smaller (issue 24: a
    # summary bigger than what it folds is never applied).
    openai_stub.reply("D'accord, OPS-4711. " + "Je lirai chaque chapitre avec attention. " * 60)
    say(user, thread, INSTRUCTION, django_capture_on_commit_callbacks)
    instruction = thread.messages.get(seq=1)
    message_pin(thread_id=thread.thread_id, message_id=instruction.pk, user=user)

    for n in range(1, 6):
        openai_stub.reply(as_summary(f"## SESSION INTENT\nChapitre {n} lu.")).reply(
            f"Chapitre {n}: lu (OPS-4711)."
        )
        say(
            user,
            thread,
            f"Chapter {n}: " + "the quick brown fox jumps over the lazy dog " * 150,
            django_capture_on_commit_callbacks,
        )

    summaries = [r for r in openai_stub.requests if _is_summary_call(r)]
    assert len(summaries) == 5
    main_calls = [r for r in openai_stub.requests if not _is_summary_call(r)]
    after_summary = main_calls[-5:]
    for n, request in enumerate(after_summary, start=1):
        messages = request["messages"]
        assert messages[0]["role"] == "system"
        assert messages[1]["content"].startswith(
            "You are in the middle of a conversation that has been summarized."
        )
        assert f"Chapitre {n} lu." in messages[1]["content"]
        assert messages[2] == {"role": "user", "content": INSTRUCTION}  # verbatim, right after the summary
        assert sum(1 for m in messages if m.get("content") == INSTRUCTION) == 1
    # The pinned instruction never went into a summary's input after it was pinned.
    assert all(INSTRUCTION not in str(r["messages"][-1]["content"]) for r in summaries)
    records = CompressionRecord.objects.filter(conversation=thread, level=CompressionRecord.Level.SUMMARY)
    assert records.count() == 5
    assert all(record.loss_report.get("total") is not None for record in records)

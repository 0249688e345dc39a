"""Threads with a seeded checkpoint, and the helpers that drive and inspect them, for the manual and
bulk compression tests."""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import httpx
import openai
from django.core.management import call_command
from django.urls import reverse
from langchain_core.messages import BaseMessage

from agent_platform.runtime.state_repository import AgentStateRepository
from compression.models import CompressionRecord
from conversations.models import AgentRun
from conversations.services import message_intake


def repository_for(conversation) -> AgentStateRepository:
    from agent_platform.runtime.graph import state_graph_for

    return AgentStateRepository(state_graph_for(conversation), conversation.thread_id)


def seed_state(conversation, messages: list[BaseMessage], **extra: Any) -> AgentStateRepository:
    repository = repository_for(conversation)
    repository.update({"messages": messages, **extra})
    return repository


def workdir_files(conversation) -> list[str]:
    """Every file in the thread's workdir, as virtual paths."""
    from agent_platform.workdir import workdir_for

    workdir = workdir_for(conversation)
    found, pending = [], ["."]
    while pending:
        for entry in workdir.list_dir(pending.pop()):
            (pending if entry.endswith("/") else found).append(entry.rstrip("/"))
    return sorted(found)


def compact(*args: str) -> dict:
    """``manage.py compact_threads ... --json``, parsed."""
    from django.core.management import call_command

    out = StringIO()
    call_command("compact_threads", *args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def connection_error() -> openai.APIConnectionError:
    return openai.APIConnectionError(
        request=httpx.Request("POST", "http://model.invalid/v1/chat/completions")
    )


def compact_text(*args: str) -> str:
    out = StringIO()
    call_command("compact_threads", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def selected(*args: str) -> list[str]:
    return [row["thread"] for row in compact("--dry-run", *args)["candidates"]]


def snapshot(thread) -> dict:
    return repository_for(thread).get_values()


def bulk_records(thread):
    return CompressionRecord.objects.filter(conversation=thread, trigger=CompressionRecord.Trigger.BULK)


def compress_request(client, thread, **headers):
    return client.post(f"/api/threads/{thread.thread_id}/compress?wait=true", headers=headers)


def transcript_for(conversation, messages: list[BaseMessage]) -> dict[str, int]:
    """Transcript rows mirroring seeded checkpoint messages (same ids); returns checkpoint id → row id."""
    from conversations.models import Message
    from conversations.services import NewMessage, message_append

    roles = {"human": Message.Role.USER, "ai": Message.Role.ASSISTANT, "tool": Message.Role.TOOL}
    rows: dict[str, int] = {}
    for message in messages:
        row = message_append(
            conversation=conversation,
            message=NewMessage(
                role=roles.get(message.type, Message.Role.SYSTEM),
                content=message.content if isinstance(message.content, str) else str(message.content),
                tool_calls=list(getattr(message, "tool_calls", []) or []),
                tool_call_id=getattr(message, "tool_call_id", "") or "",
                tool_name=getattr(message, "name", "") or "",
                lc_message_id=message.id or "",
            ),
        )
        rows[message.id] = row.pk
    return rows


def without_ledger(values: dict) -> dict:
    """Checkpoint values less the spend guard's ledger: a failed summary call is billed, so the ledger
    is the one thing a failed compression writes (issue 24 invariant 3)."""
    from context_engine.state import SUMMARY_CALLS_KEY

    return {k: v for k, v in values.items() if k != SUMMARY_CALLS_KEY}


def say(user, thread, content: str, capture) -> AgentRun:
    """One user message, run to its end (``capture``: ``django_capture_on_commit_callbacks``); the run
    must succeed."""
    with capture(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content=content).run
    run.refresh_from_db()
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    return run


def state_fragment(client, thread) -> str:
    """The thread's state fragment as the page fetches it, white space folded."""
    html = client.get(reverse("conversations:fragment-state", args=[thread.thread_id])).content.decode()
    return re.sub(r"\s+", " ", html)

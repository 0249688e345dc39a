"""Schemas of the threads API: ``...In`` bodies and ``...Out`` responses."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.urls import reverse
from ninja import Field, Schema

from conversations.services.intake import MESSAGE_MAX_CHARS, REQUEST_ID_MAX_CHARS
from conversations.services.threads import TITLE_MAX_CHARS


class ThreadCreateIn(Schema):
    agent: str = Field(..., min_length=1, max_length=50, description="The agent's slug.")
    title: str = Field("", max_length=TITLE_MAX_CHARS)


class ThreadUpdateIn(Schema):
    title: str = Field(..., max_length=TITLE_MAX_CHARS)


class ThreadOut(Schema):
    thread_id: uuid.UUID
    title: str
    agent: str
    status: str
    created_at: datetime
    last_activity_at: datetime

    @staticmethod
    def resolve_agent(obj) -> str:
        return obj.agent.slug


class ThreadListOut(ThreadOut):
    owner: str
    snippet: str = ""  # with a search: the matching stretch of the newest matching message
    hit_message_id: int | None = None  # that message (any version of the thread, earlier ones too)
    hit_url: str = ""  # the page that opens at it: the thread's, or its earlier branch's

    @staticmethod
    def resolve_hit_message_id(obj) -> int | None:
        return getattr(obj, "hit_id", None)

    @staticmethod
    def resolve_hit_url(obj) -> str:
        return getattr(obj, "hit_url", "")

    @staticmethod
    def resolve_owner(obj) -> str:
        return obj.owner.get_username()


class MessageIn(Schema):
    content: str = Field(..., min_length=1, max_length=MESSAGE_MAX_CHARS)
    request_id: str | None = Field(None, min_length=1, max_length=REQUEST_ID_MAX_CHARS)


class ResumeIn(Schema):
    answer: str = Field(..., min_length=1, max_length=MESSAGE_MAX_CHARS)


class AttachmentOut(Schema):
    name: str
    path: str
    mime_type: str
    kind: str
    size: int
    sha256: str
    url: str

    @staticmethod
    def resolve_url(obj) -> str:
        return reverse("conversations:workdir-file", args=[obj.conversation.thread_id, obj.path])


class MessageOut(Schema):
    id: int
    seq: int
    role: str
    content: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    tool_name: str
    run_id: int | None
    interrupted: bool
    created_at: datetime
    attachments: list[AttachmentOut] = []
    number: int | None = None  # its place on the branch shown (1..n); the seq is the transcript's

    @staticmethod
    def resolve_attachments(obj) -> list:
        return list(obj.attachments.all())

    @staticmethod
    def resolve_number(obj) -> int | None:
        return getattr(obj, "number", None)


class RunOut(Schema):
    id: int
    kind: str
    status: str
    error: str
    usage: dict[str, Any]
    cancel_requested_at: datetime | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class IntakeOut(Schema):
    message: MessageOut
    run: RunOut


class InterruptOut(Schema):
    question: str | None


class StateOut(Schema):
    thread_id: uuid.UUID
    token_usage: dict[str, Any] | None
    compressing: bool = False
    running: bool
    queued: bool
    interrupted: bool
    interrupt: InterruptOut | None
    latest_run: RunOut | None


class PinOut(Schema):
    message_id: int
    pinned: bool
    pinned_tokens: int
    limit_tokens: int
    room_tokens: int


class MessageEditIn(Schema):
    content: str = Field(..., min_length=1, max_length=MESSAGE_MAX_CHARS)
    request_id: str | None = Field(None, min_length=1, max_length=REQUEST_ID_MAX_CHARS)


class RegenerateIn(Schema):
    request_id: str | None = Field(None, min_length=1, max_length=REQUEST_ID_MAX_CHARS)


class RegenerateAgentIn(RegenerateIn):
    agent: str | None = Field(
        None,
        min_length=1,
        max_length=50,
        description="Regenerate with this agent (its slug): the thread switches to it first.",
    )


class AgentSwitchIn(Schema):
    agent: str = Field(..., min_length=1, max_length=50, description="The agent's slug.")


class AgentSwitchOut(Schema):
    """The thread's agent after a switch, with the budget its next turn runs on."""

    thread_id: uuid.UUID
    agent: str
    agent_name: str
    context_window: int | None
    trigger_tokens: int

    @staticmethod
    def resolve_agent(obj) -> str:
        return obj.agent.slug

    @staticmethod
    def resolve_agent_name(obj) -> str:
        return obj.agent.name

    @staticmethod
    def resolve_context_window(obj) -> int | None:
        return obj.agent.resolved_context_window

    @staticmethod
    def resolve_trigger_tokens(obj) -> int:
        return obj.agent.effective_trigger


class VersionOut(Schema):
    number: int
    current: bool
    message: MessageOut | None  # the user message of an edit version
    replies: list[MessageOut]


class VersionSetOut(Schema):
    total: int
    current: int
    versions: list[VersionOut]


class MessageVersionsOut(Schema):
    message_id: int
    edits: VersionSetOut | None  # versions of this user message
    replies: VersionSetOut | None  # versions of the reply to it


class BranchOut(Schema):
    thread_id: uuid.UUID
    message_id: int  # the message asked for
    branch: int  # the branch's number in the thread (stable)
    current: bool  # the thread's current branch: what the model reads
    messages: list[MessageOut]  # the whole branch, numbered 1..n


class BranchContinueOut(Schema):
    thread_id: uuid.UUID
    message_id: int
    branch: int
    current: bool
    created: bool  # False: it was current already, or a retry of the same request_id


class BranchForkIn(Schema):
    request_id: str | None = Field(None, min_length=1, max_length=REQUEST_ID_MAX_CHARS)
    title: str | None = Field(None, max_length=200)


class BranchForkOut(Schema):
    thread_id: uuid.UUID  # the new thread
    title: str
    messages: int  # how many messages were copied
    url: str  # its page
    created: bool

"""The compression record's admin page: the loss report, and links to the thread, its history file and
the files the compression saved, for a user the file view would let in (``conversations.access``, the
one rule); anyone else sees the paths as text."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.urls import reverse

from compression.models import CompressionRecord
from compression.panels import loss_line_from
from conversations.access import thread_visible
from conversations.models import Conversation
from conversations.pages import workdir_path


def _file(conversation: Conversation, path: str, *, may_open: bool) -> dict[str, str]:
    url = reverse("conversations:workdir-file", kwargs={"thread_id": conversation.thread_id, "path": path})
    return {"path": path, "url": url if may_open else ""}


def record_page_context(*, record: CompressionRecord, user: AbstractUser | AnonymousUser) -> dict[str, Any]:
    conversation = record.conversation
    may_open = thread_visible(thread_id=conversation.thread_id, user=user)
    saved = [p for p in map(workdir_path, record.saved_files or ()) if p]
    history = workdir_path(record.file_path)
    return {
        "record_loss": loss_line_from(record.loss_report),
        "record_may_open": may_open,
        "record_thread_url": (
            reverse("conversations:thread-detail", kwargs={"thread_id": conversation.thread_id})
            if may_open
            else ""
        ),
        "record_thread_admin_url": (
            reverse("admin:conversations_conversation_change", args=[conversation.pk])
            if user.has_perm("conversations.view_conversation")
            or user.has_perm("conversations.change_conversation")
            else ""
        ),
        "record_history": _file(conversation, history, may_open=may_open) if history else None,
        "record_saved": [_file(conversation, path, may_open=may_open) for path in saved],
    }

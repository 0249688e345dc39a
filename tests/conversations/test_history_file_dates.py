"""Issue 39 item 9: a history file's sections read with a readable date and time on its page, in the
reader's language, not the raw ISO timestamp the file keeps for the model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain_core.messages import HumanMessage

from agent_platform.workdir import workdir_for
from context_engine.summary.history import render_history_section
from tests.conversations.page_support import file_url

pytestmark = pytest.mark.django_db

PATH = "outputs/conversation_history/s.md"
AT = datetime(2026, 12, 1, 12, 31, 5, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("language", "readable"),
    [("en", "Summarized at Dec. 1, 2026, 12:31 p.m."), ("zh-hans", "2026年12月1日 12:31")],
)
def test_a_history_sections_time_reads_as_a_date(owner_client, thread, language, readable):
    workdir_for(thread).write_text(PATH, render_history_section([HumanMessage("hello", id="h1")], now=AT))
    owner_client.cookies["django_language"] = language
    page = owner_client.get(file_url(thread, PATH), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert readable in page
    assert f'<time datetime="{AT.isoformat()}">' in page  # the exact instant stays for machines
    assert f">Summarized at {AT.isoformat()}" not in page
    raw = b"".join(owner_client.get(file_url(thread, PATH) + "?raw=1").streaming_content).decode()
    assert AT.isoformat() in raw  # the file itself is unchanged: the model reads it as written

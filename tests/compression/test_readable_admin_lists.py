"""Readable lists (issue 27, item 5): compression records and agent runs name threads by title, say
the outcome in words and the tokens before → after and saved, filter by agent, outcome, trigger and
date; the record page shows the loss report and links to the thread and its files for whoever the file
view lets in."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from agent_platform.models import Agent
from compression.models import CompressionRecord
from conversations.models import AgentRun
from conversations.services import thread_create

pytestmark = pytest.mark.django_db

RECORDS = reverse("admin:compression_compressionrecord_changelist")
RUNS = reverse("admin:conversations_agentrun_changelist")
HISTORY = "outputs/conversation_history/session-1.md"
SAVED = "outputs/large_tool_results/web_search-0123456789abcdef.txt"
LOSS = {"total": 5, "in_summary": 3, "in_view": 0, "one_read": 1, "two_reads": 0, "unreachable": 1,
        "lost_identifiers": ["ABC-1234"]}  # fmt: skip


@pytest.fixture
def records(user, agent):
    planning = thread_create(user=user, agent_slug=agent.slug, title="Lisbon planning")
    untitled = thread_create(user=user, agent_slug=agent.slug)
    other_agent = Agent.objects.create(name="Researcher", slug="researcher")
    research = thread_create(user=user, agent_slug=other_agent.slug, title="Market research")
    summarized = CompressionRecord.objects.create(
        conversation=planning, trigger="manual", level="summary", status="completed", outcome="summarized",
        before_tokens=4440, after_tokens=3970, file_path=HISTORY, saved_files=[SAVED], loss_report=LOSS,
    )  # fmt: skip
    unreachable = CompressionRecord.objects.create(
        conversation=untitled, trigger="auto", level="compaction", status="completed",
        outcome="could_not_reach_budget", reason_detail={"code": "latest_message_too_large", "tokens": 27700,
        "trigger": 4096}, before_tokens=30000, after_tokens=29000,
    )  # fmt: skip
    old = CompressionRecord.objects.create(
        conversation=research, trigger="bulk", level="compaction", status="completed", outcome="compacted",
        before_tokens=8000, after_tokens=5000,
    )  # fmt: skip
    CompressionRecord.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    return {"summarized": summarized, "unreachable": unreachable, "old": old, "other_agent": other_agent}


def test_the_records_list_reads_in_words(client, admin_user, records, user):
    client.force_login(admin_user)
    page = client.get(RECORDS).content.decode()
    assert "Lisbon planning" in page and "Market research" in page
    assert f"Untitled thread of {user.username}" in page
    assert str(records["summarized"].conversation.thread_id) not in page  # titles, not UUIDs
    assert "Summarized" in page and "Compacted" in page
    assert (
        "Could not reach the budget: the latest message alone is 27.7K tokens, above the 4.1K trigger" in page
    )
    assert "4,440 → 3,970 (470 saved)" in page and "8,000 → 5,000 (3,000 saved)" in page
    assert "Researcher" in page


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ({"conversation__agent__id__exact": "AGENT"}, "Market research", "Lisbon planning"),
        ({"outcome__exact": "summarized"}, "Lisbon planning", "Market research"),
        ({"trigger__exact": "bulk"}, "Market research", "Lisbon planning"),
        ({"created_at__gte": "RECENT"}, "Lisbon planning", "Market research"),
    ],
)
def test_the_records_list_filters_by_agent_outcome_trigger_and_date(
    client, admin_user, records, query, shown, hidden
):
    client.force_login(admin_user)
    values = {
        "AGENT": str(records["other_agent"].pk),
        "RECENT": (timezone.now() - timedelta(days=7)).isoformat(),
    }
    query = {key: values.get(value, value) for key, value in query.items()}
    response = client.get(RECORDS, query)
    assert response.status_code == 200
    page = response.content.decode()
    assert shown in page and hidden not in page


def test_the_record_page_shows_the_loss_report_and_links_the_thread_and_its_files(
    client, admin_user, records
):
    record = records["summarized"]
    thread_id = record.conversation.thread_id
    client.force_login(admin_user)
    page = client.get(
        reverse("admin:compression_compressionrecord_change", args=[record.pk])
    ).content.decode()
    assert (
        "Identifiers in what was folded: 5 — 3 still in view, 1 one read away" in page and "ABC-1234" in page
    )
    assert f'href="/threads/{thread_id}/"' in page
    assert f'href="/threads/{thread_id}/files/{HISTORY}"' in page
    assert f'href="/threads/{thread_id}/files/{SAVED}"' in page
    assert reverse("admin:conversations_conversation_change", args=[record.conversation.pk]) in page


def test_a_staff_user_the_file_view_would_refuse_gets_paths_not_links(client, django_user_model, records):
    """A record of a deleted thread: its auditor (who may read every thread's records) reads the paths,
    and the file view, which opens no deleted thread, gets no link."""
    from conversations.models import Conversation

    record = records["summarized"]
    Conversation.objects.filter(pk=record.conversation_id).update(status=Conversation.Status.DELETED)
    staff = django_user_model.objects.create_user("auditor", password="pw-audit-123", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(codename__in=("view_compressionrecord", "view_conversation"))
    )
    client.force_login(staff)
    page = client.get(
        reverse("admin:compression_compressionrecord_change", args=[record.pk])
    ).content.decode()
    assert HISTORY in page and SAVED in page and "Identifiers in what was folded" in page
    assert f"/threads/{record.conversation.thread_id}/" not in page
    assert "named, not linked" in page
    # ... and the file view itself agrees.
    assert client.get(f"/threads/{record.conversation.thread_id}/files/{HISTORY}").status_code == 404


def test_the_runs_list_reads_in_words_and_filters(client, admin_user, user, agent, records):
    planning = records["summarized"].conversation
    AgentRun.objects.create(
        conversation=planning,
        status=AgentRun.Status.SUCCEEDED,
        events=[
            {"type": "compression", "status": "started", "level": "compaction", "before_tokens": 9000},
            {"type": "compression", "status": "completed", "level": "compaction", "before_tokens": 9000, "after_tokens": 6000},
            {"type": "compression", "status": "completed", "level": "summary", "before_tokens": 6000, "after_tokens": 2000},
        ],
    )  # fmt: skip
    research = records["old"].conversation
    AgentRun.objects.create(conversation=research, status=AgentRun.Status.INTERRUPTED)
    client.force_login(admin_user)
    page = client.get(RUNS).content.decode()
    assert "Lisbon planning" in page and "Market research" in page
    assert "9,000 → 2,000 (7,000 saved) in 2 compressions" in page
    assert "Interrupted (waiting on the user)" in page and "Succeeded" in page
    only = client.get(RUNS, {"conversation__agent__id__exact": records["other_agent"].pk}).content.decode()
    assert "Market research" in only and "Lisbon planning" not in only
    by_status = client.get(RUNS, {"status__exact": "succeeded"}).content.decode()
    assert "Lisbon planning" in by_status and "Market research" not in by_status
    run = AgentRun.objects.get(conversation=planning)
    detail = client.get(reverse("admin:conversations_agentrun_change", args=[run.pk])).content.decode()
    assert "Lisbon planning" in detail and "7,000 saved" in detail

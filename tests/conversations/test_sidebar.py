"""A sidebar people live in (issue 39, item 5), through the pages: date groups with pinned threads on
top, pin and archive from the sidebar (the owner's alone), the Archived scope, and a bin that restores
a deleted thread within ``THREAD_BIN_RETENTION_DAYS`` and answers a friendly 404 after it. A reader of
someone else's thread sees that thread in the sidebar, never "No threads yet."; the thread list shows
threads before the agents and no "No description yet."."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conversations.models import Conversation
from conversations.services import thread_create, thread_soft_delete
from conversations.templatetags.thread_lists import sidebar_groups

pytestmark = pytest.mark.django_db


def _page(client, thread) -> str:
    return client.get(reverse("conversations:thread-detail", args=[thread.thread_id])).content.decode()


def _sidebar(page: str) -> str:
    return page[page.index('id="thread-sidebar"') : page.index("</nav>", page.index('id="thread-sidebar"'))]


def _aged(thread: Conversation, days: int) -> Conversation:
    Conversation.objects.filter(pk=thread.pk).update(last_activity_at=timezone.now() - timedelta(days=days))
    thread.refresh_from_db()
    return thread


def test_threads_fall_into_date_groups_with_pinned_ones_on_top(client, user, agent):
    today = thread_create(user=user, agent_slug=agent.slug, title="Fresh")
    yesterday = _aged(thread_create(user=user, agent_slug=agent.slug, title="Last night"), 1)
    week = _aged(thread_create(user=user, agent_slug=agent.slug, title="Monday"), 4)
    older = _aged(thread_create(user=user, agent_slug=agent.slug, title="Spring"), 40)
    client.force_login(user)

    sidebar = _sidebar(_page(client, today))
    headings = ["Today", "Yesterday", "Last 7 days", "Older"]
    titles = ["Fresh", "Last night", "Monday", "Spring"]
    positions = [sidebar.index(f'class="sidebar-group">{h}<') for h in headings]
    assert positions == sorted(positions) and "Pinned" not in sidebar
    for heading, title, after in zip(headings, titles, [*positions[1:], len(sidebar)], strict=True):
        assert sidebar.index(f'class="sidebar-group">{heading}<') < sidebar.index(title) < after

    response = client.post(
        reverse("conversations:thread-pin", args=[older.thread_id]), {"pinned": "1", "next": "/"}
    )
    assert response.status_code == 302 and response["Location"] == "/"
    sidebar = _sidebar(_page(client, today))
    assert sidebar.index('class="sidebar-group">Pinned<') < sidebar.index("Spring") < sidebar.index("Today")
    client.post(reverse("conversations:thread-pin", args=[older.thread_id]), {"pinned": "0"})
    older.refresh_from_db()
    assert older.pinned_at is None
    assert {yesterday.pk, week.pk}  # all four stay listed
    assert all(title in _sidebar(_page(client, today)) for title in titles)


def test_groups_follow_the_calendar_day_not_24_hours():
    now = timezone.now()
    today = timezone.localdate(now)
    rows = [
        Conversation(title="a", last_activity_at=now),
        Conversation(title="b", last_activity_at=now - timedelta(days=1)),
        Conversation(title="c", last_activity_at=now - timedelta(days=6)),
        Conversation(title="d", last_activity_at=now - timedelta(days=7)),
        Conversation(title="e", last_activity_at=now - timedelta(days=90), pinned_at=now),
    ]
    groups = [(str(name), [t.title for t in items]) for name, items in sidebar_groups(rows, today=today)]
    assert groups == [
        ("Pinned", ["e"]),
        ("Today", ["a"]),
        ("Yesterday", ["b"]),
        ("Last 7 days", ["c"]),
        ("Older", ["d"]),
    ]


def test_an_archived_thread_leaves_the_sidebar_and_the_list_and_comes_back(client, user, agent):
    kept = thread_create(user=user, agent_slug=agent.slug, title="Kept")
    boxed = thread_create(user=user, agent_slug=agent.slug, title="Boxed away")
    client.force_login(user)

    client.post(reverse("conversations:thread-archive", args=[boxed.thread_id]), {"archived": "1"})
    assert "Boxed away" not in _sidebar(_page(client, kept))
    assert "Boxed away" not in client.get("/").content.decode()
    archived = client.get("/?scope=archived").content.decode()
    assert "Boxed away" in archived and "Kept" not in archived
    # Still readable: its own page shows it under "Archived" with the way back.
    sidebar = _sidebar(_page(client, boxed))
    assert 'class="sidebar-group">Archived<' in sidebar and "Unarchive" in sidebar
    client.post(reverse("conversations:thread-archive", args=[boxed.thread_id]), {"archived": "0"})
    assert "Boxed away" in client.get("/").content.decode()


def test_sidebar_writes_are_the_owners_alone(client, user, other_user, agent):
    thread = thread_create(user=user, agent_slug=agent.slug, title="Mine")
    client.force_login(other_user)
    for name, data in (("thread-pin", {"pinned": "1"}), ("thread-archive", {"archived": "1"})):
        assert client.post(reverse(f"conversations:{name}", args=[thread.thread_id]), data).status_code == 404
    thread.refresh_from_db()
    assert (thread.pinned_at, thread.archived_at) == (None, None)
    # A "next" elsewhere is not followed.
    client.force_login(user)
    response = client.post(
        reverse("conversations:thread-pin", args=[thread.thread_id]),
        {"pinned": "1", "next": "https://evil.example/"},
    )
    assert response["Location"] == reverse("conversations:thread-detail", args=[thread.thread_id])


def test_a_deleted_thread_waits_in_the_bin_then_is_gone_with_a_friendly_404(
    client, user, other_user, agent, settings
):
    settings.THREAD_BIN_RETENTION_DAYS = 30
    thread = thread_create(user=user, agent_slug=agent.slug, title="Oops")
    client.force_login(user)
    response = client.post(reverse("conversations:thread-delete", args=[thread.thread_id]), follow=True)
    assert "stays in the bin for 30 days" in response.content.decode()
    assert "Oops" in client.get(reverse("conversations:thread-bin")).content.decode()

    # Its page: a 404 that offers the restore, to its owner only.
    page = client.get(reverse("conversations:thread-detail", args=[thread.thread_id]))
    assert page.status_code == 404 and 'id="thread-in-bin"' in page.content.decode()
    client.force_login(other_user)
    page = client.get(reverse("conversations:thread-detail", args=[thread.thread_id]))
    assert page.status_code == 404 and "Oops" not in page.content.decode()
    assert "Oops" not in client.get(reverse("conversations:thread-bin")).content.decode()
    assert client.post(reverse("conversations:thread-restore", args=[thread.thread_id])).status_code == 404

    client.force_login(user)
    response = client.post(reverse("conversations:thread-restore", args=[thread.thread_id]))
    assert response["Location"] == reverse("conversations:thread-detail", args=[thread.thread_id])
    thread.refresh_from_db()
    assert (thread.status, thread.deleted_at) == (Conversation.Status.ACTIVE, None)
    assert client.get(reverse("conversations:thread-detail", args=[thread.thread_id])).status_code == 200

    # Deleted 31 days ago: out of the bin, and the page says so kindly.
    thread_soft_delete(thread_id=thread.thread_id, user=user)
    Conversation.objects.filter(pk=thread.pk).update(deleted_at=timezone.now() - timedelta(days=31))
    assert "Oops" not in client.get(reverse("conversations:thread-bin")).content.decode()
    response = client.post(reverse("conversations:thread-restore", args=[thread.thread_id]))
    assert response.status_code == 404 and 'id="thread-gone"' in response.content.decode()
    page = client.get(reverse("conversations:thread-detail", args=[thread.thread_id]))
    assert page.status_code == 404 and 'id="thread-gone"' in page.content.decode()
    assert "more than 30 days ago" in page.content.decode()
    thread.refresh_from_db()
    assert thread.status == Conversation.Status.DELETED


def test_a_reader_of_a_shared_thread_sees_it_in_the_sidebar_not_no_threads_yet(
    client, user, other_user, agent
):
    thread = thread_create(user=user, agent_slug=agent.slug, title="Alice's plan")
    other_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(other_user)
    sidebar = _sidebar(_page(client, thread))
    assert "No threads yet." not in sidebar
    assert 'class="sidebar-group">Reading<' in sidebar and "Alice&#x27;s plan" in sidebar
    assert "alice's thread" in sidebar
    assert "sidebar-menu" not in sidebar  # no rename, pin, archive or delete on someone else's thread


def test_the_list_shows_threads_before_the_agents_and_no_placeholder_description(client, user, agent):
    from agent_platform.models import Agent

    Agent.objects.create(name="Quiet agent", slug="quiet", description="")
    Agent.objects.create(name="Chatty agent", slug="chatty", description="Talks about trains.")
    thread_create(user=user, agent_slug=agent.slug, title="First thread")
    client.force_login(user)
    page = client.get("/").content.decode()
    assert "No description yet." not in page
    assert page.index("First thread") < page.index('id="agents"') < page.index("Talks about trains.")
    assert 'href="#agents"' in page and page.index('href="#agents"') < page.index("First thread")


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    ages=st.lists(st.tuples(st.integers(min_value=0, max_value=60 * 24 * 400), st.booleans()), max_size=30)
)
def test_every_thread_is_in_exactly_one_group_in_the_fixed_order(ages):
    """Property: whatever the activity times (minutes ago) and pins, each thread is listed once, pinned
    ones under Pinned, the others under the heading of their calendar day, headings in their order and
    threads keeping the order they came in."""
    now = timezone.now()
    today = timezone.localdate(now)
    rows = [
        Conversation(
            title=str(i), last_activity_at=now - timedelta(minutes=m), pinned_at=now if pin else None
        )
        for i, (m, pin) in enumerate(ages)
    ]
    groups = sidebar_groups(rows, today=today)
    order = ["Pinned", "Today", "Yesterday", "Last 7 days", "Older"]
    names = [str(name) for name, _items in groups]
    assert names == [name for name in order if name in names] and all(items for _name, items in groups)
    listed = [thread for _name, items in groups for thread in items]
    assert sorted(t.title for t in listed) == sorted(t.title for t in rows)
    for name, items in groups:
        assert [rows.index(t) for t in items] == sorted(rows.index(t) for t in items)
        for thread in items:
            days = (today - timezone.localdate(thread.last_activity_at)).days
            expected = (
                "Pinned"
                if thread.pinned_at
                else "Today"
                if days <= 0
                else "Yesterday"
                if days == 1
                else "Last 7 days"
                if days < 7
                else "Older"
            )
            assert str(name) == expected

"""Thread pages beyond the transcript: rename, automatic titles, search, delete with confirmation,
reading order of queued messages, the buffered stream after a reload, and the favicon."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations import run_signals
from conversations.models import AgentRun, Conversation
from conversations.pages import transcript_order
from conversations.services import message_intake, thread_create
from conversations.services.threads import AUTO_TITLE_CHARS, title_from_message

pytestmark = pytest.mark.django_db


def _url(name: str, thread, **kwargs) -> str:
    return reverse(f"conversations:{name}", kwargs={"thread_id": thread.thread_id, **kwargs})


def test_an_untitled_thread_is_named_after_its_first_message(user, agent, django_capture_on_commit_callbacks):
    thread = thread_create(user=user, agent_slug=agent.slug)
    with django_capture_on_commit_callbacks(execute=False):
        message_intake(thread_id=thread.thread_id, user=user, content="\n  Plan a   weekend\nin Porto")
        message_intake(thread_id=thread.thread_id, user=user, content="something else")
    thread.refresh_from_db()
    assert thread.title == "Plan a weekend"


def test_an_automatic_title_is_clipped():
    title = title_from_message("word " * 40)
    assert len(title) == AUTO_TITLE_CHARS and title.endswith("…")


def test_a_given_title_is_kept(thread, user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        message_intake(thread_id=thread.thread_id, user=user, content="hello")
    thread.refresh_from_db()
    assert thread.title == "Test thread"


def test_rename_from_the_page_and_the_api(owner_client, thread):
    response = owner_client.post(_url("thread-rename", thread), {"title": "  Renamed  "})
    assert response.status_code == 302
    thread.refresh_from_db()
    assert thread.title == "Renamed"
    response = owner_client.patch(
        f"/api/threads/{thread.thread_id}", {"title": "By API"}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["title"] == "By API"
    too_long = owner_client.patch(
        f"/api/threads/{thread.thread_id}", {"title": "x" * 201}, content_type="application/json"
    )
    assert too_long.status_code == 422


def test_search_by_title_on_the_thread_list(owner_client, user, agent):
    for title in ("Trip to Porto", "Budget review", "porto wine"):
        thread_create(user=user, agent_slug=agent.slug, title=title)
    body = owner_client.get(reverse("conversations:thread-list"), {"q": "porto"}).content.decode()
    assert "Trip to Porto" in body and "porto wine" in body and "Budget review" not in body
    body = owner_client.get(reverse("conversations:thread-list"), {"q": "zzz"}).content.decode()
    assert "No thread title or message contains that." in body


def test_delete_asks_for_confirmation_first(owner_client, thread):
    response = owner_client.get(_url("thread-delete", thread))
    assert response.status_code == 200
    assert "Delete this thread?" in response.content.decode()
    thread.refresh_from_db()
    assert thread.status == Conversation.Status.ACTIVE
    owner_client.post(_url("thread-delete", thread))
    thread.refresh_from_db()
    assert thread.status == Conversation.Status.DELETED


def test_deleting_a_thread_stops_its_running_run(owner_client, thread):
    run = AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)
    owner_client.post(_url("thread-delete", thread))
    run.refresh_from_db()
    assert run.cancel_requested_at is not None


class _Row:
    def __init__(self, seq: int, run_id: int | None) -> None:
        self.seq, self.run_id = seq, run_id


def test_a_message_sent_during_a_run_reads_after_that_runs_reply():
    # seq 2 was sent while run 1 was running; run 1 then wrote seqs 3 and 4.
    rows = [_Row(1, 1), _Row(2, 2), _Row(3, 1), _Row(4, 1), _Row(5, 2), _Row(6, None)]
    assert [row.seq for row in transcript_order(rows)] == [1, 3, 4, 2, 5, 6]


def test_the_page_shows_a_queued_message_after_the_running_reply_and_marks_it(
    owner_client, user, thread, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        first = message_intake(thread_id=thread.thread_id, user=user, content="first")
        AgentRun.objects.filter(pk=first.run.pk).update(status="running")
        message_intake(thread_id=thread.thread_id, user=user, content="second")
    from conversations.services.threads import NewMessage, conversation_lock, message_append

    with conversation_lock(conversation_id=thread.pk):
        message_append(
            conversation=thread, message=NewMessage(role="assistant", content="first reply", run=first.run)
        )
    body = owner_client.get(_url("thread-detail", thread)).content.decode()
    assert body.index("first reply") < body.index("<p>second</p>")
    assert 'data-run-status="queued"' in body
    assert "Remove from queue" in body


def test_a_reload_during_a_reply_renders_the_text_streamed_so_far(owner_client, thread):
    run = AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)
    run_signals.stream_set(run_id=run.pk, text="Half of <the> reply")
    body = owner_client.get(_url("thread-detail", thread)).content.decode()
    assert 'id="stream-body">Half of &lt;the&gt; reply</div>' in body
    assert owner_client.get(_url("fragment-stream", thread)).json() == {
        "run_id": run.pk,
        "text": "Half of <the> reply",
    }
    run_signals.run_signals_clear(run_id=run.pk)


def test_the_favicon_exists(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("favicon.svg")


def test_a_too_long_message_is_refused_in_the_readers_language(owner_client, thread):
    owner_client.cookies["django_language"] = "zh-hans"
    response = owner_client.post(
        _url("message-send", thread), {"content": "x" * 100_001}, headers={"X-Requested-With": "fetch"}
    )
    assert response.status_code == 422
    assert response.content.decode() == "消息超过 100000 个字符。"


def test_admin_columns_and_model_names_are_translated(client, django_user_model, thread):
    admin = django_user_model.objects.create_superuser("boss", password="pw-boss-123")
    AgentRun.objects.create(conversation=thread)
    client.force_login(admin)
    client.cookies["django_language"] = "zh-hans"
    body = client.get("/admin/conversations/agentrun/").content.decode()
    for word in ("智能体运行", "状态", "开始时间", "结束时间"):
        assert word in body
    for english in (">agent runs<", ">status<", ">started at<"):
        assert english not in body.lower()


def test_a_message_whose_run_was_stopped_midway_is_not_marked_not_sent(owner_client, thread):
    from django.utils import timezone

    from conversations.services.threads import NewMessage, conversation_lock, message_append

    stopped = AgentRun.objects.create(conversation=thread, status="cancelled", started_at=timezone.now())
    dropped = AgentRun.objects.create(conversation=thread, status="cancelled")
    with conversation_lock(conversation_id=thread.pk):
        message_append(
            conversation=thread, message=NewMessage(role="user", content="was answered in part", run=stopped)
        )
        message_append(
            conversation=thread, message=NewMessage(role="user", content="never sent", run=dropped)
        )
    body = owner_client.get(_url("thread-detail", thread)).content.decode()
    assert body.count('data-run-status="stopped"') == 1
    assert body.count('data-run-status="cancelled"') == 1

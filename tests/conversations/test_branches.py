"""Branches (issue 39 item 2): every version's whole branch, continuing an earlier branch (the
model's view follows the page), numbering without holes, forks into a new thread, search that opens
the version holding a match, exports that mark versions."""

from __future__ import annotations

import re

import pytest

from agent_platform.runtime.graph import state_repository_for
from conversations.branching import CONTINUE, ForkStep, branch_holding, branches_replay
from conversations.models import AgentRun, Conversation, Message, MessageFork, ThreadShare
from conversations.selectors import visible_messages
from conversations.services.versions import message_edit, reply_regenerate

pytestmark = pytest.mark.django_db


@pytest.fixture
def edit(thread, user, django_capture_on_commit_callbacks):
    def send(message, content):
        with django_capture_on_commit_callbacks(execute=True):
            result = message_edit(
                thread_id=thread.thread_id, message_id=message.pk, user=user, content=content
            )
        result.run.refresh_from_db()
        assert result.run.status == AgentRun.Status.SUCCEEDED, result.run.error_detail
        return result.message

    return send


def _model_view(thread) -> list[str]:
    return [
        m.content if isinstance(m.content, str) else m.text
        for m in state_repository_for(thread).get_values()["messages"]
    ]


def _shown(thread) -> list[str]:
    return [m.content for m in visible_messages(conversation=thread).order_by("seq")]


def _post(client, url, capture, **json):
    with capture(execute=True):
        return client.post(url, json or None, content_type="application/json")


def test_replay_keeps_every_branch_and_a_continue_restores_one_whole():
    # 1..6 shown; edit at 3 (next seq 7); regenerate the reply at 9 (next 11); continue branch 0 (next 12).
    steps = [ForkStep("edit", 3, 7), ForkStep("regenerate", 10, 11), ForkStep(CONTINUE, 10, 12, 0)]
    branches = branches_replay(steps)
    assert branches[0] == ((1, 7),)
    assert branches[1] == ((1, 3), (7, 11))
    assert branches[2] == ((1, 3), (7, 10), (11, 12))
    assert branches[3] == ((1, 7), (12, None))
    assert branch_holding(branches, 5) == 3  # the current branch holds it again
    assert branch_holding(branches, 10) == 1
    assert branch_holding(branches, 11) == 2


def test_continue_makes_an_earlier_branch_current_and_the_model_view_follows(
    owner_client, thread, say, edit, django_capture_on_commit_callbacks
):
    say("Alpha one")
    second = say("Beta two")
    say("Gamma three")
    old_view = _model_view(thread)
    old_shown = _shown(thread)
    edit(second, "Beta edited")
    assert "Gamma three" not in _shown(thread)

    url = f"/api/threads/{thread.thread_id}/messages/{second.pk}/continue"
    response = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="c-1")
    assert response.status_code == 200, response.content
    assert response.json()["current"] is True
    assert _shown(thread) == old_shown  # the transcript is never rewritten, only chosen again
    assert _model_view(thread) == old_view
    fork = MessageFork.objects.get(conversation=thread, kind=MessageFork.Kind.CONTINUE)
    assert fork.run is None and fork.restored_branch == 0 and fork.checkpoint_id

    # The same request again: the first answer, no second record.
    again = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="c-1")
    assert again.status_code == 200 and again.json()["created"] is False
    assert MessageFork.objects.filter(kind=MessageFork.Kind.CONTINUE).count() == 1

    # A new turn goes on from the restored branch, and the model reads that branch.
    say("Delta four")
    shown = _shown(thread)
    assert shown[: len(old_shown)] == old_shown and "Beta edited" not in shown
    view = _model_view(thread)
    assert "Gamma three" in view and "Beta edited" not in view and "Delta four" in view


def test_a_fork_copies_the_branch_up_to_a_message_with_its_model_view_and_files(
    owner_client, thread, say, edit, django_capture_on_commit_callbacks
):
    from agent_platform.workdir import workdir_for

    first = say("Alpha one")
    second = say("Beta two")
    say("Gamma three")
    workdir_for(thread).write_text("uploads/abc-notes.txt", "kept")
    edit(second, "Beta edited")
    reply = (
        Message.objects.filter(conversation=thread, seq__gt=second.seq, role="assistant")
        .order_by("seq")
        .first()
    )
    url = f"/api/threads/{thread.thread_id}/messages/{reply.pk}/fork"
    response = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="f-1")
    assert response.status_code == 201, response.content
    body = response.json()
    new = Conversation.objects.get(thread_id=body["thread_id"])
    copied = [m.content for m in new.messages.order_by("seq")]
    assert copied[0] == "Alpha one" and copied[2] == "Beta two" and "Gamma three" not in copied
    assert [m.seq for m in new.messages.order_by("seq")] == list(range(1, len(copied) + 1))
    view = _model_view(new)
    assert view == copied  # the new thread's model reads what its page shows
    assert workdir_for(new).read_text("uploads/abc-notes.txt") == "kept"
    assert new.owner == thread.owner and new.forked_from_id == reply.pk
    again = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="f-1")
    assert again.status_code == 200 and again.json()["thread_id"] == body["thread_id"]
    # The source thread is unchanged.
    assert "Beta edited" in _shown(thread) and first.pk


def _numbers(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'class="seq-number muted"[^>]*>#(\d+)<', html)]


def test_the_page_and_the_api_number_the_branch_shown_without_holes(
    owner_client, thread, user, say, edit, django_capture_on_commit_callbacks
):
    say("Alpha one")
    second = say("Beta two")
    say("Gamma three")
    edit(second, "Beta edited")
    with django_capture_on_commit_callbacks(execute=True):
        reply_regenerate(thread_id=thread.thread_id, user=user)
    shown = visible_messages(conversation=thread).count()
    assert thread.messages.order_by("-seq").first().seq > shown  # the transcript has holes
    html = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert _numbers(html) == list(range(1, shown + 1))
    rows = owner_client.get(f"/api/threads/{thread.thread_id}/messages").json()
    assert [row["number"] for row in rows] == list(range(1, shown + 1))
    # A page of newer messages goes on from where the page is.
    later = owner_client.get(
        f"/threads/{thread.thread_id}/fragments/messages?after={rows[1]['seq']}"
    ).content.decode()
    assert _numbers(later) == list(range(3, shown + 1))


def test_an_earlier_version_shows_its_whole_branch_read_only_with_its_actions(
    owner_client, client, thread, say, edit, django_user_model
):
    say("Alpha one")
    second = say("Beta two")
    say("Gamma three")
    say("Delta four")
    edit(second, "Beta edited")
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    link = f"/threads/{thread.thread_id}/branches/{second.pk}/"
    assert link in page  # the version's pane links to its branch

    html = owner_client.get(link).content.decode()
    for text in ("Alpha one", "Beta two", "Gamma three", "Delta four"):
        assert text in html  # every message of that branch, not only the first reply
    assert "Beta edited" not in html
    assert _numbers(html) == list(range(1, 9))
    assert 'id="branch-continue"' in html and "Continue from this version" in html
    assert "edit-open" not in html and "pin-toggle" not in html  # read-only

    reader = django_user_model.objects.create_user("reader", password="pw-reader-123")
    ThreadShare.objects.create(conversation=thread, user=reader)
    client.force_login(reader)
    html = client.get(link).content.decode()
    assert "Delta four" in html and 'id="branch-continue"' not in html and "Fork from here" in html
    refused = client.post(
        f"/api/threads/{thread.thread_id}/messages/{second.pk}/continue", {}, content_type="application/json"
    )
    assert refused.status_code == 404 and refused.json()["code"] == "thread_not_found"


def test_a_share_reader_forks_into_a_thread_of_their_own(client, thread, say, django_user_model):
    say("Alpha one")
    reply = say("Beta two")
    reader = django_user_model.objects.create_user("reader", password="pw-reader-123")
    ThreadShare.objects.create(conversation=thread, user=reader)
    client.force_login(reader)
    response = client.post(f"/threads/{thread.thread_id}/branches/{reply.pk}/fork", {"request_id": "k"})
    assert response.status_code == 302
    new = Conversation.objects.get(owner=reader)
    assert response["Location"] == f"/threads/{new.thread_id}/"
    source = [m.content for m in visible_messages(conversation=thread).order_by("seq")]
    assert [m.content for m in new.messages.order_by("seq")] == source[: source.index("Beta two") + 1]
    assert thread.owner != reader
    # The reader's thread is theirs: they may continue in it.
    assert client.get(f"/threads/{new.thread_id}/").status_code == 200


def test_search_opens_at_the_matching_message_whichever_version_holds_it(owner_client, thread, say, edit):
    say("Alpha one")
    second = say("Beta two")
    gamma = say("Gamma zebra three")
    edit(second, "Beta edited")
    say("Epsilon kiwi")
    rows = owner_client.get("/api/threads?q=zebra").json()
    hit = Message.objects.get(pk=rows[0]["hit_message_id"])  # the newest match: the message or its reply
    assert len(rows) == 1 and hit.seq >= gamma.seq and "zebra" in hit.content
    assert not visible_messages(conversation=thread).filter(pk=hit.pk).exists()  # an earlier version
    url = f"/threads/{thread.thread_id}/branches/{hit.pk}/#message-{hit.seq}"
    assert rows[0]["hit_url"] == url
    page = owner_client.get(url.split("#")[0]).content.decode()
    assert f'id="message-{hit.seq}"' in page and "branch-target" in page and "Gamma zebra three" in page
    listing = owner_client.get("/?q=zebra").content.decode()
    assert f'href="{url}"' in listing
    kiwi = owner_client.get("/api/threads?q=kiwi").json()[0]
    assert kiwi["hit_url"].startswith(f"/threads/{thread.thread_id}/#message-")


def test_exports_mark_which_messages_replaced_which(
    owner_client, thread, user, say, edit, django_capture_on_commit_callbacks
):
    say("Alpha one")
    second = say("Beta two")
    say("Gamma three")
    edited = edit(second, "Beta edited")
    with django_capture_on_commit_callbacks(execute=True):
        reply_regenerate(thread_id=thread.thread_id, user=user)
    data = owner_client.get(f"/api/threads/{thread.thread_id}/export.json").json()
    assert data["version"] == 2
    edit_fork, regen_fork = data["forks"]
    assert edit_fork["kind"] == "edit" and edit_fork["message_seq"] == second.seq
    assert edit_fork["replaced"][0] == second.seq and edit_fork["by_seq"] == edited.seq
    assert regen_fork["kind"] == "regenerate" and regen_fork["message_seq"] == edited.seq
    current = {m["seq"]: m["current"] for m in data["messages"]}
    assert current[second.seq] is False and current[edited.seq] is True
    assert all(current[s] is False for s in edit_fork["replaced"] + regen_fork["replaced"])

    text = owner_client.get(f"/api/threads/{thread.thread_id}/export.md").content.decode()
    marker = f"New version of message {second.seq} (edited)"
    assert marker in text and "regenerated: what follows replaces messages" in text
    # The marker stands between the versions: after the replaced rows, before the replacement.
    assert text.index("Gamma three") < text.index(marker) < text.index("Beta edited")
    assert "(earlier version)" in text


def test_continue_goes_back_and_forth_between_regenerated_replies(
    owner_client, thread, user, say, django_capture_on_commit_callbacks
):
    say("Alpha one")
    say("Beta two")
    first_shown, first_view = _shown(thread), _model_view(thread)
    first_reply = visible_messages(conversation=thread).filter(role="assistant").order_by("-seq").first()
    with django_capture_on_commit_callbacks(execute=True):
        reply_regenerate(thread_id=thread.thread_id, user=user)
    second_shown, second_view = _shown(thread), _model_view(thread)
    second_reply = visible_messages(conversation=thread).filter(role="assistant").order_by("-seq").first()
    assert second_reply.pk != first_reply.pk

    base = f"/api/threads/{thread.thread_id}/messages"
    capture = django_capture_on_commit_callbacks
    assert _post(owner_client, f"{base}/{first_reply.pk}/continue", capture).status_code == 200
    assert (_shown(thread), _model_view(thread)) == (first_shown, first_view)
    assert _post(owner_client, f"{base}/{second_reply.pk}/continue", capture).status_code == 200
    assert (_shown(thread), _model_view(thread)) == (second_shown, second_view)
    # The version switcher follows: the reply shown is the current version.
    versions = owner_client.get(f"{base}/{first_reply.run.input_message_id}/versions").json()
    assert versions["replies"]["total"] == 2 and versions["replies"]["current"] == 2


def test_continue_is_refused_while_a_run_or_a_compression_holds_the_thread(
    owner_client, thread, user, say, edit, django_capture_on_commit_callbacks
):
    from compression.models import CompressionJob

    say("Alpha one")
    second = say("Beta two")
    edit(second, "Beta edited")
    url = f"/api/threads/{thread.thread_id}/messages/{second.pk}/continue"
    run = AgentRun.objects.create(conversation=thread, status=AgentRun.Status.QUEUED)
    response = _post(owner_client, url, django_capture_on_commit_callbacks)
    assert (
        response.status_code == 409
        and response.json()["code"] == "thread_busy"
        and response.json()["message"]
    )
    run.status = AgentRun.Status.SUCCEEDED
    run.save()
    job = CompressionJob.objects.create(
        conversation=thread, requested_by=user, trigger="manual", status="running"
    )
    response = _post(owner_client, url, django_capture_on_commit_callbacks)
    assert response.status_code == 409 and response.json()["code"] == "thread_busy"
    assert not MessageFork.objects.filter(kind=MessageFork.Kind.CONTINUE).exists()
    job.status = "succeeded"
    job.save()
    assert _post(owner_client, url, django_capture_on_commit_callbacks).status_code == 200


def test_a_branch_no_checkpoint_held_is_not_continued_and_bad_input_is_answered(
    owner_client, thread, say, edit, django_capture_on_commit_callbacks
):
    say("Alpha one")
    second = say("Beta two")
    edit(second, "Beta edited")
    # A row the model never saw, on the earlier branch (a turn stopped in the queue, say).
    stray = Message.objects.create(
        conversation=thread, seq=99, role="user", content="never sent", lc_message_id="never-seen"
    )
    MessageFork.objects.create(
        conversation=thread,
        kind=MessageFork.Kind.EDIT,
        message=stray,
        hidden_from_seq=99,
        hidden_to_seq=100,
        checkpoint_id="x",
    )
    url = f"/api/threads/{thread.thread_id}/messages/{stray.pk}/continue"
    response = _post(owner_client, url, django_capture_on_commit_callbacks)
    assert response.status_code == 422 and response.json()["code"] == "branch_not_restorable"
    base = f"/api/threads/{thread.thread_id}/messages"
    assert (
        owner_client.post(f"{base}/999999/continue", {}, content_type="application/json").status_code == 404
    )
    blank = owner_client.post(
        f"{base}/{second.pk}/continue", {"request_id": " "}, content_type="application/json"
    )
    assert blank.status_code == 400 and blank.json()["code"] == "invalid_request_id"
    assert owner_client.get(f"{base}/999999/branch").json()["code"] == "message_not_found"
    fork = owner_client.post(f"{base}/{stray.pk}/fork", {}, content_type="application/json")
    assert fork.status_code == 422 and fork.json()["code"] == "branch_not_restorable"


def test_continue_reads_the_checkpoint_recorded_when_the_branch_was_left(
    owner_client, thread, say, edit, monkeypatch, django_capture_on_commit_callbacks
):
    from agent_platform.runtime.state_repository import AgentStateRepository

    say("Alpha one")
    second = say("Beta two")
    old_view = _model_view(thread)
    edit(second, "Beta edited")
    assert MessageFork.objects.get(conversation=thread).left_checkpoint_id

    def walked(*args, **kwargs):
        raise AssertionError("the whole history was walked")

    monkeypatch.setattr(AgentStateRepository, "checkpoint_matching", walked)
    url = f"/api/threads/{thread.thread_id}/messages/{second.pk}/continue"
    assert _post(owner_client, url, django_capture_on_commit_callbacks).status_code == 200
    assert _model_view(thread) == old_view


def test_a_fork_after_a_summary_keeps_the_summary_its_history_file_and_attachments_readable(
    owner_client, user, thread, keep_four, say, django_capture_on_commit_callbacks
):
    from agent_platform.workdir import workdir_for
    from compression.services.compress import thread_compress
    from context_engine.state import SUMMARY_EVENT_KEY
    from conversations.models import Attachment

    first = say("Always answer in French.")
    workdir_for(thread).write_text("uploads/0123456789ab-notes.md", "Notes kept whole.")
    Attachment.objects.create(
        conversation=thread,
        message=first,
        name="notes.md",
        path="uploads/0123456789ab-notes.md",
        mime_type="text/markdown",
        kind="text",
        size=17,
        sha256="0" * 64,
    )
    for n in range(3):
        say(f"Question number {n}. " + "Some background that the summary can shorten. " * 40)
    outcome = thread_compress(thread_id=thread.thread_id, user=user)
    assert outcome.result["status"] == "completed"
    history = state_repository_for(thread).get_values()[SUMMARY_EVENT_KEY]["file_path"]
    last = say("A question after the summary")
    reply = visible_messages(conversation=thread).filter(seq__gt=last.seq).order_by("-seq").first()

    response = _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{reply.pk}/fork",
        django_capture_on_commit_callbacks,
    )
    assert response.status_code == 201, response.content
    new = Conversation.objects.get(thread_id=response.json()["thread_id"])
    values = state_repository_for(new).get_values()
    assert values[SUMMARY_EVENT_KEY]["file_path"] == history  # the model's view: the same summary
    assert workdir_for(new).read_text(history.removeprefix("/")).strip()  # and its history file
    copied = Attachment.objects.get(conversation=new)
    assert copied.message.conversation_id == new.pk and copied.message.content == "Always answer in French."
    page = owner_client.get(f"/threads/{new.thread_id}/files/{copied.path}")
    assert page.status_code == 200 and b"Notes kept whole." in b"".join(page)


# --- Review of the branches change: failures, races and odd input must leave nothing behind ---


def test_a_fork_that_fails_after_copying_files_leaves_no_thread_and_no_files(thread, user, say, monkeypatch):
    from agent_platform.workdir import workdir_for
    from context_engine.errors import StoreError
    from conversations.services import branches

    say("Alpha one")
    reply = say("Beta two")
    workdir_for(thread).write_text("uploads/abc-notes.txt", "kept")
    real = branches.state_repository_for
    targets = []

    class Refusing:
        def __init__(self, conversation):
            targets.append(conversation)

        def update(self, values):
            raise RuntimeError("the checkpoint store refused")

    def repository_for(conversation):
        return real(conversation) if conversation.pk == thread.pk else Refusing(conversation)

    monkeypatch.setattr(branches, "state_repository_for", repository_for)
    with pytest.raises(RuntimeError):
        branches.branch_fork(thread_id=thread.thread_id, message_id=reply.pk, user=user, request_id="f-x")
    assert Conversation.objects.filter(owner=user).count() == 1  # the source alone
    [target] = targets
    try:
        left = workdir_for(target).list_dir(".")
    except StoreError:
        left = []
    assert left == []  # the files copied for the thread that was never made are gone
    # The source keeps its own.
    assert workdir_for(thread).read_text("uploads/abc-notes.txt") == "kept"


def test_a_fork_double_submitted_at_once_answers_the_first_thread_not_500(
    owner_client, thread, user, say, monkeypatch, django_capture_on_commit_callbacks
):
    from conversations.services import branches
    from conversations.services.intake import operation_key

    say("Alpha one")
    reply = say("Beta two")
    real = branches._fork_rows
    winner = []

    def rows_while_the_twin_commits(source, message_id):
        # The same request_id, sent twice at once: the other request made its thread meanwhile.
        if not winner:
            winner.append(
                Conversation.objects.create(
                    owner=user,
                    agent=source.agent,
                    title="twin",
                    fork_request_id=operation_key("fork", "twice"),
                )
            )
        return real(source, message_id)

    monkeypatch.setattr(branches, "_fork_rows", rows_while_the_twin_commits)
    url = f"/api/threads/{thread.thread_id}/messages/{reply.pk}/fork"
    response = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="twice")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["thread_id"] == str(winner[0].thread_id) and body["created"] is False
    assert Conversation.objects.filter(owner=user).count() == 2  # the source and the twin's thread


def test_a_fork_of_a_thread_whose_agent_was_disabled_makes_no_thread(
    owner_client, thread, user, say, django_capture_on_commit_callbacks
):
    say("Alpha one")
    reply = say("Beta two")
    thread.agent.is_enabled = False
    thread.agent.save(update_fields=["is_enabled"])
    url = f"/api/threads/{thread.thread_id}/messages/{reply.pk}/fork"
    response = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="f-off")
    assert response.status_code == 404 and response.json()["code"] == "agent_not_found"
    assert Conversation.objects.filter(owner=user).count() == 1


@pytest.mark.parametrize("message_id", ["99999999999999999999999", "-1", "0", "abc"])
def test_branch_routes_answer_odd_message_ids_with_a_coded_4xx(owner_client, thread, say, message_id):
    say("Alpha one")
    base = f"/api/threads/{thread.thread_id}/messages/{message_id}"
    for method, url in (("get", f"{base}/branch"), ("post", f"{base}/continue"), ("post", f"{base}/fork")):
        response = getattr(owner_client, method)(url, content_type="application/json")
        assert 400 <= response.status_code < 500, (url, response.status_code)
        assert set(response.json()) >= {"code", "message"}, response.content


def test_branch_routes_answer_bad_bodies_other_threads_and_binned_threads_with_a_coded_4xx(
    owner_client, thread, user, agent, say
):
    say("Alpha one")
    reply = say("Beta two")
    other = Conversation.objects.create(owner=user, agent=agent, title="other")
    foreign = Message.objects.create(conversation=other, seq=1, role="user", content="elsewhere")
    base = f"/api/threads/{thread.thread_id}/messages"
    cases = [
        (f"{base}/{reply.pk}/continue", {"request_id": "x" * 10_000}),
        (f"{base}/{reply.pk}/fork", {"request_id": "x" * 10_000}),
        (f"{base}/{reply.pk}/fork", {"title": "t" * 10_000}),
        (f"{base}/{reply.pk}/fork", {"request_id": 12}),
        (f"{base}/{reply.pk}/continue", "not json"),
        (f"{base}/{foreign.pk}/continue", {}),
        (f"{base}/{foreign.pk}/fork", {}),
    ]
    for url, body in cases:
        data = body if isinstance(body, str) else __import__("json").dumps(body)
        response = owner_client.post(url, data, content_type="application/json")
        assert 400 <= response.status_code < 500, (url, body, response.status_code)
        assert set(response.json()) >= {"code", "message"}, response.content
    assert owner_client.get(f"{base}/{foreign.pk}/branch").status_code == 404
    assert owner_client.get(f"/threads/{thread.thread_id}/branches/{foreign.pk}/").status_code == 404
    thread.status = Conversation.Status.DELETED
    thread.save(update_fields=["status"])
    for url in (f"{base}/{reply.pk}/continue", f"{base}/{reply.pk}/fork"):
        response = owner_client.post(url, {}, content_type="application/json")
        assert response.status_code == 404 and response.json()["code"] == "thread_not_found"
    assert owner_client.get(f"{base}/{reply.pk}/branch").status_code == 404


def test_a_forked_thread_offers_no_regenerate_on_copied_replies(
    owner_client, thread, say, django_capture_on_commit_callbacks
):
    say("Alpha one")
    reply = say("Beta two")
    url = f"/api/threads/{thread.thread_id}/messages/{reply.pk}/fork"
    new = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="f-r").json()
    page = owner_client.get(new["url"]).content.decode()
    assert "Beta two" in page and 'class="link regenerate"' not in page and "edit-open" not in page
    refused = owner_client.post(
        f"/api/threads/{new['thread_id']}/regenerate", {}, content_type="application/json"
    )
    assert 400 <= refused.status_code < 500 and "code" in refused.json()


def test_continue_after_a_summary_restores_the_branch_and_the_model_view_equals_the_transcript(
    owner_client, user, thread, keep_four, say, edit, django_capture_on_commit_callbacks
):
    from compression.services.compress import thread_compress
    from tests.conversations.consistency import model_visible

    say("Always answer in French.")
    for n in range(3):
        say(f"Question number {n}. " + "Some background that the summary can shorten. " * 40)
    assert thread_compress(thread_id=thread.thread_id, user=user).result["status"] == "completed"
    asked = say("A question after the summary")
    old_shown, old_view = _shown(thread), _model_view(thread)
    edit(asked, "The same question, put otherwise")
    url = f"/api/threads/{thread.thread_id}/messages/{asked.pk}/continue"
    response = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="after-summary")
    assert response.status_code == 200, response.content
    assert (_shown(thread), _model_view(thread)) == (old_shown, old_view)
    say("And one more")
    assert "The same question, put otherwise" not in _model_view(thread)
    visible = {m.lc_message_id for m in visible_messages(conversation=thread)}
    # Every reply the model reads is a row of the branch shown.
    assert all(i in visible for i, _ in model_visible(thread))


def test_the_fork_page_says_why_a_thread_of_a_disabled_agent_is_not_forked(owner_client, thread, say):
    say("Alpha one")
    reply = say("Beta two")
    thread.agent.is_enabled = False
    thread.agent.save(update_fields=["is_enabled"])
    page = f"/threads/{thread.thread_id}/branches/{reply.pk}/"
    response = owner_client.post(f"{page}fork", {"request_id": "k"}, follow=True)
    assert response.redirect_chain[-1][0] == page and response.status_code == 200
    assert "No such agent, or it is disabled." in response.content.decode()
    assert Conversation.objects.filter(owner=thread.owner).count() == 1


def test_a_continue_that_fails_before_its_end_leaves_the_page_and_the_model_view_as_they_were(
    owner_client, thread, say, edit, monkeypatch
):
    from conversations.services import branches

    say("Alpha one")
    second = say("Beta two")
    say("Gamma three")
    edit(second, "Beta edited")
    shown, view = _shown(thread), _model_view(thread)

    def refused(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(branches, "conversation_pressure_update", refused)
    with pytest.raises(RuntimeError):
        branches.branch_continue(thread_id=thread.thread_id, message_id=second.pk, user=thread.owner)
    assert not MessageFork.objects.filter(kind=MessageFork.Kind.CONTINUE).exists()
    assert (_shown(thread), _model_view(thread)) == (shown, view)  # no half continue


def test_a_fork_that_fails_before_its_checkpoint_writes_none_for_the_thread_never_made(
    thread, user, say, monkeypatch
):
    from conversations.services import branches

    say("Alpha one")
    reply = say("Beta two")
    real = branches.state_repository_for
    written = []

    def repository_for(conversation):
        repository = real(conversation)
        if conversation.pk != thread.pk:
            repository.update = lambda values: written.append(conversation.thread_id)
        return repository

    def refused(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(branches, "state_repository_for", repository_for)
    monkeypatch.setattr(branches, "conversation_pressure_update", refused)
    with pytest.raises(RuntimeError):
        branches.branch_fork(thread_id=thread.thread_id, message_id=reply.pk, user=user)
    assert written == [] and Conversation.objects.filter(owner=user).count() == 1


def test_branch_pages_answer_a_message_id_past_any_integer_with_404(owner_client, thread, say):
    say("Alpha one")
    page = f"/threads/{thread.thread_id}/branches/99999999999999999999999/"
    assert owner_client.get(page).status_code == 404
    assert owner_client.post(f"{page}continue", {"request_id": "k"}).status_code == 404
    assert owner_client.post(f"{page}fork", {"request_id": "k"}).status_code == 404


def test_search_opens_a_page_that_shows_a_match_older_than_the_messages_the_thread_page_loads(
    owner_client, thread
):
    from conversations.selectors import MESSAGE_PAGE_MAX

    rows = [Message(conversation=thread, seq=1, role="user", content="The walrus question")]
    rows += [
        Message(conversation=thread, seq=n, role="user" if n % 2 else "assistant", content=f"Filler {n}")
        for n in range(2, MESSAGE_PAGE_MAX + 3)
    ]
    Message.objects.bulk_create(rows)
    [row] = owner_client.get("/api/threads?q=walrus").json()
    page = owner_client.get(row["hit_url"].split("#")[0]).content.decode()
    assert 'id="message-1"' in page and "The walrus question" in page
    listing = owner_client.get("/?q=walrus").content.decode()
    assert f'href="{row["hit_url"]}"' in listing


def test_a_fork_of_a_thread_with_the_longest_title_gets_a_title_that_fits(
    owner_client, thread, say, django_capture_on_commit_callbacks
):
    from conversations.services.threads import TITLE_MAX_CHARS

    say("Alpha one")
    reply = say("Beta two")
    thread.title = "T" * TITLE_MAX_CHARS
    thread.save(update_fields=["title"])
    url = f"/api/threads/{thread.thread_id}/messages/{reply.pk}/fork"
    response = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="long")
    assert response.status_code == 201, response.content
    title = response.json()["title"]
    assert len(title) <= TITLE_MAX_CHARS and title.startswith("TTT") and title.endswith("(fork)")
    assert Conversation.objects.get(thread_id=response.json()["thread_id"]).title == title


def test_a_fork_copies_no_link_out_of_the_workdir_and_still_forks(
    owner_client, thread, say, tmp_path, django_capture_on_commit_callbacks
):
    import os

    from agent_platform.workdir import workdir_for

    say("Alpha one")
    reply = say("Beta two")
    source = workdir_for(thread)
    source.write_text("uploads/abc-notes.txt", "kept")
    root = source._local_root()
    if root is None:
        pytest.skip("symbolic links exist on local disk only")
    secret = tmp_path / "secret.txt"
    secret.write_text("another user's data")
    os.symlink(secret, root / "uploads" / "link.txt")
    url = f"/api/threads/{thread.thread_id}/messages/{reply.pk}/fork"
    response = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="links")
    assert response.status_code == 201, response.content
    new = workdir_for(Conversation.objects.get(thread_id=response.json()["thread_id"]))
    assert new.read_text("uploads/abc-notes.txt") == "kept"
    assert new.list_dir("uploads") == ["uploads/abc-notes.txt"]  # the link, and what it points at, stay out

"""Edit and regenerate through the API (issue 26 item 9): a fork of the model's view from the
checkpoint before the message, an append-only transcript whose replaced rows stay as versions, and
summaries, pins and undo that stay consistent on the fork."""

from __future__ import annotations

import pytest

from agent_platform.runtime.graph import state_repository_for
from compression.errors import NothingToUndo
from compression.services.compress import thread_compress
from compression.services.undo import thread_compress_undo
from context_engine.state import SUMMARY_EVENT_KEY
from conversations.models import AgentRun, Message, MessageFork, MessagePin
from conversations.selectors import pinned_message_ids

pytestmark = pytest.mark.django_db


def _post(client, url, capture, **json):
    with capture(execute=True):
        return client.post(url, json or None, content_type="application/json")


def _model_view(thread) -> list[str]:
    """The contents of the checkpoint's messages (what the model sees next)."""
    return [
        m.content if isinstance(m.content, str) else m.text
        for m in state_repository_for(thread).get_values()["messages"]
    ]


def _visible(client, thread) -> list[tuple[str, str]]:
    rows = client.get(f"/api/threads/{thread.thread_id}/messages").json()
    return [(row["role"], row["content"]) for row in rows]


def test_an_edit_forks_the_model_view_and_keeps_the_old_version(
    owner_client, thread, say, django_capture_on_commit_callbacks
):
    first = say("The capital of France?")
    second = say("And of Spain?")
    total_rows = thread.messages.count()
    response = _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{second.pk}/edit",
        django_capture_on_commit_callbacks,
        content="And of Italy?",
    )
    assert response.status_code == 202, response.content
    run = AgentRun.objects.get(pk=response.json()["run"]["id"])
    assert run.status == AgentRun.Status.SUCCEEDED, run.error_detail

    view = _model_view(thread)
    assert "And of Spain?" not in view and "And of Italy?" in view and view[0] == "The capital of France?"
    visible = _visible(owner_client, thread)
    assert [c for r, c in visible if r == "user"] == ["The capital of France?", "And of Italy?"]
    # Append-only: every earlier row is still there, unchanged.
    assert thread.messages.count() > total_rows
    assert Message.objects.get(pk=second.pk).content == "And of Spain?"
    fork = MessageFork.objects.get(conversation=thread)
    assert fork.kind == "edit" and fork.message_id == second.pk and fork.checkpoint_id

    versions = owner_client.get(
        f"/api/threads/{thread.thread_id}/messages/{response.json()['message']['id']}/versions"
    ).json()
    assert versions["edits"]["total"] == 2 and versions["edits"]["current"] == 2
    old = versions["edits"]["versions"][0]
    assert old["message"]["content"] == "And of Spain?" and old["replies"] and not old["current"]
    assert first.pk != second.pk


def test_regenerate_answers_the_last_message_again_on_a_fork(
    owner_client, thread, say, django_capture_on_commit_callbacks
):
    say("hello")
    last = say("tell me something")
    before = _visible(owner_client, thread)
    response = _post(
        owner_client, f"/api/threads/{thread.thread_id}/regenerate", django_capture_on_commit_callbacks
    )
    assert response.status_code == 202, response.content
    assert response.json()["message"]["id"] == last.pk
    after = _visible(owner_client, thread)
    assert len(after) == len(before) and after[:3] == before[:3]  # the old reply left the branch
    view = _model_view(thread)
    assert view.count("tell me something") == 1 and len(view) == 4  # not twice, not the old reply too

    versions = owner_client.get(f"/api/threads/{thread.thread_id}/messages/{last.pk}/versions").json()
    assert versions["edits"] is None
    assert versions["replies"]["total"] == 2 and versions["replies"]["current"] == 2
    assert all(v["replies"] for v in versions["replies"]["versions"])


def test_edit_and_regenerate_on_a_thread_with_a_summary_and_a_pin(
    owner_client, user, thread, keep_four, say, django_capture_on_commit_callbacks
):
    pinned = say("Always answer in French.")
    early = say("What is 2 + 2?")
    for n in range(3):
        say(f"Question number {n}. " + "Some background that the summary can shorten. " * 40)
    assert owner_client.post(f"/api/threads/{thread.thread_id}/messages/{pinned.pk}/pin").status_code == 200
    outcome = thread_compress(thread_id=thread.thread_id, user=user)
    assert outcome.result["status"] == "completed", {
        k: v for k, v in outcome.result.items() if k in ("reason", "detail", "message")
    }
    assert state_repository_for(thread).get_values().get(SUMMARY_EVENT_KEY)

    # An edit of a message sent after the summary: the fork keeps the summary and the pin.
    latest = say("A question after the summary")
    response = _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{latest.pk}/edit",
        django_capture_on_commit_callbacks,
        content="A question after the summary, edited",
    )
    assert response.status_code == 202, response.content
    values = state_repository_for(thread).get_values()
    assert values.get(SUMMARY_EVENT_KEY)  # the summary is before the fork point
    assert pinned.lc_message_id in pinned_message_ids(conversation=thread)
    response = _post(
        owner_client, f"/api/threads/{thread.thread_id}/regenerate", django_capture_on_commit_callbacks
    )
    assert response.status_code == 202, response.content
    assert state_repository_for(thread).get_values().get(SUMMARY_EVENT_KEY)

    # An edit before the summary boundary forks from before the summary: no summary in the fork,
    # so nothing to undo there; the pin (before the fork point) still binds.
    response = _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{early.pk}/edit",
        django_capture_on_commit_callbacks,
        content="What is 3 + 3?",
    )
    assert response.status_code == 202, response.content
    values = state_repository_for(thread).get_values()
    assert not values.get(SUMMARY_EVENT_KEY)
    view = _model_view(thread)
    assert (
        view[0] == "Always answer in French."
        and "What is 3 + 3?" in view
        and not any(c.startswith("Question number 0") for c in view)
    )
    assert pinned_message_ids(conversation=thread) == [pinned.lc_message_id]
    with pytest.raises(NothingToUndo):
        thread_compress_undo(thread_id=thread.thread_id, user=user)
    assert [c for r, c in _visible(owner_client, thread) if r == "user"] == [
        "Always answer in French.",
        "What is 3 + 3?",
    ]


def test_a_pin_on_a_replaced_version_does_not_bind_the_fork(
    owner_client, thread, say, django_capture_on_commit_callbacks
):
    say("first")
    second = say("second")
    assert owner_client.post(f"/api/threads/{thread.thread_id}/messages/{second.pk}/pin").status_code == 200
    _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{second.pk}/edit",
        django_capture_on_commit_callbacks,
        content="second, again",
    )
    assert MessagePin.objects.filter(message=second).exists()  # kept with its version
    assert pinned_message_ids(conversation=thread) == []
    assert owner_client.post(f"/api/threads/{thread.thread_id}/messages/{second.pk}/pin").status_code == 404


def test_refusals_leave_the_thread_as_it_was(owner_client, client, other_user, thread, say):
    message = say("hello")
    url = f"/api/threads/{thread.thread_id}/messages/{message.pk}/edit"
    reply = thread.messages.get(role="assistant")
    view = _model_view(thread)
    checks = [
        (owner_client.post(url, {"content": ""}, content_type="application/json"), 422),
        (owner_client.post(url, {"content": "a\x00b"}, content_type="application/json"), 422),
        (
            owner_client.post(
                f"/api/threads/{thread.thread_id}/messages/{reply.pk}/edit",
                {"content": "x"},
                content_type="application/json",
            ),
            422,
        ),
        (
            owner_client.post(
                f"/api/threads/{thread.thread_id}/messages/999999/edit",
                {"content": "x"},
                content_type="application/json",
            ),
            404,
        ),
    ]
    for response, status in checks:
        assert response.status_code == status, response.content
        assert set(response.json()) >= {"code", "message"}
    waiting = AgentRun.objects.create(conversation=thread, status=AgentRun.Status.INTERRUPTED)
    busy = owner_client.post(url, {"content": "edited"}, content_type="application/json")
    assert busy.status_code == 409 and "waiting for your answer" in busy.json()["message"]
    waiting.status = AgentRun.Status.SUCCEEDED
    waiting.save()
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)
    busy = owner_client.post(url, {"content": "edited"}, content_type="application/json")
    assert busy.status_code == 409 and busy.json()["code"] == "thread_busy"
    busy = owner_client.post(f"/api/threads/{thread.thread_id}/regenerate", content_type="application/json")
    assert busy.status_code == 409
    client.force_login(other_user)
    assert client.post(url, {"content": "edited"}, content_type="application/json").status_code == 404
    assert not MessageFork.objects.exists() and _model_view(thread) == view
    assert thread.messages.count() == 2


@pytest.mark.parametrize("message_id", ["99999999999999999999", "-1", "abc"])
def test_odd_message_ids_are_errors_not_500s(owner_client, thread, message_id):
    base = f"/api/threads/{thread.thread_id}/messages/{message_id}"
    for response in (
        owner_client.post(f"{base}/edit", {"content": "x"}, content_type="application/json"),
        owner_client.get(f"{base}/versions"),
    ):
        assert response.status_code in (404, 422), response.content
        assert {"code", "message"} <= response.json().keys()


def test_the_admin_shows_a_threads_forks_read_only(
    client, django_user_model, owner_client, thread, say, django_capture_on_commit_callbacks
):
    message = say("hello")
    _post(owner_client, f"/api/threads/{thread.thread_id}/regenerate", django_capture_on_commit_callbacks)
    fork = MessageFork.objects.get()
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    page = client.get(f"/admin/conversations/conversation/{thread.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert fork.checkpoint_id in body and "Regenerate" in body and message.content in body


def _user_texts(request: dict) -> list[str]:
    texts = []
    for message in request["messages"]:
        if message["role"] == "user":
            content = message["content"]
            texts.append(
                content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
            )
    return texts


def test_the_model_is_sent_the_fork_through_the_real_client(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    """Through langchain-openai and the OpenAI-protocol stub: after an edit the request carries the
    new version and not the old one nor its reply; after a regenerate, the question once, no old reply."""
    from agent_platform.models import Agent, ModelEndpoint
    from conversations.services import thread_create

    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    agent = Agent.objects.create(name="Stubbed", slug="stubbed", endpoint=endpoint, model_name="gpt-4o-mini")
    thread = thread_create(user=user, agent_slug=agent.slug)
    client.force_login(user)
    for text in ("First answer.", "Museums: the Gulbenkian.", "Beaches: Cascais.", "Beaches: Comporta."):
        openai_stub.reply(text)
    base = f"/api/threads/{thread.thread_id}"
    _post(client, f"{base}/messages", django_capture_on_commit_callbacks, content="We go to Lisbon.")
    asked = _post(client, f"{base}/messages", django_capture_on_commit_callbacks, content="Which museums?")
    edited = _post(
        client,
        f"{base}/messages/{asked.json()['message']['id']}/edit",
        django_capture_on_commit_callbacks,
        content="Which beaches?",
    )
    assert edited.status_code == 202, edited.content
    request = openai_stub.requests[-1]
    assert _user_texts(request) == ["We go to Lisbon.", "Which beaches?"]
    assert "Museums: the Gulbenkian." not in str(request["messages"])

    assert _post(client, f"{base}/regenerate", django_capture_on_commit_callbacks).status_code == 202
    request = openai_stub.requests[-1]
    assert _user_texts(request) == ["We go to Lisbon.", "Which beaches?"]
    assert "Beaches: Cascais." not in str(request["messages"])
    assert [row["content"] for row in client.get(f"{base}/messages").json()] == [
        "We go to Lisbon.",
        "First answer.",
        "Which beaches?",
        "Beaches: Comporta.",
    ]


def test_editing_the_first_message_forks_from_the_empty_thread(
    owner_client, thread, say, django_capture_on_commit_callbacks
):
    first = say("Hello there")
    say("Second question")
    response = _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{first.pk}/edit",
        django_capture_on_commit_callbacks,
        content="Good morning",
    )
    assert response.status_code == 202, response.content
    view = _model_view(thread)
    assert view[0] == "Good morning" and len(view) == 2  # the question and its answer, nothing older
    assert [c for r, c in _visible(owner_client, thread) if r == "user"] == ["Good morning"]
    # Edit the edited version again: versions 1, 2 and 3 of the same message.
    edited = response.json()["message"]["id"]
    again = _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{edited}/edit",
        django_capture_on_commit_callbacks,
        content="Good evening",
    )
    versions = owner_client.get(
        f"/api/threads/{thread.thread_id}/messages/{again.json()['message']['id']}/versions"
    ).json()["edits"]
    assert [v["message"]["content"] for v in versions["versions"]] == [
        "Hello there",
        "Good morning",
        "Good evening",
    ]
    assert (
        versions["current"] == 3
        and _model_view(thread)[0] == "Good evening"
        and len(_model_view(thread)) == 2
    )

"""Retry: a failed or stopped turn's request goes again, one call, with a new run and no new version of
the message; the model sees the message once; anything else is refused in words, state unchanged."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from langchain_core.messages import HumanMessage

from conversations.models import AgentRun, Message
from conversations.services import message_intake, run_cancel
from tests.conversations.consistency import assert_transcript_equals_checkpoint
from tests.conversations.test_cancel import _wait_until, halting_model  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


def _retry(client, thread, **body):
    return client.post(f"/api/threads/{thread.thread_id}/retry", body, content_type="application/json")


def test_retry_sends_a_failed_turns_request_again_with_a_new_run(
    thread, user, scripted_model, owner_client, django_capture_on_commit_callbacks
):
    model = scripted_model(RuntimeError("Error code: 500 - upstream exploded"), "answered this time")
    with django_capture_on_commit_callbacks(execute=True):
        failed = message_intake(thread_id=thread.thread_id, user=user, content="what is 2+2?").run
    failed.refresh_from_db()
    assert failed.status == "failed"

    with django_capture_on_commit_callbacks(execute=True):
        response = _retry(owner_client, thread, request_id="retry-1")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["run"]["id"] != failed.pk
    assert body["message"]["id"] == failed.input_message_id  # the same message, not a new version
    retried = AgentRun.objects.get(pk=body["run"]["id"])
    assert (retried.status, retried.input_message_id) == ("succeeded", failed.input_message_id)
    assert thread.messages.filter(role="user").count() == 1
    # The model saw the question once, as the user wrote it.
    assert [m.content for m in model.calls[-1] if isinstance(m, HumanMessage)] == ["what is 2+2?"]
    # The current branch: the question and its answer; the failure stays as an earlier version.
    transcript = owner_client.get(f"/api/threads/{thread.thread_id}/messages").json()
    assert [(m["role"], m["content"]) for m in transcript] == [
        ("user", "what is 2+2?"),
        ("assistant", "answered this time"),
    ]
    assert_transcript_equals_checkpoint(thread)
    # The same request again returns the first result and starts nothing.
    again = _retry(owner_client, thread, request_id="retry-1")
    assert (again.status_code, again.json()["run"]["id"]) == (202, retried.pk)
    assert AgentRun.objects.filter(conversation=thread).count() == 2


def test_retry_sends_a_message_stopped_in_the_queue_again(
    thread, user, scripted_model, owner_client, django_capture_on_commit_callbacks
):
    scripted_model("answered")
    with django_capture_on_commit_callbacks(execute=False):
        queued = message_intake(thread_id=thread.thread_id, user=user, content="later, please").run
    run_cancel(thread_id=thread.thread_id, user=user, run_id=queued.pk)
    with django_capture_on_commit_callbacks(execute=True):
        response = _retry(owner_client, thread)
    assert response.status_code == 202, response.content
    retried = AgentRun.objects.get(pk=response.json()["run"]["id"])
    assert retried.status == "succeeded"
    message = Message.objects.get(pk=queued.input_message_id)
    assert message.run_id == retried.pk  # no longer shown "not sent"
    assert [m.content for m in thread.messages.order_by("seq")] == ["later, please", "answered"]


@pytest.mark.django_db(transaction=True)
def test_retry_sends_a_turn_stopped_midway_again(
    thread,
    user,
    halting_model,  # noqa: F811 - the fixture imported above
    owner_client,
    settings,
):
    settings.RUN_EXECUTION = "inprocess"
    model = halting_model("one two three four five", "second attempt")
    stopped = message_intake(thread_id=thread.thread_id, user=user, content="tell me").run
    assert model.halted.wait(10)
    run_cancel(thread_id=thread.thread_id, user=user)
    time.sleep(0.1)  # longer than the stop check's cache interval: the next token sees the Stop
    model.resume.set()
    _wait_until(lambda: AgentRun.objects.get(pk=stopped.pk).status not in ("queued", "running"))
    stopped.refresh_from_db()
    assert stopped.status == "cancelled", (stopped.status, stopped.error_detail)
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert 'id="retry-button"' in page
    response = _retry(owner_client, thread)
    assert response.status_code == 202, response.content
    retried = response.json()["run"]["id"]
    _wait_until(lambda: AgentRun.objects.get(pk=retried).status == "succeeded")
    transcript = owner_client.get(f"/api/threads/{thread.thread_id}/messages").json()
    # The stopped reply is an earlier version now; the current branch reads as one turn.
    assert [m["content"].strip() for m in transcript] == ["tell me", "second attempt"]
    connection.close()


def test_retry_is_refused_when_the_last_turn_did_not_fail_or_stop(
    thread, user, scripted_model, owner_client, django_capture_on_commit_callbacks
):
    response = _retry(owner_client, thread)
    assert (response.status_code, response.json()["code"]) == (422, "message_not_editable")
    scripted_model("fine")
    with django_capture_on_commit_callbacks(execute=True):
        message_intake(thread_id=thread.thread_id, user=user, content="hello")
    response = _retry(owner_client, thread)
    assert response.status_code == 422
    assert response.json()["message"] == "There is no failed or stopped turn to retry."
    assert AgentRun.objects.filter(conversation=thread).count() == 1


def test_retry_waits_while_a_run_is_queued(
    thread, user, scripted_model, owner_client, django_capture_on_commit_callbacks
):
    scripted_model(RuntimeError("boom"))
    with django_capture_on_commit_callbacks(execute=True):
        message_intake(thread_id=thread.thread_id, user=user, content="first")
    with django_capture_on_commit_callbacks(execute=False):
        message_intake(thread_id=thread.thread_id, user=user, content="second")
    response = _retry(owner_client, thread)
    assert response.status_code in (409, 422)
    assert AgentRun.objects.filter(conversation=thread).count() == 2


def test_a_sends_key_reused_on_retry_never_returns_the_sends_run(
    thread, user, scripted_model, owner_client, django_capture_on_commit_callbacks
):
    """request_id is one operation's key: the failed send's own key, given to Retry, retries (a new
    run), and the retry's key given again returns the retry's run, never the send's."""
    scripted_model(RuntimeError("Error code: 500 - upstream exploded"), "answered this time")
    with django_capture_on_commit_callbacks(execute=True):
        failed = message_intake(
            thread_id=thread.thread_id, user=user, content="what is 2+2?", request_id="key-1"
        ).run
    with django_capture_on_commit_callbacks(execute=True):
        response = _retry(owner_client, thread, request_id="key-1")
    assert response.status_code == 202, response.content
    retried_id = response.json()["run"]["id"]
    assert retried_id != failed.pk
    again = _retry(owner_client, thread, request_id="key-1")
    assert (again.status_code, again.json()["run"]["id"]) == (202, retried_id)
    assert AgentRun.objects.filter(conversation=thread).count() == 2

"""A retried edit or regenerate (the same ``request_id``) returns the first result: no second
version, fork or run (issue 26 follow-up)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from conversations.models import AgentRun, MessageFork
from conversations.services import message_intake
from conversations.services.versions import message_edit, reply_regenerate

pytestmark = pytest.mark.services


def _said(thread, user, content, capture=None):
    if capture is None:  # a transactional test: the run is dispatched on commit
        result = message_intake(thread_id=thread.thread_id, user=user, content=content)
    else:
        with capture(execute=True):
            result = message_intake(thread_id=thread.thread_id, user=user, content=content)
    result.run.refresh_from_db()
    assert result.run.status == AgentRun.Status.SUCCEEDED, result.run.error_detail
    return result.message


def _post(client, url, capture, **json):
    with capture(execute=True):
        return client.post(url, json, content_type="application/json")


@pytest.mark.django_db
def test_a_retried_edit_returns_the_first_version(
    owner_client, thread, user, django_capture_on_commit_callbacks
):
    message = _said(thread, user, "The capital of France?", django_capture_on_commit_callbacks)
    url = f"/api/threads/{thread.thread_id}/messages/{message.pk}/edit"
    first = _post(
        owner_client, url, django_capture_on_commit_callbacks, content="Of Italy?", request_id="e-1"
    )
    assert first.status_code == 202, first.content
    rows, runs = thread.messages.count(), thread.runs.count()
    again = _post(
        owner_client, url, django_capture_on_commit_callbacks, content="Of Italy?", request_id="e-1"
    )
    assert again.status_code == 202, again.content
    assert again.json()["message"]["id"] == first.json()["message"]["id"]
    assert again.json()["run"]["id"] == first.json()["run"]["id"]
    assert (thread.messages.count(), thread.runs.count()) == (rows, runs)
    assert MessageFork.objects.filter(conversation=thread).count() == 1
    # Another request_id is another edit: the key, not the text, makes a retry.
    edited = first.json()["message"]["id"]
    other = _post(
        owner_client,
        f"/api/threads/{thread.thread_id}/messages/{edited}/edit",
        django_capture_on_commit_callbacks,
        content="Of Italy?",
        request_id="e-2",
    )
    assert other.status_code == 202 and other.json()["message"]["id"] != edited
    assert MessageFork.objects.filter(conversation=thread).count() == 2


@pytest.mark.django_db
def test_a_retried_regenerate_starts_no_second_run(
    owner_client, thread, user, django_capture_on_commit_callbacks
):
    _said(thread, user, "hello", django_capture_on_commit_callbacks)
    url = f"/api/threads/{thread.thread_id}/regenerate"
    first = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="g-1")
    assert first.status_code == 202, first.content
    rows, runs = thread.messages.count(), thread.runs.count()
    again = _post(owner_client, url, django_capture_on_commit_callbacks, request_id="g-1")
    assert again.status_code == 202 and again.json()["run"]["id"] == first.json()["run"]["id"]
    assert (thread.messages.count(), thread.runs.count()) == (rows, runs)
    assert MessageFork.objects.filter(conversation=thread, kind="regenerate").count() == 1
    # Without a key the request is new each time (as before).
    assert _post(owner_client, url, django_capture_on_commit_callbacks).status_code == 202
    assert MessageFork.objects.filter(conversation=thread, kind="regenerate").count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("request_id", ["", "x" * 101])
def test_a_bad_request_id_is_a_422_and_changes_nothing(
    owner_client, thread, user, request_id, django_capture_on_commit_callbacks
):
    message = _said(thread, user, "hello", django_capture_on_commit_callbacks)
    rows = thread.messages.count()
    for url, body in (
        (
            f"/api/threads/{thread.thread_id}/messages/{message.pk}/edit",
            {"content": "x", "request_id": request_id},
        ),
        (f"/api/threads/{thread.thread_id}/regenerate", {"request_id": request_id}),
    ):
        response = owner_client.post(url, body, content_type="application/json")
        assert response.status_code == 422 and set(response.json()) >= {"code", "message"}
    assert thread.messages.count() == rows and not MessageFork.objects.exists()


@pytest.mark.django_db
def test_a_request_id_is_one_operations_key(owner_client, thread, user, django_capture_on_commit_callbacks):
    """Issue 38: a send's request_id reused on a regenerate (or an edit) returned the send's run; now
    it is a 409 ``request_id_reused`` that starts nothing, and the send's own retry still answers."""
    url = f"/api/threads/{thread.thread_id}"
    sent = _post(
        owner_client, f"{url}/messages", django_capture_on_commit_callbacks, content="hi", request_id="k-1"
    )
    assert sent.status_code == 202, sent.content
    rows, runs = thread.messages.count(), thread.runs.count()
    regenerate = _post(
        owner_client, f"{url}/regenerate", django_capture_on_commit_callbacks, request_id="k-1"
    )
    assert regenerate.status_code == 409 and regenerate.json()["code"] == "request_id_reused"
    message_id = sent.json()["message"]["id"]
    edit = _post(
        owner_client, f"{url}/messages/{message_id}/edit", django_capture_on_commit_callbacks,
        content="again", request_id="k-1",
    )  # fmt: skip
    assert edit.status_code == 409 and edit.json()["code"] == "request_id_reused"
    assert (thread.messages.count(), thread.runs.count()) == (rows, runs) and not MessageFork.objects.exists()
    again = _post(
        owner_client, f"{url}/messages", django_capture_on_commit_callbacks, content="hi", request_id="k-1"
    )
    assert again.status_code == 202 and again.json()["run"]["id"] == sent.json()["run"]["id"]


@pytest.mark.django_db
@pytest.mark.parametrize("request_id", [" ", "\t\n ", "\u3000"])
def test_a_blank_request_id_is_a_400_with_a_json_body(owner_client, thread, user, request_id):
    url = f"/api/threads/{thread.thread_id}"
    for path, body in (
        ("messages", {"content": "hi", "request_id": request_id}),
        ("regenerate", {"request_id": request_id}),
    ):
        response = owner_client.post(f"{url}/{path}", body, content_type="application/json")
        assert response.status_code == 400, (path, response.content)
        assert response.json()["code"] == "invalid_request_id"
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = owner_client.post(
        f"{url}/messages/upload",
        {"content": "hi", "request_id": request_id, "files": [SimpleUploadedFile("a.md", b"notes\n")]},
    )
    assert upload.status_code == 400 and upload.json()["code"] == "invalid_request_id"
    assert not thread.runs.exists()


def _twice_at_once(action) -> list:
    """Run ``action`` in two threads released together (two connections); every result, or fail."""
    start, results, errors = threading.Barrier(2, timeout=15), [], []

    def send():
        start.wait()
        try:
            results.append(action())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=send, daemon=True) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert errors == [] and len(results) == 2
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_same_edit_sent_twice_at_once_makes_one_version(thread, user, settings):
    settings.THREAD_LOCK_TIMEOUT_MS = 30_000
    message = _said(thread, user, "The capital of France?")
    results = _twice_at_once(
        lambda: message_edit(
            thread_id=thread.thread_id,
            message_id=message.pk,
            user=user,
            content="Of Italy?",
            request_id="same",
        )
    )
    assert {r.run.pk for r in results} == {results[0].run.pk}
    assert sorted(r.created for r in results) == [False, True]
    assert MessageFork.objects.filter(conversation=thread).count() == 1
    assert thread.messages.filter(content="Of Italy?").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_same_regenerate_sent_twice_at_once_starts_one_run(thread, user, settings):
    settings.THREAD_LOCK_TIMEOUT_MS = 30_000
    _said(thread, user, "hello")
    runs = thread.runs.count()
    results = _twice_at_once(
        lambda: reply_regenerate(thread_id=thread.thread_id, user=user, request_id="same")
    )
    assert results[0].run.pk == results[1].run.pk
    assert sorted(r.created for r in results) == [False, True]
    assert thread.runs.count() == runs + 1
    assert MessageFork.objects.filter(conversation=thread).count() == 1

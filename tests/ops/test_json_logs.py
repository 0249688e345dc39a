"""``LOG_FORMAT=json`` (issue 27, item 10): one JSON object per line, carrying the request id (the
client's ``X-Request-ID`` or a new one, echoed in the response), the thread its URL names, and the
thread and run of the run being executed."""

from __future__ import annotations

import importlib.util
import io
import json
import logging.config
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from conversations.models import AgentRun
from conversations.services import thread_create

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


@pytest.fixture
def json_logs(monkeypatch):
    """The LOGGING of config/settings.py as it reads with LOG_FORMAT=json, installed for the test (its
    console handler writing to a buffer); returns a function giving the lines written since, each
    parsed as JSON (a line that is not one fails the test)."""
    monkeypatch.setenv("LOG_FORMAT", "json")
    spec = importlib.util.spec_from_file_location("settings_with_json_logs", ROOT / "config" / "settings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    logging.config.dictConfig(module.LOGGING)
    [console] = logging.getLogger().handlers
    buffer = io.StringIO()
    console.setStream(buffer)

    def lines() -> list[dict]:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return [json.loads(line) for line in text.splitlines()]

    yield lines
    logging.config.dictConfig(django_settings.LOGGING)


def test_a_request_line_carries_the_request_and_thread_ids(client, user, json_logs):
    client.force_login(user)
    missing = uuid.uuid4()
    response = client.get(f"/threads/{missing}/", HTTP_X_REQUEST_ID="req-42")
    assert response.status_code == 404 and response["X-Request-ID"] == "req-42"
    [line] = [line for line in json_logs() if line["logger"] == "django.request"]
    assert line["request_id"] == "req-42" and line["thread_id"] == str(missing)
    assert line["level"] == "WARNING" and "Not Found" in line["message"] and line["time"]


def test_a_request_without_a_usable_id_gets_a_new_one(client, json_logs):
    response = client.get("/no-such-page/", HTTP_X_REQUEST_ID="bad id\nwith a newline")
    generated = response["X-Request-ID"]
    assert len(generated) == 32 and "\n" not in generated
    [line] = [line for line in json_logs() if line["logger"] == "django.request"]
    assert line["request_id"] == generated and line["thread_id"] is None and line["run_id"] is None


def test_a_runs_lines_carry_its_thread_and_run(
    client, user, agent, json_logs, django_capture_on_commit_callbacks
):
    thread = thread_create(user=user, agent_slug=agent.slug)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/api/threads/{thread.thread_id}/messages", {"content": "hi"}, content_type="application/json"
        )
    run = AgentRun.objects.get(conversation=thread)
    ended = [line for line in json_logs() if line["message"] == f"Run {run.pk} ended succeeded"]
    assert len(ended) == 1
    assert ended[0]["thread_id"] == str(thread.thread_id) and ended[0]["run_id"] == str(run.pk)
    # Outside the run, the ids are gone again.
    logging.getLogger("after").warning("outside")
    [outside] = [line for line in json_logs() if line["message"] == "outside"]
    assert outside["run_id"] is None and outside["thread_id"] is None


def test_an_unknown_log_format_is_refused(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("LOG_FORMAT", "xml")
    spec = importlib.util.spec_from_file_location("settings_with_bad_format", ROOT / "config" / "settings.py")
    with pytest.raises(ImproperlyConfigured):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


@pytest.mark.django_db(transaction=True)
async def test_under_asgi_the_request_ids_survive_the_middleware_hooks(async_client, json_logs):
    """Under ASGI each sync middleware hook may run in a context of its own (sync_to_async): setting
    the ids must never depend on resetting them where they were set."""
    missing = uuid.uuid4()
    response = await async_client.get(f"/threads/{missing}/files/x.txt", headers={"X-Request-ID": "asgi-1"})
    assert response.status_code in (302, 404) and response["X-Request-ID"] == "asgi-1"
    response = await async_client.get("/api/usage", headers={"X-Request-ID": "asgi-2"})
    assert response.status_code == 401 and response["X-Request-ID"] == "asgi-2"

"""Two web processes: a page connected to server A receives the events of a run executed by a Celery
worker and of a compression started through server B (Redis channel layer, PostgreSQL, real processes)."""

from __future__ import annotations

import time

import httpx
import pytest
from django.test import Client

from agent_platform.services import api_token_issue
from conversations.models import AgentRun
from conversations.services import thread_create
from tests.conftest import CHROMIUM
from tests.processes.support import celery_worker, daphne_server, service_env

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def test_a_page_on_one_server_sees_a_workers_run_and_a_compression_started_on_another(user, agent, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    agent.summary_keep_messages = 2
    agent.save()
    thread = thread_create(user=user, agent_slug=agent.slug, title="Two servers")
    _token, raw = api_token_issue(user=user)
    login = Client()
    login.force_login(user)
    session_id = login.cookies["sessionid"].value
    # Production settings from the environment: Redis channel layer and cache, runs on Celery.
    production = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "WORKDIR_ROOT": str(tmp_path / "workdirs"),
    }
    with celery_worker(tmp_path, **production) as worker:
        env = service_env(CELERY_TASK_DEFAULT_QUEUE=worker.queue, **production)
        with (
            daphne_server(tmp_path, env=env, name="a") as server_a,
            daphne_server(tmp_path, env=env, name="b") as server_b,
            sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(base_url=server_a)
            # Logged in through a session of the shared database (the servers hash passwords otherwise
            # than the test settings do, so the login form is not the point here).
            context.add_cookies([{"name": "sessionid", "value": session_id, "url": server_a}])
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"/threads/{thread.thread_id}/")
            expect(page.locator("#socket-status")).to_have_attribute("data-state", "open", timeout=60_000)

            api = httpx.Client(base_url=server_b, headers={"Authorization": f"Bearer {raw}"}, timeout=60)
            # Long enough that a summary of them is smaller than they are (issue 24: never bigger).
            detail = (
                "We are planning a week in Lisbon: the old town, the museums, the coast and the trains. " * 8
            )
            for text in ("Hello there. " + detail, "Thanks, that is all. " + detail):
                sent = api.post(f"/api/threads/{thread.thread_id}/messages", json={"content": text})
                assert sent.status_code == 202, sent.text
            deadline = time.monotonic() + 120
            while True:  # (no ORM in here: Playwright's sync API runs an event loop in this thread)
                state = api.get(f"/api/threads/{thread.thread_id}/state").json()
                if not state["running"] and not state["queued"]:
                    break
                assert time.monotonic() < deadline, worker.text()[-3000:]
                time.sleep(0.3)
            # The runs executed on the worker; their messages reached the page on A by the socket only.
            page.wait_for_function("document.querySelectorAll('#transcript li.role-assistant').length >= 2")
            assert page.locator("#transcript li.role-user").count() == 2

            response = api.post(f"/api/threads/{thread.thread_id}/compress?wait=true")
            assert response.status_code == 200, response.text
            assert response.json()["status"] == "completed"
            expect(page.locator("#compression-status")).to_have_attribute(
                "data-status", "completed", timeout=60_000
            )
            browser.close()
    runs = AgentRun.objects.filter(conversation=thread)
    assert [run.status for run in runs] == ["succeeded", "succeeded"], [run.error for run in runs]
    assert worker.text().count("conversations.run_execute[") >= 2  # the worker executed the runs

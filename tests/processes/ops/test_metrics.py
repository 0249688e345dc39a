"""/metrics (issue 27, item 9): reachable only with the bearer token or from an allowed address; the run
and lease series move at their owners; values from several worker processes add up in multiprocess
mode. The compression series are scraped around real compressions in tests/compression/test_metrics.py."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import AgentRun
from conversations.services import message_intake, run_claim, runs_recover, thread_create
from tests.processes.support import ROOT
from tests.support.metrics import TOKEN, moved, scrape

pytestmark = pytest.mark.django_db


def test_without_configuration_the_endpoint_does_not_exist(client, settings):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS = "", []
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"])
def test_a_wrong_or_missing_token_is_refused(client, settings, header):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS = TOKEN, []
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/metrics", **extra)
    assert response.status_code == 403 and response.json()["code"] == "forbidden"


@pytest.mark.parametrize(
    ("allowed", "status"),
    [(["127.0.0.1"], 200), (["127.0.0.0/8"], 200), (["10.0.0.0/8", "::1"], 403)],
)
def test_an_allowed_address_needs_no_token(client, settings, allowed, status):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS = "", allowed
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == status


def test_a_run_moves_the_run_series(client, user, agent, settings, django_capture_on_commit_callbacks):
    settings.METRICS_TOKEN = TOKEN
    thread = thread_create(user=user, agent_slug=agent.slug)
    before = scrape(client)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages", {"content": "hello"}, content_type="application/json"
        )
    assert response.status_code == 202
    assert AgentRun.objects.get(conversation=thread).status == "succeeded"
    after = scrape(client)
    assert moved(before, after, "agent_platform_runs_total", status="succeeded") == 1
    assert moved(before, after, "agent_platform_run_seconds_count", status="succeeded") == 1


def test_queue_depth_and_lease_reclaims(client, user, agent, settings):
    settings.METRICS_TOKEN, settings.RUN_LEASE_SECONDS = TOKEN, 60
    thread = thread_create(user=user, agent_slug=agent.slug)
    run = message_intake(thread_id=thread.thread_id, user=user, content="hi").run
    before = scrape(client)
    assert before[("agent_platform_runs_queued", ())] == 1
    assert run_claim(run_id=run.pk)
    AgentRun.objects.filter(pk=run.pk).update(
        worker="elsewhere:1", heartbeat_at=timezone.now() - timedelta(seconds=61)
    )
    assert runs_recover(dispatch=False).requeued == [run.pk]
    after = scrape(client)
    assert moved(before, after, "agent_platform_run_lease_reclaims_total", outcome="queued") == 1
    assert after[("agent_platform_runs_queued", ())] == 1  # queued again

    # Stopped while queued: it ended without running (counted, with no duration).
    client.force_login(user)
    assert client.post(f"/api/threads/{thread.thread_id}/runs/{run.pk}/cancel").status_code == 202
    stopped = scrape(client)
    assert stopped[("agent_platform_runs_queued", ())] == 0
    assert moved(after, stopped, "agent_platform_runs_total", status="cancelled") == 1
    assert moved(after, stopped, "agent_platform_run_seconds_count", status="cancelled") == 0


# A worker process moving a counter (the metrics module needs no Django).
COUNT_ONE = """
from agent_platform.observability.metrics import compression_observed
compression_observed(trigger="bulk", level="summary", outcome="summarized", tokens_saved=100)
"""


def test_several_worker_processes_add_up_in_multiprocess_mode(client, settings, tmp_path, monkeypatch):
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", COUNT_ONE], cwd=ROOT, env=env, check=True, timeout=120)
    settings.METRICS_TOKEN = TOKEN
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))  # this process scrapes the directory
    after = scrape(client)
    labels = {"level": "summary", "outcome": "summarized", "trigger": "bulk"}
    assert moved({}, after, "agent_platform_compressions_total", **labels) == 2
    assert (
        moved({}, after, "agent_platform_compression_tokens_saved_total", level="summary", trigger="bulk")
        == 200
    )
    assert ("agent_platform_runs_queued", ()) in after


def test_the_grafana_dashboard_is_json_that_charts_every_metric_the_platform_exports():
    import json
    import re

    from agent_platform.observability import metrics

    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    queries = " ".join(target["expr"] for panel in dashboard["panels"] for target in panel["targets"])
    used = set(re.findall(r"agent_platform_[a-z_]+", queries))
    exported = {
        getattr(metrics, name)._name for name in dir(metrics) if hasattr(getattr(metrics, name), "_name")
    }
    assert exported and all(any(series.startswith(name) for series in used) for name in exported), used
    suffixes = ("_total", "_bucket", "_count", "_sum")
    known = exported | {"agent_platform_runs_queued"}
    assert all(
        series.removesuffix(next((s for s in suffixes if series.endswith(s)), "")) in known for series in used
    )


def test_a_malformed_allowed_address_stops_the_start(monkeypatch):
    import importlib.util

    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("METRICS_ALLOWED_IPS", "10.0.0.0/8,not-an-address")
    spec = importlib.util.spec_from_file_location("settings_bad_ips", ROOT / "config" / "settings.py")
    with pytest.raises(ImproperlyConfigured, match="METRICS_ALLOWED_IPS"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))

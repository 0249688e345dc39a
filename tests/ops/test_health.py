"""/healthz and /readyz (issue 27, item 8): liveness touches nothing; readiness asks each service and
names the one that did not answer, with a 503; why (a host, a port, a path) only to staff and the logs
(issue 38). Both answer HEAD. Services are made unreachable by pointing the setting
at a closed port on this machine, never by stopping the shared servers."""

from __future__ import annotations

import os
import socket

import pytest
from django.db import connection

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


def test_healthz_answers_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_answers_ready_when_every_service_answers(client, settings):
    settings.REDIS_URL = ""  # Redis is only asked when configured
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    checks = response.json()["checks"]
    assert checks == {name: "ok" for name in ("database", "checkpoints", "workdir_storage")}


def test_readyz_names_redis_when_it_is_unreachable(client, admin_client, settings, caplog):
    port = _closed_port()
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "not_ready" and body["failed"] == ["redis"]
    assert "redis" in body["message"] and body["checks"] == {
        "database": "ok",
        "checkpoints": "ok",
        "workdir_storage": "ok",
        "redis": "failed",
    }
    assert str(port) not in response.content.decode()  # anonymous: which service, never where
    staff = admin_client.get("/readyz").json()
    assert "Connection" in staff["checks"]["redis"]
    assert any("redis" in r.getMessage() and "Connection" in r.getMessage() for r in caplog.records)


def test_health_routes_answer_head(client):
    assert client.head("/healthz").status_code == 200
    assert client.head("/readyz").status_code in (200, 503)
    assert client.post("/healthz").status_code == 405


@pytest.mark.redis
def test_readyz_asks_redis_when_it_is_configured(client, settings):
    settings.REDIS_URL = os.environ["REDIS_URL"]
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["checks"]["redis"] == "ok"


def test_readyz_names_the_workdir_storage_when_it_cannot_be_written(client, settings, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    settings.WORKDIR_ROOT = blocker / "workdirs"
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["failed"] == ["workdir_storage"]
    assert str(tmp_path) not in response.content.decode()


def test_readyz_reads_no_more_than_it_must(client, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):  # SELECT 1, and the checkpoint table on PostgreSQL
        assert client.get("/readyz").status_code == 200


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_readyz_names_the_database_when_postgresql_is_unreachable(client, monkeypatch):
    connection.close()
    monkeypatch.setitem(connection.settings_dict, "HOST", "127.0.0.1")
    monkeypatch.setitem(connection.settings_dict, "PORT", str(_closed_port()))
    try:
        response = client.get("/readyz")
    finally:
        connection.close()  # the next query reconnects with the restored settings
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["checkpoints", "database"]
    assert body["checks"]["checkpoints"] == "failed"
    assert "database" in body["message"]


@pytest.mark.postgres
def test_readyz_names_the_checkpoint_tables_when_they_are_missing(admin_client):
    # Inside the test's transaction, rolled back after it: no other session sees the rename.
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE checkpoints RENAME TO checkpoints_away")
    response = admin_client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["checkpoints"]
    assert "checkpoints" in response.json()["checks"]["checkpoints"]

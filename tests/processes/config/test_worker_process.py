"""A Celery pool process keeps its database connection from one task to the next and starts with the
modules a run imports on first use already loaded (by its main process); any process sends tasks over
a small shared pool of broker connections."""

from __future__ import annotations

import copy
import subprocess
import sys

from config.celery import app, keep_database_connections


def _restored(monkeypatch, settings) -> None:
    """The default database's dict is the one its connections read: put it back after the test."""
    database = settings.DATABASES["default"]
    for key in ("CONN_MAX_AGE", "CONN_HEALTH_CHECKS"):
        monkeypatch.setitem(database, key, database.get(key))


def test_a_pool_process_keeps_its_connection_between_tasks_and_checks_it_before_use(settings, monkeypatch):
    _restored(monkeypatch, settings)
    settings.WORKER_DB_CONN_MAX_AGE = 300
    keep_database_connections()
    assert settings.DATABASES["default"]["CONN_MAX_AGE"] == 300
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True
    # Celery's Django fixup would otherwise close the connection after every task.
    assert app.conf.get("CELERY_DB_REUSE_MAX")


def test_no_reuse_leaves_the_connection_per_task(settings, monkeypatch):
    _restored(monkeypatch, settings)
    before = copy.deepcopy(settings.DATABASES)
    settings.WORKER_DB_CONN_MAX_AGE = 0
    keep_database_connections()
    assert settings.DATABASES == before


def test_the_worker_main_process_preloads_what_a_run_imports_on_first_use():
    code = (
        "import sys, django; django.setup()\n"
        "from celery.signals import worker_init\n"
        "import conversations.tasks\n"
        "assert 'langchain_openai' not in sys.modules\n"
        "worker_init.send(sender=None)\n"
        "from agent_platform.runtime.preload import RUN_MODULES\n"
        "print(sorted(set(RUN_MODULES) - set(sys.modules)))\n"
    )
    env = {"DJANGO_SETTINGS_MODULE": "config.test_settings", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


def test_a_process_sends_tasks_over_two_shared_broker_connections_at_most():
    # Celery's default (10) let a burst of requests open a broker connection each.
    assert app.conf.broker_pool_limit == 2
    assert app.pool.limit == 2

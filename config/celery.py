"""The Celery app: broker from REDIS_URL, tasks discovered from every installed app; and the database
connections of its pool processes."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("agent_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def keep_database_connections(**_kwargs) -> None:
    """A pool process runs its tasks one after another on one thread, so it keeps its database connection
    from one task to the next (``WORKER_DB_CONN_MAX_AGE`` seconds at most) instead of opening one per
    run. Celery's own fixup closes it after every task unless ``CELERY_DB_REUSE_MAX`` is set; Django's
    ``close_old_connections`` around each task (below) then drops one that errored or grew old, as it
    does around a request. Web processes keep closing theirs at each request's end."""
    from django.conf import settings

    if settings.WORKER_DB_CONN_MAX_AGE:
        for database in settings.DATABASES.values():  # the dicts the connections read at connect time
            # Checked (SELECT 1) at its first use in a task: a server restart between two tasks is met
            # by a new connection, not a failed run.
            database.update(CONN_MAX_AGE=settings.WORKER_DB_CONN_MAX_AGE, CONN_HEALTH_CHECKS=True)


@task_prerun.connect
@task_postrun.connect
def close_old_database_connections(*, task=None, **_kwargs) -> None:
    """Around a task in a worker, as around a request: not around one applied eagerly in its caller's
    process (a test's, whose connection holds its transaction)."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()

"""Work per run does not grow with wall time (issue 41, item 3): the recovery passes every worker makes
every sixth of a lease share one database connection instead of opening one each, and a run's lease is
renewed a period after its latest renewal, whoever made it (a transcript write renews it too), not on
a fixed beat beside it."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.db.backends.signals import connection_created
from django.utils import timezone

from conversations.models import AgentRun
from conversations.services.leases import run_lease
from conversations.services.recovery import recovery_loop
from conversations.signals import recovery_pass

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

WAIT_SECONDS = 30


def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_recovery_passes_share_one_database_connection(settings):
    settings.RUN_LEASE_SECONDS = 1.2  # a pass every 0.2 s
    opened: list[str] = []
    passes: list[object] = []

    def on_connect(sender, connection, **kwargs) -> None:
        opened.append(threading.current_thread().name)

    def on_pass(sender, **kwargs) -> None:
        passes.append(kwargs["now"])

    connection_created.connect(on_connect)
    recovery_pass.connect(on_pass)
    stop = threading.Event()
    loop = threading.Thread(
        target=recovery_loop, kwargs={"first_pass_now": True, "stop": stop}, name="recovery-under-test"
    )
    try:
        loop.start()
        _until(lambda: len(passes) >= 4, "four recovery passes")
    finally:
        stop.set()
        loop.join(WAIT_SECONDS)
        connection_created.disconnect(on_connect)
        recovery_pass.disconnect(on_pass)
    assert not loop.is_alive()
    assert opened.count("recovery-under-test") == 1, opened  # one for the loop's life, not one a pass


def test_a_lease_its_holder_renews_is_not_renewed_again_in_between(thread, settings):
    settings.RUN_LEASE_SECONDS = 6  # the renewer's UPDATE is due 1 s after the latest renewal
    claimed_at = timezone.now()
    run = AgentRun.objects.create(
        conversation=thread, status=AgentRun.Status.RUNNING, worker="here:1", heartbeat_at=claimed_at
    )

    def heartbeat():
        return AgentRun.objects.values_list("heartbeat_at", flat=True).get(pk=run.pk)

    with run_lease(run_id=run.pk, worker="here:1") as lease:
        holding_until = time.monotonic() + 2.5  # two and a half periods
        while time.monotonic() < holding_until:
            lease.renewed()  # as each transcript write does, in its own transaction
            time.sleep(0.05)
        assert heartbeat() == claimed_at  # the renewer wrote nothing: the holder kept it renewed
        _until(lambda: heartbeat() != claimed_at, "the renewer's own renewal")  # the holder went quiet
        assert not lease.is_set()
    connection.close()

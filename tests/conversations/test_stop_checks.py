"""How a running run asks whether the user stopped it: the run row read at the claim is the first
database check, the cache flag is read at most every 50 ms by all of its threads, the database at
most every second (executor) or half second (a waiting tool), and a Stop once seen stays seen."""

from __future__ import annotations

import pytest
from django.utils import timezone

from conversations import run_signals
from conversations.models import AgentRun
from conversations.services import stop_checks
from conversations.services.stop_checks import RunStopChecks


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(stop_checks.time, "monotonic", clock.monotonic)
    return clock


@pytest.fixture
def run(thread) -> AgentRun:
    return AgentRun.objects.create(conversation=thread, status=AgentRun.Status.RUNNING)


@pytest.mark.django_db
def test_the_first_checks_of_a_run_ask_no_database(run, clock, django_assert_num_queries):
    checks = RunStopChecks(run)
    with django_assert_num_queries(0):
        assert not checks.flag() and not checks.by_executor() and not checks.in_tool()


@pytest.mark.django_db
def test_a_stop_recorded_before_the_claim_is_seen_at_once(run, clock):
    run.cancel_requested_at = timezone.now()
    assert RunStopChecks(run).flag()


@pytest.mark.django_db
def test_the_flag_is_read_at_most_every_fifty_milliseconds_and_stays_seen(run, clock):
    checks = RunStopChecks(run)
    assert not checks.flag()
    run_signals.cancel_flag_set(run_id=run.pk)
    try:
        assert not checks.flag()  # read 0 ms ago
        clock.now += stop_checks.FLAG_CHECK_SECONDS + 0.001
        assert checks.flag()
        run_signals.run_signals_clear(run_id=run.pk)
        assert checks.flag()  # a Stop once seen stays seen
    finally:
        run_signals.run_signals_clear(run_id=run.pk)


@pytest.mark.django_db
def test_a_lost_flag_is_made_up_for_by_the_database_within_its_interval(
    run, clock, django_assert_num_queries
):
    checks = RunStopChecks(run)
    AgentRun.objects.filter(pk=run.pk).update(cancel_requested_at=timezone.now())  # the flag was lost
    clock.now += stop_checks.TOOL_STOP_DB_CHECK_SECONDS / 2
    with django_assert_num_queries(0):
        assert not checks.in_tool()
    clock.now += stop_checks.TOOL_STOP_DB_CHECK_SECONDS / 2 + 0.001
    try:
        with django_assert_num_queries(1):
            assert checks.in_tool()
        assert run_signals.cancel_flag_is_set(run_id=run.pk)  # set where the run's model call sees it
    finally:
        run_signals.run_signals_clear(run_id=run.pk)


@pytest.mark.django_db
def test_the_executor_asks_the_database_once_a_second(run, clock, django_assert_num_queries):
    checks = RunStopChecks(run)
    clock.now += stop_checks.CANCEL_DB_CHECK_SECONDS - 0.01
    with django_assert_num_queries(0):
        assert not checks.by_executor()
    clock.now += 0.02
    with django_assert_num_queries(1):
        assert not checks.by_executor()
    with django_assert_num_queries(0):
        assert not checks.by_executor()

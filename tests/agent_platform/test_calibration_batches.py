"""Calibration readings are stored in batches: no row lock per model call; a batch applies its
readings one by one with the same bounds as ever, and waiting readings already count in the process."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from agent_platform.calibration.models import TokenCalibration
from agent_platform.calibration.services import calibration_flush, calibration_record, calibration_source_for
from agent_platform.models import Agent, ModelEndpoint
from context_engine.tokens.calibration import Calibration

pytestmark = pytest.mark.services

READINGS = [(1000, 1300), (1000, 1250), (2000, 9000), (1000, 1280), (500, 640)]  # one far off: ignored


@pytest.fixture
def remote_agent(db):
    endpoint = ModelEndpoint.objects.create(name="remote", base_url="http://remote.invalid/v1")
    return Agent.objects.create(name="Remote", slug="remote", endpoint=endpoint, model_name="gpt-4o-mini")


def _sequential() -> Calibration:
    calibration = Calibration()
    for estimated, reported in READINGS:
        calibration = calibration.observe(estimated=estimated, reported=reported)
    return calibration


@pytest.mark.django_db(transaction=True)
def test_readings_wait_in_the_process_and_one_flush_stores_them_with_the_usual_bounds(remote_agent, settings):
    settings.CALIBRATION_FLUSH_SECONDS = 60
    for estimated, reported in READINGS:
        calibration_record(agent=remote_agent, estimated=estimated, reported=reported)
    assert not TokenCalibration.objects.exists()  # no write, no row lock, per reading
    expected = _sequential()
    # A graph built now already sees them.
    assert calibration_source_for(agent=remote_agent).current() == expected

    assert calibration_flush() == len(READINGS)
    row = TokenCalibration.objects.get()
    assert (row.factor, row.observations) == (expected.factor, expected.observations)
    assert calibration_flush() == 0  # nothing held twice


@pytest.mark.django_db(transaction=True)
def test_a_batch_is_stored_by_itself_within_the_flush_interval(remote_agent, settings):
    settings.CALIBRATION_FLUSH_SECONDS = 0.2
    calibration_record(agent=remote_agent, estimated=1000, reported=1300)
    deadline = time.monotonic() + 10
    while not TokenCalibration.objects.exists():
        assert time.monotonic() < deadline, "the batch was never stored"
        time.sleep(0.05)
    connection.close()
    assert TokenCalibration.objects.get().observations == 1

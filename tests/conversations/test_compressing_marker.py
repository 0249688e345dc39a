"""The "compressing" marker is a short lease: renewed while its compression runs, gone within one
lease of its holder's death (a killed web process), and cleared at once by a normal end."""

from __future__ import annotations

import time
import uuid

from conversations.selectors import COMPRESSING_KEY, thread_compressing
from conversations.services import pressure
from conversations.services.pressure import thread_compressing_clear, thread_compressing_mark


def test_the_marker_outlives_its_lease_only_while_renewed(settings):
    settings.COMPRESSING_LEASE_SECONDS = 1
    thread_id = uuid.uuid4()
    thread_compressing_mark(thread_id=thread_id, trigger="manual")
    try:
        time.sleep(2.5)  # two and a half leases: still there only because it is renewed
        assert thread_compressing(thread_id=thread_id)

        # The holder dies: its renewals stop and nobody clears the marker.
        pressure._renewals[COMPRESSING_KEY.format(thread_id=thread_id)].set()
        time.sleep(1.5)
        assert not thread_compressing(thread_id=thread_id)
    finally:
        thread_compressing_clear(thread_id=thread_id)


def test_clearing_ends_the_marker_at_once_and_for_good(settings):
    settings.COMPRESSING_LEASE_SECONDS = 1
    thread_id = uuid.uuid4()
    thread_compressing_mark(thread_id=thread_id, trigger="manual")
    thread_compressing_clear(thread_id=thread_id)
    assert not thread_compressing(thread_id=thread_id)
    time.sleep(0.8)  # past a renewal: a late one must not bring it back
    assert not thread_compressing(thread_id=thread_id)

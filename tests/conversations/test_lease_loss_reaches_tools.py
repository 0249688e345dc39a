"""Issue 38: losing the run's lease (recovery gave the run to another worker) reaches a tool call as
Stop does: the run's stop checks see the renewer's "lost" event, and the tool's budget watcher ends
the call within a renewal period and a poll."""

from __future__ import annotations

import threading
import time

import pytest
from django.utils import timezone
from langchain_core.messages import ToolMessage

from agent_platform.runtime.stopping import ToolBudgetMiddleware, ToolStopped
from agent_platform.tools.call_budget import budget_check
from context_engine.state import STOP_CHECK_CONFIG_KEY
from conversations.models import AgentRun
from conversations.services.leases import run_lease
from conversations.services.stop_checks import RunStopChecks

pytestmark = pytest.mark.django_db(transaction=True)  # the renewer writes on a thread of its own


class _Request:
    def __init__(self, stop_check) -> None:
        self.tool_call = {"name": "search_history", "id": "call-1", "args": {}}
        self.runtime = type(
            "Runtime", (), {"config": {"configurable": {STOP_CHECK_CONFIG_KEY: stop_check}}}
        )()


def test_a_lost_lease_ends_a_running_tool_call(settings, thread):
    settings.RUN_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    run = AgentRun.objects.create(
        conversation=thread, status=AgentRun.Status.RUNNING, worker="here:1", heartbeat_at=timezone.now()
    )
    tool_ended = threading.Event()

    def slow_tool(request):
        try:
            while True:
                budget_check()
                time.sleep(0.01)
        finally:
            tool_ended.set()
        return ToolMessage("never", tool_call_id="call-1")

    with run_lease(run_id=run.pk, worker="here:1") as lost:
        checks = RunStopChecks(run)
        checks.lease_lost = lost
        threading.Timer(
            0.3, lambda: AgentRun.objects.filter(pk=run.pk).update(worker="elsewhere:2")
        ).start()  # recovery hands the run to another worker
        started = time.monotonic()
        with pytest.raises(ToolStopped):
            ToolBudgetMiddleware().wrap_tool_call(_Request(checks.in_tool), slow_tool)
        took = time.monotonic() - started
    assert lost.is_set() and checks.in_tool()
    assert took < 0.3 + 0.2 + 0.5, f"{took:.2f} s"
    assert tool_ended.wait(1.0)

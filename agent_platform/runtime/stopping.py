"""Stop reaches a tool that waits: ``web_search`` (HTTP), ``query_kb`` and ``task`` (a sub-agent) run
beside the graph while the call watches the run's stop check, so Stop ends the call within
``STOP_POLL_SECONDS`` instead of when the tool returns.

The run's executor puts its stop check (a cheap callable: the cache flag, never a database query on a
graph thread) in the run config under ``STOP_CHECK_CONFIG_KEY``; without one, tools run as usual. A
stopped call raises ``ToolStopped``, which ends the graph stream; the executor then answers the call
"stopped by the user" in checkpoint and transcript. The abandoned tool finishes in its daemon thread
and its result is dropped.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from django.db import connections
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from context_engine.state import STOP_CHECK_CONFIG_KEY

__all__ = ["STOP_CHECK_CONFIG_KEY", "STOP_POLL_SECONDS", "StopWaitingToolsMiddleware", "ToolStopped"]
STOP_POLL_SECONDS = 0.1
# The tools that wait on something else (a provider, the database's search, a sub-agent's model calls).
# File tools are quick and must not be cut mid-write; ask_user waits through an interrupt instead.
WAITING_TOOLS = frozenset({"web_search", "query_kb", "task"})

ToolResult = ToolMessage | Command[Any]


class ToolStopped(Exception):
    """The user stopped the run while this tool call was waiting."""


def _stop_check(request: ToolCallRequest) -> Callable[[], bool] | None:
    if request.tool_call.get("name") not in WAITING_TOOLS:
        return None
    config = getattr(request.runtime, "config", None) or {}
    check = (config.get("configurable") or {}).get(STOP_CHECK_CONFIG_KEY)
    return check if callable(check) else None


def _in_thread(fn: Callable[[], ToolResult]) -> tuple[threading.Event, dict[str, Any]]:
    done, outcome = threading.Event(), {}
    context = contextvars.copy_context()  # the graph's config and callbacks travel with the call

    def target() -> None:
        try:
            outcome["result"] = context.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed back to the waiting call
            outcome["error"] = exc
        finally:
            connections.close_all()  # this thread's own connections (query_kb), never left open
            done.set()

    threading.Thread(target=target, name="waiting-tool", daemon=True).start()
    return done, outcome


def _result(outcome: dict[str, Any]) -> ToolResult:
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


class StopWaitingToolsMiddleware(AgentMiddleware):
    """Lets Stop end a waiting tool call (see the module docstring)."""

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        stop_requested = _stop_check(request)
        if stop_requested is None:
            return handler(request)
        done, outcome = _in_thread(lambda: handler(request))
        while not done.wait(STOP_POLL_SECONDS):
            if stop_requested():
                raise ToolStopped(request.tool_call.get("name"))
        return _result(outcome)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        stop_requested = _stop_check(request)
        if stop_requested is None:
            return await handler(request)
        task = asyncio.ensure_future(handler(request))
        while True:
            finished, _pending = await asyncio.wait({task}, timeout=STOP_POLL_SECONDS)
            if finished:
                return task.result()
            if await asyncio.to_thread(stop_requested):
                task.cancel()
                raise ToolStopped(request.tool_call.get("name"))

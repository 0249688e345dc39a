"""Every tool call's budget, applied in one place: ``ToolBudgetMiddleware`` wraps each call of every tool
(so a new tool inherits it) with

- a wall time for the whole call (``TOOL_CALL_SECONDS``; ``task``, a sub-agent's whole loop,
  ``TOOL_TASK_SECONDS``): past it the call answers a tool error the model reads, never a failed turn;
- Stop and a lost run lease: the run's stop check (in the run config under ``STOP_CHECK_CONFIG_KEY``;
  the executor's ``RunStopChecks.in_tool``) is polled every ``STOP_POLL_SECONDS`` while the call runs
  beside the graph, so the run ends within a poll of Stop instead of when the tool returns. A stopped
  call raises ``ToolStopped``, which ends the graph stream; the executor answers the call "stopped by
  the user" in checkpoint and transcript;
- the size of its answer (``TOOL_OUTPUT_MAX_CHARS``).

The watcher never kills a thread: it marks the call's ``CallBudget`` abandoned, and a tool that works in
steps (``search_history``, line by line) sees it at its next ``budget_check()`` and ends; a tool that
waits on a provider finishes in its daemon thread and its result is dropped. The tools that write
(``write_file``, ``edit_file``) and ``ask_user`` (an interrupt) run inline: they are quick, and a write
is never cut in half.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.db import connections
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from agent_platform.tools.call_budget import (
    CallBudget,
    CallCancelled,
    CallOverBudget,
    budget_set,
    output_bounded,
)
from context_engine.state import STOP_CHECK_CONFIG_KEY

__all__ = ["STOP_CHECK_CONFIG_KEY", "STOP_POLL_SECONDS", "ToolBudgetMiddleware", "ToolStopped"]
STOP_POLL_SECONDS = 0.1
# Quick, and not to be cut mid-way: they run on the graph's thread (their budget still applies).
INLINE_TOOLS = frozenset({"write_file", "edit_file", "ask_user"})
SUBAGENT_TOOL = "task"

ToolResult = ToolMessage | Command[Any]


class ToolStopped(Exception):
    """The user stopped the run (or its worker lost the run) while this tool call was running."""


def call_budget_for(name: str) -> CallBudget:
    seconds = settings.TOOL_TASK_SECONDS if name == SUBAGENT_TOOL else settings.TOOL_CALL_SECONDS
    return CallBudget(seconds=float(seconds))


def _stop_check(request: ToolCallRequest) -> Callable[[], bool] | None:
    config = getattr(request.runtime, "config", None) or {}
    check = (config.get("configurable") or {}).get(STOP_CHECK_CONFIG_KEY)
    return check if callable(check) else None


def _tool_error(request: ToolCallRequest, reason: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(
        content=f"Error: {reason}. Try a narrower call (a literal pattern, a smaller page).",
        tool_call_id=call.get("id") or "",
        name=call.get("name"),
        status="error",
    )


def _bounded(result: ToolResult) -> ToolResult:
    limit = settings.TOOL_OUTPUT_MAX_CHARS
    if isinstance(result, ToolMessage) and isinstance(result.content, str) and len(result.content) > limit:
        return result.model_copy(update={"content": output_bounded(result.content, max_chars=limit)})
    return result


def _within(request: ToolCallRequest, budget: CallBudget, run: Callable[[], ToolResult]) -> ToolResult:
    """``run()`` under ``budget``: a call that ran out of time is a tool error; one the run no longer
    wants raises ``ToolStopped``."""
    try:
        with budget_set(budget):
            return run()
    except CallOverBudget as exc:
        return _tool_error(request, str(exc))
    except CallCancelled as exc:
        raise ToolStopped(request.tool_call.get("name")) from exc


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

    threading.Thread(target=target, name="tool-call", daemon=True).start()
    return done, outcome


def _result(outcome: dict[str, Any]) -> ToolResult:
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _given_up(request: ToolCallRequest, budget: CallBudget, *, stop: bool) -> ToolResult:
    """The watcher's verdict on a call still running: ``ToolStopped`` on Stop, a tool error past its
    time; either way the call is marked abandoned, so its next ``budget_check`` ends it."""
    budget.abandoned.set()
    if stop:
        raise ToolStopped(request.tool_call.get("name"))
    return _tool_error(request, f"the tool call ran past its time budget of {budget.seconds:g} s")


class ToolBudgetMiddleware(AgentMiddleware):
    """Applies every tool call's budget (see the module docstring)."""

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        name = request.tool_call.get("name") or ""
        budget = call_budget_for(name)
        if name in INLINE_TOOLS:
            return _bounded(_within(request, budget, lambda: handler(request)))
        stopped = _stop_check(request)
        done, outcome = _in_thread(lambda: _within(request, budget, lambda: handler(request)))
        while not done.wait(STOP_POLL_SECONDS):
            stop = stopped is not None and stopped()
            if stop or budget.over_time():
                return _given_up(request, budget, stop=stop)
        return _bounded(_result(outcome))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        budget = call_budget_for(request.tool_call.get("name") or "")
        stopped = _stop_check(request)

        async def run() -> ToolResult:
            try:
                with budget_set(budget):
                    return await handler(request)
            except CallOverBudget as exc:
                return _tool_error(request, str(exc))
            except CallCancelled as exc:
                raise ToolStopped(request.tool_call.get("name")) from exc

        task = asyncio.ensure_future(run())
        while True:
            finished, _pending = await asyncio.wait({task}, timeout=STOP_POLL_SECONDS)
            if finished:
                return _bounded(task.result())
            stop = stopped is not None and await asyncio.to_thread(stopped)
            if stop or budget.over_time():
                task.cancel()
                return _given_up(request, budget, stop=stop)

"""What one run brings to a graph that every thread of an agent configuration shares: the thread's
workdir and its spend-guard ledger, carried in the run config under ``RUN_SCOPE_CONFIG_KEY``.

A compiled agent graph is built once per configuration (``graph.agent_graph_for``) and serves many
threads at once, so its tools and middleware close over nothing of a thread: they hold the stand-ins
below, which look the run's values up in the config of the call they serve (LangGraph's
``get_config``: set for every node, tool and middleware call, and copied into a waiting tool's
thread). A call made outside any run finds no workdir (a ``StoreError``, which compaction treats as
a failed write) and keeps the spend-guard ledger in its own state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.config import get_config

from agent_platform.runtime.state_repository import AgentStateRepository
from agent_platform.threads import AgentThread
from agent_platform.workdir import Workdir, workdir_for
from context_engine.errors import StoreError
from context_engine.state import SUMMARY_CALLS_KEY
from context_engine.summary.spend_guard import (
    LedgerSource,
    OwnState,
    SharedLedger,
    ledger_merge,
    recent_calls,
)

RUN_SCOPE_CONFIG_KEY = "run_scope"
_OWN_STATE = OwnState()


@dataclass(frozen=True)
class RunScope:
    workdir: Workdir
    # A thread's run: a new ``SharedLedger`` it lends its sub-agents; a sub-agent: the lent side.
    ledger: LedgerSource

    def for_subagent(self) -> RunScope:
        """A sub-agent's scope: the same files; its summary calls billed to this run's thread."""
        lent = self.ledger.lend() if isinstance(self.ledger, SharedLedger) else self.ledger
        return RunScope(workdir=self.workdir, ledger=lent)


def run_scope_for(conversation: AgentThread) -> RunScope:
    """A new run's scope on ``conversation``'s thread."""
    return RunScope(workdir=workdir_for(conversation), ledger=SharedLedger())


def run_ledger_save(scope: RunScope, repository: AgentStateRepository, *, now: datetime) -> int:
    """Write to the thread's checkpoint the summary calls of this run that its ledger lacks, and return
    how many. A run that fails loses its last model call's state update, and with it the calls that
    update was to enter (a sub-agent's too); the provider billed them all the same, so the run's end
    enters them here (idempotent: a call the checkpoint holds is not entered twice)."""
    if not isinstance(scope.ledger, SharedLedger):
        return 0
    made = scope.ledger.made()
    if not made:
        return 0
    held = repository.get_values().get(SUMMARY_CALLS_KEY)
    merged = ledger_merge(held, made, now=now)
    if merged is None:
        return 0
    repository.update({SUMMARY_CALLS_KEY: merged}, as_node="model")
    return len(merged) - len(recent_calls(held, now=now))


def current_run_scope() -> RunScope | None:
    """The scope of the run whose call is being served, if any."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # outside a graph run
        return None
    scope = configurable.get(RUN_SCOPE_CONFIG_KEY)
    return scope if isinstance(scope, RunScope) else None


class RunWorkdir:
    """The workdir of the run being served: a ``Workdir`` (and ``ResultStore``) stand-in. Each
    attribute is looked up when it is read, so a bound method taken on a graph thread (a staged
    store's flush hands them to its writer threads) keeps that run's workdir."""

    def current(self) -> Workdir:
        scope = current_run_scope()
        if scope is None:
            raise StoreError("No workdir: this call is not part of a thread's run.")
        return scope.workdir

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.current(), name)

    def __repr__(self) -> str:
        return "<RunWorkdir: the workdir of the run being served>"


class RunLedger:
    """The spend-guard ledger of the run being served (a ``LedgerSource``): the agent's own state
    outside a run."""

    def current(self) -> LedgerSource:
        scope = current_run_scope()
        return scope.ledger if scope is not None else _OWN_STATE

    def enter(self, ledger: Iterable[Mapping[str, Any]] | None, *, now: datetime) -> tuple[Any, bool]:
        return self.current().enter(ledger, now=now)

    def spent(self, calls: Sequence[int], *, now: datetime) -> None:
        return self.current().spent(calls, now=now)

"""The budget of one tool call: its wall time, whether the run still wants it (Stop, a lost lease), and
how much text it may answer. ``runtime.stopping.ToolBudgetMiddleware`` sets one around every call; a
tool that works in steps (a line, a file, a page) calls ``budget_check()`` between them, so the call
ends within a step of its deadline or of Stop instead of when its loop does.

Outside a run (a tool invoked directly, a test) there is no budget and ``budget_check()`` does nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


class CallOverBudget(Exception):
    """The call ran past its wall time: the model reads it as a tool error."""


class CallCancelled(Exception):
    """The run no longer wants this call (Stop, or its worker lost the run's lease)."""


@dataclass
class CallBudget:
    seconds: float
    stopped: Callable[[], bool] | None = None
    started: float = field(default_factory=time.monotonic)
    # Set by the watcher when it gave up on the call: the tool's next check ends it.
    abandoned: threading.Event = field(default_factory=threading.Event)

    @property
    def deadline(self) -> float:
        return self.started + self.seconds

    def over_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raise if the call must end now (cheap: a clock read and an event; ``stopped`` is the run's
        own rate-limited check)."""
        if self.abandoned.is_set() or (self.stopped is not None and self.stopped()):
            raise CallCancelled()
        if self.over_time():
            raise CallOverBudget(f"the tool call ran past its time budget of {self.seconds:g} s")


_CURRENT: contextvars.ContextVar[CallBudget | None] = contextvars.ContextVar("tool_call_budget", default=None)


def current_budget() -> CallBudget | None:
    return _CURRENT.get()


def budget_check() -> None:
    """End the current tool call if it is over its budget or no longer wanted (no-op outside a call)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.check()


@contextlib.contextmanager
def budget_set(budget: CallBudget) -> Iterator[CallBudget]:
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def output_bounded(text: str, *, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters with a note saying so (unchanged when it fits)."""
    if len(text) <= max_chars:
        return text
    note = f"\n[output cut: the tool answered {len(text)} characters; at most {max_chars} are kept]"
    return text[: max(max_chars - len(note), 0)] + note

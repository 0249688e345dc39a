"""A thread's branches, replayed from its forks: pure arithmetic on transcript seqs (no ORM).

The transcript is append-only and its seqs grow with time, so every branch (a path from the first
message to a last one) is a few seq intervals. Replaying the thread's forks in the order they were
made gives every branch the thread ever had current:

- before fork ``k``, the current branch is *branch k* (its last interval closed at the fork's
  ``hidden_to_seq``, the transcript's next seq at that moment); the branch after the last fork,
  still growing, is the current one, numbered ``len(forks)``;
- an edit or a regeneration keeps the part of the branch before ``hidden_from_seq``;
- a continue takes branch ``restored_branch`` whole;
- then the new current branch grows from ``hidden_to_seq`` on.

Branch numbers never change (a later fork only adds a branch), so a continue names its branch by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CONTINUE = "continue"

Interval = tuple[int, int | None]  # seq from (inclusive), to (exclusive; None: still growing)


@dataclass(frozen=True)
class ForkStep:
    """One fork as the replay needs it (``MessageFork``'s kind, bounds and restored branch)."""

    kind: str
    hidden_from_seq: int
    hidden_to_seq: int
    restored_branch: int | None = None


def _clip(branch: Sequence[Interval], before: int) -> list[Interval]:
    """The part of ``branch`` with seqs below ``before``."""
    kept: list[Interval] = []
    for start, end in branch:
        if start >= before:
            break
        kept.append((start, before if end is None or end > before else end))
    return kept


def _closed(branch: Sequence[Interval], at: int) -> tuple[Interval, ...]:
    """``branch`` with its growing interval ended at ``at`` (and empty intervals dropped)."""
    closed = [(start, at if end is None else end) for start, end in branch]
    return tuple((start, end) for start, end in closed if end is not None and end > start)


def branches_replay(steps: Sequence[ForkStep]) -> list[tuple[Interval, ...]]:
    """Every branch of the thread by number, the current one last (its last interval open)."""
    branches: list[tuple[Interval, ...]] = []
    current: list[Interval] = [(1, None)]
    for step in steps:
        closed = _closed(current, step.hidden_to_seq)
        branches.append(closed)
        if (
            step.kind == CONTINUE
            and step.restored_branch is not None
            and step.restored_branch < len(branches)
        ):
            base = list(branches[step.restored_branch])
        else:
            base = _clip(closed, step.hidden_from_seq)
        current = [*base, (step.hidden_to_seq, None)]
    branches.append(tuple(current))
    return branches


def branch_holds(branch: Sequence[Interval], seq: int) -> bool:
    return any(start <= seq and (end is None or seq < end) for start, end in branch)


def branch_holding(branches: Sequence[Sequence[Interval]], seq: int) -> int | None:
    """The number of the latest branch that holds ``seq`` (the current one first), None if none does."""
    for number in range(len(branches) - 1, -1, -1):
        if branch_holds(branches[number], seq):
            return number
    return None

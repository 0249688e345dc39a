"""What a caching provider bills (issue 40): over the effectiveness replays (``bench.effectiveness``:
every trajectory, ours and both peers run the same way), each request's prompt prefix shared with the
thread's previous request is served from the provider's cache, as OpenAI does it: whole 128-token
blocks once the shared prefix reaches 1,024 tokens (cl100k, the bench's one reference tokenizer).

Per middleware: the share of input tokens served from cache, the billed input cost under two price
tables (cached tokens at 50% and at 10% of the input price; summary calls' prompts billed in full), the
requests that changed a message before the newest, summary calls and identifiers reachable."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from bench import effectiveness, peers
from bench.common import markdown_table
from bench.tokenizers import count_cl100k

CACHE_MIN_TOKENS = 1024
CACHE_BLOCK_TOKENS = 128
# Cached tokens as a share of the input price: a 50%-off cache (OpenAI) and a 90%-off one (DeepSeek,
# Anthropic reads).
PRICE_TABLES = {"50% off": 0.5, "90% off": 0.1}
COST_TARGET = 0.7  # ours at most this × the cheaper peer's billed input cost, under both tables
IDS_TARGET = 0.95


def _key(message: BaseMessage) -> tuple[str, str]:
    return type(message).__name__, peers.message_text(message)


def shared_prefix_tokens(current: Sequence[BaseMessage], previous: Sequence[BaseMessage]) -> int:
    """The tokens of ``current`` that repeat ``previous`` from the start: whole equal messages, then the
    equal leading characters of the first that differs (a provider caches tokens, not messages)."""
    shared = peers.REPLY_OVERHEAD
    for now, before in zip(current, previous, strict=False):
        if _key(now) == _key(before):
            shared += peers._count(peers.message_text(now)) + peers.MESSAGE_OVERHEAD
            continue
        a, b = peers.message_text(now), peers.message_text(before)
        common = os.path.commonprefix([a, b]) if type(now) is type(before) else ""
        return shared + (count_cl100k(common) if common else 0)
    return shared


def cached_tokens(shared: int, prompt: int) -> int:
    if shared < CACHE_MIN_TOKENS:
        return 0
    return min(shared // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS, prompt)


def earlier_changed(current: Sequence[BaseMessage], previous: Sequence[BaseMessage]) -> bool:
    """Did ``current`` change a message ``previous`` had (anything but appending)?"""
    if len(current) < len(previous):
        return True
    return any(_key(a) != _key(b) for a, b in zip(current, previous, strict=False))


@dataclass
class Bill:
    middleware: str
    requests: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    summary_input_tokens: int = 0
    summary_calls: int = 0
    changed: int = 0
    ids_total: int = 0
    ids_reachable: int = 0

    def cost(self, cached_price: float) -> float:
        """Billed input, in millions of input-price tokens (input price 1 per token)."""
        uncached = self.input_tokens - self.cached_tokens
        return (uncached + self.cached_tokens * cached_price + self.summary_input_tokens) / 1e6


def bill(replay: effectiveness.Replay) -> Bill:
    out = Bill(replay.middleware, summary_calls=replay.summary_calls)
    out.summary_input_tokens = replay.summary_prompt_tokens
    out.ids_total, out.ids_reachable = replay.ids_total, replay.ids_recoverable
    previous: list[BaseMessage] = []
    for request in replay.requests:
        messages = request  # the system prompt first, the same on every request of every middleware
        prompt = peers.request_tokens(messages)
        out.requests += 1
        out.input_tokens += prompt
        if previous:
            out.cached_tokens += cached_tokens(shared_prefix_tokens(messages, previous), prompt)
            out.changed += earlier_changed(messages, previous)
        previous = messages
    return out


def totals(replays: Sequence[effectiveness.Replay]) -> dict[str, Bill]:
    out = {name: Bill(name) for name in peers.MIDDLEWARES}
    for replay in replays:
        one, total = bill(replay), out[replay.middleware]
        for name in ("requests", "input_tokens", "cached_tokens", "summary_input_tokens", "summary_calls"):
            setattr(total, name, getattr(total, name) + getattr(one, name))
        total.changed += one.changed
        total.ids_total += one.ids_total
        total.ids_reachable += one.ids_reachable
    return out


def rows(bills: dict[str, Bill]) -> list[dict]:
    out = []
    for name, b in bills.items():
        row = {
            "middleware": name,
            "requests": b.requests,
            "input tokens": b.input_tokens,
            "served from cache": b.cached_tokens / b.input_tokens if b.input_tokens else 0.0,
            "changed an earlier message": b.changed,
            "summary calls": b.summary_calls,
            "summary input tokens": b.summary_input_tokens,
            "identifiers reachable": b.ids_reachable / b.ids_total if b.ids_total else 1.0,
        }
        for label, price in PRICE_TABLES.items():
            row[f"billed input, {label} cache"] = b.cost(price)
        out.append(row)
    return out


def targets(bills: dict[str, Bill]) -> dict[str, object]:
    ours = bills["ours"]
    found: dict[str, object] = {}
    for label, price in PRICE_TABLES.items():
        cheaper = min(bills[name].cost(price) for name in bills if name != "ours")
        found[label] = ours.cost(price) / cheaper if cheaper else None
    reachable = ours.ids_reachable / ours.ids_total if ours.ids_total else 1.0
    found["met"] = (
        all(ratio is not None and ratio <= COST_TARGET for key, ratio in found.items() if key in PRICE_TABLES)
        and reachable >= IDS_TARGET
    )
    return found


def run(replays: Sequence[effectiveness.Replay] | None = None) -> dict[str, Bill]:
    return totals(replays if replays is not None else effectiveness.run())


def render(bills: dict[str, Bill]) -> str:
    formats = {
        "served from cache": lambda v: f"{v:.1%}",
        "identifiers reachable": lambda v: f"{v:.1%}",
        **{f"billed input, {label} cache": (lambda v: f"{v:.3f} M") for label in PRICE_TABLES},
        "input tokens": lambda v: f"{v:,}",
        "summary input tokens": lambda v: f"{v:,}",
    }
    table = markdown_table(rows(bills), formats=formats)
    t = targets(bills)
    ratios = ", ".join(f"{label}: {t[label]:.2f}×" for label in PRICE_TABLES if t[label] is not None)
    verdict = "met" if t["met"] else "NOT met"
    return (
        table
        + f"\nOurs against the cheaper peer's billed input cost: {ratios} (target ≤ {COST_TARGET}× under both, "
        f"identifiers reachable ≥ {IDS_TARGET:.0%}): {verdict}.\n"
    )


if __name__ == "__main__":
    print(render(run()))

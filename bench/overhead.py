"""Issue 8, item 3: middleware overhead per model call, model excluded, ours against LangChain and deepagents.

States of 100, 1,000 and 10,000 messages are built from the real trajectories (cycled with fresh ids
and tool-call ids where they run out). The handler is a no-op that returns a canned response, so only
the middleware's own work is timed:

* ``below``: trigger far above the state (the common case: no compaction, no summary);
* ``above``: trigger between our compacted view and the raw state, so ours takes the compaction path
  (no summary) while the peers, which have no compaction step, summarize (with the shared fake
  summarizer, a few microseconds per call).

``cold`` = a fresh middleware (and, for ours, cleared estimator/compaction caches and an empty store)
on a state of N messages; ``warm`` = the same middleware called before on the state, now grown by
one message. Medians of several repeats, in microseconds; GC is paused while timing, as ``timeit``
does. Targets for ours: cold <= 1.5x the faster peer, warm <= 0.3x, growth linear or better.

    python -m bench.overhead
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from bench import peers, trajectories
from bench.common import markdown_table, num

SIZES = (100, 1_000, 10_000)
COLD_TARGET = 1.5
WARM_TARGET = 0.3
# Repeats per (size, scenario): fewer for the big states to keep `make bench` within minutes.
REPEATS = {100: 51, 1_000: 21, 10_000: 11}
PROFILE_SIZE = 10_000
PROFILE_TOP = 12


def real_state(n: int) -> list[BaseMessage]:
    """``n`` messages of real trajectory content, tool calls paired, ending before a model call."""
    by_source = [trajectories.trajectories(source) for source in trajectories.SOURCES]
    # Round-robin over the sources, whole trajectories at a time, so every size mixes all of them.
    order = [ts[i] for i in range(max(map(len, by_source))) for ts in by_source if i < len(ts)]
    pool = [m for t in order for m in t.messages]
    out: list[BaseMessage] = []
    cycle = 0
    while len(out) < n:
        for m in pool:
            update: dict = {"id": f"{m.id}#{cycle}"}
            if isinstance(m, AIMessage) and m.tool_calls:
                update["tool_calls"] = [{**c, "id": f"{c['id']}#{cycle}"} for c in m.tool_calls]
            elif isinstance(m, ToolMessage):
                update["tool_call_id"] = f"{m.tool_call_id}#{cycle}"
            out.append(m.model_copy(update=update))
            if len(out) >= n and not (isinstance(out[-1], AIMessage) and out[-1].tool_calls):
                break
        cycle += 1
    return out  # may run a few past n, to end on a complete tool round


def _noop_handler(request):
    from langchain.agents.middleware import ModelResponse

    return ModelResponse(result=[AIMessage(content="ok", id="canned")])


def _clear_our_caches() -> None:
    from context_engine.compaction import tool_results as compaction
    from context_engine.tokens import messages as tokens

    tokens.clear_cache()
    compaction.clear_caches()


def _request(h: peers.Harness, messages: list[BaseMessage]):
    from langchain.agents.middleware import ModelRequest

    h.state = {"messages": messages}
    return ModelRequest(
        model=h.model,
        messages=messages,
        system_message=SystemMessage(content=peers.SYSTEM_PROMPT),
        tools=[],
        state=h.state,
        runtime=peers.RUNTIME,
    )


def _call(h: peers.Harness, request) -> Callable[[], object]:
    if h.is_before_model:
        return lambda: h.middleware.before_model(request.state, peers.RUNTIME)
    return lambda: h.middleware.wrap_model_call(request, _noop_handler)


def _timed(fn: Callable[[], object]) -> float:
    gc_was = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - start) / 1e3
    finally:
        if gc_was:
            gc.enable()


def _once(
    name: str, state: list[BaseMessage], grown: list[BaseMessage], setup: peers.Setup
) -> tuple[float, float, int]:
    """One cold call on ``state`` (fresh middleware and caches), then one warm call on ``grown``."""
    h = peers.build(name, setup, record=False)
    if name == "ours":
        _clear_our_caches()
    cold = _timed(_call(h, _request(h, state)))
    summaries = h.summarizer.calls
    warm = _timed(_call(h, _request(h, grown)))
    h.cleanup()
    return cold, warm, summaries


def measure(
    state: list[BaseMessage], setup: peers.Setup, repeats: int
) -> dict[str, tuple[float, float, int]]:
    """{middleware: (cold µs, warm µs, summary calls per cold call)}, medians of ``repeats``.

    The three middlewares are measured in turn within each repeat, so background load on the machine
    hits all of them alike; one untimed round first pays the one-off import and first-use costs.
    """
    grown = [
        *state,
        HumanMessage(content="Thanks. One more thing: please re-run the failing test.", id="grown"),
    ]
    for name in peers.MIDDLEWARES:
        _once(name, state, grown, setup)
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in peers.MIDDLEWARES}
    for _ in range(repeats):
        for name in peers.MIDDLEWARES:
            samples[name].append(_once(name, state, grown, setup))
    return {
        name: (
            statistics.median(s[0] for s in got),
            statistics.median(s[1] for s in got),
            round(statistics.fmean(s[2] for s in got)),
        )
        for name, got in samples.items()
    }


def _our_estimate(messages: list[BaseMessage]) -> tuple[int, int]:
    """(raw, compacted) estimates of ours for ``messages`` (system prompt included)."""
    from context_engine.compaction.tool_results import compact_messages
    from context_engine.config import CompressionConfig
    from context_engine.store import MemoryStore
    from context_engine.tokens.messages import estimate_messages, profile_for_model

    profile = profile_for_model(peers.MODEL_NAME)
    system = [SystemMessage(content=peers.SYSTEM_PROMPT)]
    config = CompressionConfig(trigger_tokens=1, model_name=peers.MODEL_NAME)
    compacted = compact_messages(messages, config=config, store=MemoryStore(), profile=profile).messages
    raw = estimate_messages([*system, *messages], profile=profile)
    return raw, estimate_messages([*system, *compacted], profile=profile)


def setups(state: list[BaseMessage]) -> dict[str, peers.Setup]:
    raw, compacted = _our_estimate(state)
    peer = count_tokens_approximately(state)
    window = 10 * max(raw, peer)
    below = peers.Setup(trigger_tokens=window // 2, keep_messages=10, context_window=window)
    # Between our compacted view and both raw counts: ours compacts, the peers summarize.
    trigger = (compacted + min(raw, peer)) // 2
    above = peers.Setup(trigger_tokens=trigger, keep_messages=10, context_window=window)
    return {"below": below, "above": above}


def run(sizes=SIZES) -> list[dict]:
    rows = []
    for n in sizes:
        state = real_state(n)
        for scenario, setup in setups(state).items():
            row: dict = {"messages": len(state), "scenario": scenario, "trigger": setup.trigger_tokens}
            for name, (cold, warm, summaries) in measure(state, setup, REPEATS.get(n, 5)).items():
                row[f"{name}_cold_us"] = cold
                row[f"{name}_warm_us"] = warm
                row[f"{name}_summaries"] = summaries
            for kind in ("cold", "warm"):
                best = min(row[f"langchain_{kind}_us"], row[f"deepagents_{kind}_us"])
                row[f"{kind}_vs_faster_peer"] = row[f"ours_{kind}_us"] / best
            row["cold_ok"] = "yes" if row["cold_vs_faster_peer"] <= COLD_TARGET else "NO"
            row["warm_ok"] = "yes" if row["warm_vs_faster_peer"] <= WARM_TARGET else "NO"
            rows.append(row)
    return rows


def growth(rows: list[dict]) -> list[dict]:
    """Log-log slope of time vs state size per middleware, scenario and cold/warm (1 = linear)."""
    out = []
    for scenario in ("below", "above"):
        rs = sorted((r for r in rows if r["scenario"] == scenario), key=lambda r: r["messages"])
        if len(rs) < 2:
            continue
        first, last = rs[0], rs[-1]
        row: dict = {"scenario": scenario, "sizes": f"{first['messages']:,} → {last['messages']:,}"}
        for name in peers.MIDDLEWARES:
            for kind in ("cold", "warm"):
                a, b = first[f"{name}_{kind}_us"], last[f"{name}_{kind}_us"]
                row[f"{name}_{kind}"] = math.log(b / a) / math.log(last["messages"] / first["messages"])
        out.append(row)
    return out


def hot_spots(n: int = PROFILE_SIZE, top: int = PROFILE_TOP) -> list[dict]:
    """cProfile of one cold call of ours per scenario on ``n`` messages: the functions with the most
    own time (the profiler inflates absolute times; the shares are what matter)."""
    import cProfile
    import pstats

    state = real_state(n)
    rows = []
    for scenario, setup in setups(state).items():
        h = peers.build("ours", setup, record=False)
        _clear_our_caches()
        call = _call(h, _request(h, state))
        profiler = cProfile.Profile()
        profiler.enable()
        call()
        profiler.disable()
        stats = pstats.Stats(profiler).stats
        total = sum(v[2] for v in stats.values())
        ranked = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
        for (file, line, func), (_cc, calls, tottime, cumtime, _callers) in ranked:
            where = file.split("/work/main/")[-1].split("site-packages/")[-1]
            rows.append(
                {
                    "scenario": scenario,
                    "function": f"{where}:{line}({func})" if line else func,
                    "calls": calls,
                    "own_ms": tottime * 1e3,
                    "own_share": tottime / total,
                    "cum_ms": cumtime * 1e3,
                }
            )
    # Without the profiler: the estimator alone, cold, and a length-only pass (what the peers' counter does).
    from context_engine.tokens import messages as tokens

    profile = tokens.profile_for_model(peers.MODEL_NAME)

    def estimate_cold():
        tokens.clear_cache()
        tokens.estimate_messages(state, profile=profile)

    references = {
        "tokens.estimate_messages(state), empty cache (no profiler)": estimate_cold,
        "sum(len(content)) over the same state (no profiler)": lambda: sum(
            len(m.content) if isinstance(m.content, str) else 0 for m in state
        ),
        "count_tokens_approximately(state) (no profiler)": lambda: count_tokens_approximately(state),
    }
    for label, fn in references.items():
        ms = min(_timed(fn) for _ in range(5)) / 1e3
        rows.append(
            {
                "scenario": "reference",
                "function": label,
                "calls": len(state),
                "own_ms": ms,
                "own_share": None,
                "cum_ms": None,
            }
        )
    tokens.clear_cache()
    return rows


def render_hot_spots(rows: list[dict]) -> str:
    cols = ["scenario", "function", "calls", "own_ms", "own_share", "cum_ms"]
    fmt = {
        "own_ms": num(2),
        "cum_ms": num(2),
        "own_share": lambda v: "" if v is None else f"{v:.0%}",
        "function": lambda v: f"`{v}`",
    }
    return (
        f"cProfile of one cold call of ours on {PROFILE_SIZE:,} messages (top {PROFILE_TOP} by own time; "
        "times are inflated by the profiler).\n\n" + markdown_table(rows, cols, fmt)
    )


COLUMNS = [
    "messages",
    "scenario",
    "trigger",
    "ours_cold_us",
    "langchain_cold_us",
    "deepagents_cold_us",
    "cold_vs_faster_peer",
    "cold_ok",
    "ours_warm_us",
    "langchain_warm_us",
    "deepagents_warm_us",
    "warm_vs_faster_peer",
    "warm_ok",
    "ours_summaries",
    "langchain_summaries",
    "deepagents_summaries",
]


def _x(v) -> str:
    return f"{v:.2f}×"


def render(rows: list[dict]) -> str:
    fmt = {c: num(0) for c in COLUMNS if c.endswith("_us")}
    fmt.update(
        {
            "cold_vs_faster_peer": _x,
            "warm_vs_faster_peer": _x,
            "messages": lambda v: f"{v:,}",
            "trigger": lambda v: f"{v:,}",
        }
    )
    g = growth(rows)
    gcols = ["scenario", "sizes"] + [f"{n}_{k}" for n in peers.MIDDLEWARES for k in ("cold", "warm")]
    return (
        "Microseconds per model call spent in the middleware (median; model replaced by a no-op handler). "
        "`*_summaries` = summary-model calls per cold call (the fake summarizer returns at once). "
        f"Targets for ours: warm <= {WARM_TARGET}×; cold here is on messages without stored estimates (older "
        f"checkpoints; `cold_ok` against {COLD_TARGET}×), the first call on messages that carry them is in 3b.\n\n"
        + markdown_table(rows, COLUMNS, fmt)
        + "\nGrowth: slope of log(time) against log(messages) between the smallest and the largest state "
        "(1.00 = linear, below 1 = sublinear).\n\n"
        + markdown_table(g, gcols, {c: (lambda v: f"{v:.2f}") for c in gcols[2:]})
    )


if __name__ == "__main__":
    print(render(run()))
    print(render_hot_spots(hot_spots()))

"""Issue 16, item 5a: the first model call in a new worker process, ours against LangChain and deepagents.

A run on a Celery worker can land on a process that has never seen the thread: its checkpoint is
read, then the middleware sees every message for the first time. Here each sample is a process forked
(as a prefork worker child is) from a parent that has imported everything and served one call of each
middleware on another, small state; the child loads the thread's messages from the checkpoint
serializer's bytes (LangGraph's ``JsonPlusSerializer``, as the checkpointer stores them) and times
the first call (model replaced by a no-op; below the trigger, the pass-through case of the peers).

* ``ours`` — messages carry the estimates stored when they entered the state (issue 16);
* ``ours_unstored`` — the same messages without stored estimates (checkpoints written before it);
* ``langchain`` / ``deepagents`` — their ``SummarizationMiddleware`` (characters / 4 per message).

Target: ours <= 1.5× the faster peer at 1,000 and 10,000 messages.

    python -m bench.fresh_worker
"""

from __future__ import annotations

import os
import pickle
import statistics
import time

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from bench import overhead, peers
from bench.common import markdown_table, num

SIZES = (1_000, 10_000)
REPEATS = {1_000: 7, 10_000: 5}
TARGET = 1.5
VARIANTS = ("ours", "ours_unstored", "langchain", "deepagents")


def _stored(messages: list[BaseMessage]) -> list[BaseMessage]:
    from context_engine.tokens.messages import profile_for_model, with_estimate

    profile = profile_for_model(peers.MODEL_NAME)
    return [with_estimate(m, profile) for m in messages]


def _first_call(variant: str, blob: tuple[str, bytes], setup: peers.Setup) -> tuple[float, float]:
    """In this (fresh) process: (ms to load the state, ms of the first middleware call)."""
    from context_engine.compaction import tool_results as compaction
    from context_engine.tokens import messages as tokens

    tokens.clear_cache()  # a new process has no estimate cache (fork copied the parent's)
    compaction.clear_caches()
    start = time.perf_counter()
    state = JsonPlusSerializer().loads_typed(blob)
    loaded = (time.perf_counter() - start) * 1e3
    h = peers.build("ours" if variant.startswith("ours") else variant, setup, record=False)
    call = overhead._call(h, overhead._request(h, state))
    return loaded, overhead._timed(call) / 1e3


def _in_child(fn, *args) -> tuple[float, float]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, report, leave without running the parent's cleanup
        os.close(read)
        try:
            payload = pickle.dumps(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = pickle.dumps(exc)
        with os.fdopen(write, "wb") as fh:
            fh.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        result = pickle.loads(fh.read())
    os.waitpid(pid, 0)
    if isinstance(result, BaseException):
        raise result
    return result


def _warm_up() -> None:
    """What a worker has done before this thread: imports and one call per middleware elsewhere."""
    state = overhead.real_state(100)
    setup = overhead.setups(state)["below"]
    for name in peers.MIDDLEWARES:
        h = peers.build(name, setup, record=False)
        overhead._call(h, overhead._request(h, state))()
        h.cleanup()


def run(sizes=SIZES) -> list[dict]:
    _warm_up()
    serde = JsonPlusSerializer()
    rows = []
    for n in sizes:
        raw = overhead.real_state(n)
        setup = overhead.setups(raw)["below"]
        blobs = {"ours": serde.dumps_typed(_stored(raw)), "other": serde.dumps_typed(raw)}
        samples: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
        for _ in range(REPEATS.get(n, 5)):
            for variant in VARIANTS:  # in turn, so background load hits all of them alike
                blob = blobs["ours" if variant == "ours" else "other"]
                samples[variant].append(_in_child(_first_call, variant, blob, setup))
        row: dict = {"messages": len(raw), "checkpoint_MB": len(blobs["ours"][1]) / 1e6}
        row["load_ms"] = statistics.median(s[0] for s in samples["ours"])
        for variant in VARIANTS:
            row[f"{variant}_ms"] = statistics.median(s[1] for s in samples[variant])
        faster = min(row["langchain_ms"], row["deepagents_ms"])
        row["ours_vs_faster_peer"] = row["ours_ms"] / faster
        row["unstored_vs_faster_peer"] = row["ours_unstored_ms"] / faster
        row["target_met"] = "yes" if row["ours_vs_faster_peer"] <= TARGET else "NO"
        row["stored_size_overhead"] = len(blobs["ours"][1]) / len(blobs["other"][1]) - 1
        rows.append(row)
    return rows


COLUMNS = [
    "messages",
    "checkpoint_MB",
    "stored_size_overhead",
    "load_ms",
    "ours_ms",
    "ours_unstored_ms",
    "langchain_ms",
    "deepagents_ms",
    "ours_vs_faster_peer",
    "unstored_vs_faster_peer",
    "target_met",
]


def render(rows: list[dict]) -> str:
    x = lambda v: f"{v:.2f}×"  # noqa: E731
    formats = {c: num(2) for c in COLUMNS if c.endswith("_ms")}
    formats.update(
        {
            "messages": lambda v: f"{v:,}",
            "checkpoint_MB": num(2),
            "stored_size_overhead": lambda v: f"{v:+.1%}",
            "ours_vs_faster_peer": x,
            "unstored_vs_faster_peer": x,
        }
    )
    return (
        "Milliseconds of the first model call in a new worker process (forked from a warmed-up parent, "
        "median of separate processes; model replaced by a no-op; below the trigger). `load_ms` = reading "
        "the messages from the checkpoint serializer's bytes, the same for all (not included); "
        "`stored_size_overhead` = checkpoint bytes added by the stored estimates. "
        f"Target: ours <= {TARGET}× the faster peer.\n\n" + markdown_table(rows, COLUMNS, formats)
    )


if __name__ == "__main__":
    print(render(run()))

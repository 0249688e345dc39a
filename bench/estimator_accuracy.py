"""Issue 8, item 1: token-estimator accuracy per corpus, on the CHECK halves only.

For every corpus and each reference tokenizer (OpenAI cl100k, Qwen) it reports the median and the
p10/p90 of the relative error ``(estimate - true) / true`` for

* ``ours``: ``estimate_text`` with the profile matching the tokenizer (``cl100k`` / ``qwen``),
* ``default``: ``estimate_text`` with the conservative ``DEFAULT_PROFILE`` (unknown models),
* ``chars/4``: ``ceil(len(text) / 4)``, what the seeds and ``count_tokens_approximately`` use,

plus throughput in MB/s (UTF-8) of ours, of langchain_core's ``count_tokens_approximately`` and of
the real tiktoken encoder. Target for ours: |median| <= 10% and p10/p90 within +-25% everywhere.

    python -m bench.estimator_accuracy
"""

from __future__ import annotations

import math
import time

import numpy as np

from bench import corpora, tokenizers
from bench.common import best_time, machine_markdown, markdown_table, num, pct
from context_engine.tokens.messages import DEFAULT_PROFILE, ESTIMATOR_NAME, PROFILES, estimate_text

MEDIAN_TARGET = 0.10
SPEED_REPEATS = 5
SPEED_TARGET = 4.0  # ours at least 4x tiktoken's exact count
SPREAD_TARGET = 0.25


def _stats(est: np.ndarray, true: np.ndarray) -> tuple[float, float, float]:
    rel = (est - true) / np.maximum(true, 1)
    return float(np.median(rel)), float(np.percentile(rel, 10)), float(np.percentile(rel, 90))


def _cpu_seconds(fn) -> float:
    """CPU time of one call of ``fn`` (this process only: waiting for a shared core is not counted)."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def _throughput(texts: list[str]) -> dict[str, float]:
    """MB per CPU second of ours, ``count_tokens_approximately`` and tiktoken on the same texts, best
    of ``SPEED_REPEATS`` rounds measured in turn (so background load hits all three alike)."""
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    messages = [HumanMessage(content=t) for t in texts]
    enc = tokenizers.cl100k()
    runs = {
        "ours": lambda: [estimate_text(t, DEFAULT_PROFILE) for t in texts],
        "lc_approx": lambda: [count_tokens_approximately([m]) for m in messages],
        "tiktoken": lambda: [len(enc.encode_ordinary(t)) for t in texts],
    }
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(SPEED_REPEATS):
        for name, fn in runs.items():
            best[name] = min(best[name], _cpu_seconds(fn))
    return {
        "MB": mb,
        "ours_s": best["ours"],
        "tiktoken_s": best["tiktoken"],
        **{f"{name}_MBps": mb / seconds for name, seconds in best.items()},
    }


def run(half: str = corpora.CHECK) -> list[dict]:
    rows = []
    for name in corpora.CORPORA:
        texts = [s.text for s in corpora.samples(name, half)]
        chars4 = np.array([math.ceil(len(t) / 4) for t in texts], float)
        default = np.array([estimate_text(t, DEFAULT_PROFILE) for t in texts], float)
        speed = _throughput(texts)
        for ref, (count, profile_name) in tokenizers.REFERENCES.items():
            true = np.array([count(t) for t in texts], float)
            ours = np.array([estimate_text(t, PROFILES[profile_name]) for t in texts], float)
            om, o10, o90 = _stats(ours, true)
            dm, d10, d90 = _stats(default, true)
            cm, c10, c90 = _stats(chars4, true)
            ok = abs(om) <= MEDIAN_TARGET and -SPREAD_TARGET <= o10 and o90 <= SPREAD_TARGET
            rows.append(
                {
                    "corpus": name,
                    "tokenizer": ref,
                    "n": len(texts),
                    "profile": profile_name,
                    "ours_median": om,
                    "ours_p10": o10,
                    "ours_p90": o90,
                    "default_median": dm,
                    "default_p10": d10,
                    "default_p90": d90,
                    "chars4_median": cm,
                    "chars4_p10": c10,
                    "chars4_p90": c90,
                    "target_met": "yes" if ok else "NO",
                    **(speed if ref == "cl100k" else {}),
                }
            )
    return rows


def _conversation(n: int):
    """``n`` messages cycling through the real samples of every corpus (user / assistant+tool call / tool)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    texts = [s.text for name in corpora.CORPORA for s in corpora.samples(name)]
    out = []
    for i in range(n):
        text = texts[(i * 7919) % len(texts)]
        if i % 3 == 0:
            out.append(HumanMessage(content=text))
        elif i % 3 == 1:
            call = {"name": "search", "args": {"query": text[:200]}, "id": f"call_{i}"}
            out.append(AIMessage(content=text[:500], tool_calls=[call]))
        else:
            out.append(ToolMessage(content=text, tool_call_id=f"call_{i - 1}"))
    return out


def run_throughput(sizes=(100, 1_000, 10_000)) -> list[dict]:
    """Whole-request estimates on states of ``sizes`` messages: ours cold (empty cache), ours warm
    (state grown by one message, the rest cached), langchain_core ``count_tokens_approximately``."""
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    from context_engine.tokens import messages as tokens

    rows = []
    for n in sizes:
        state = _conversation(n)
        grown = [*state, HumanMessage(content="And one more question, please.")]
        mb = sum(len(str(m.content).encode("utf-8")) for m in state) / 1e6

        def cold(state=state):
            tokens.clear_cache()
            tokens.estimate_messages(state)

        cold_s = best_time(cold)
        tokens.clear_cache()
        tokens.estimate_messages(state)
        warm_s = best_time(lambda grown=grown: tokens.estimate_messages(grown))
        lc_s = best_time(lambda grown=grown: count_tokens_approximately(grown))
        rows.append(
            {
                "messages": n,
                "MB": mb,
                "ours_cold_ms": cold_s * 1e3,
                "ours_warm_ms": warm_s * 1e3,
                "lc_approx_ms": lc_s * 1e3,
                "cold_vs_lc": cold_s / lc_s,
                "warm_vs_lc": warm_s / lc_s,
                "ours_cold_MBps": mb / cold_s,
            }
        )
    tokens.clear_cache()
    return rows


def speed_vs_tiktoken(rows: list[dict]) -> list[dict]:
    """Per corpus and over all of them: our estimator against tiktoken's exact count, same texts."""
    out = []
    speed = [r for r in rows if r.get("ours_s")]
    for r in speed:
        out.append(
            {
                "corpus": r["corpus"],
                "n": r["n"],
                "MB": r["MB"],
                "ours_MBps": r["ours_MBps"],
                "tiktoken_MBps": r["tiktoken_MBps"],
                "vs_tiktoken": r["tiktoken_s"] / r["ours_s"],
            }
        )
    mb = sum(r["MB"] for r in speed)
    ours, tik = sum(r["ours_s"] for r in speed), sum(r["tiktoken_s"] for r in speed)
    out.append(
        {
            "corpus": "ALL",
            "n": sum(r["n"] for r in speed),
            "MB": mb,
            "ours_MBps": mb / ours,
            "tiktoken_MBps": mb / tik,
            "vs_tiktoken": tik / ours,
        }
    )
    for r in out:
        r["target_met"] = "yes" if r["vs_tiktoken"] >= SPEED_TARGET else "NO"
    return out


def render_speed(rows: list[dict]) -> str:
    cols = ["corpus", "n", "MB", "ours_MBps", "tiktoken_MBps", "vs_tiktoken", "target_met"]
    formats = {
        "MB": num(2),
        "ours_MBps": num(1),
        "tiktoken_MBps": num(1),
        "vs_tiktoken": lambda v: f"{v:.2f}×",
    }
    return (
        f"Estimator throughput against tiktoken's exact count (cl100k, `encode_ordinary`) on the same CHECK "
        f"texts, one call per text, MB per CPU second of the process (the machine's cores are shared), best "
        f"of {SPEED_REPEATS} rounds taken in turn; target ours >= "
        f"{SPEED_TARGET:.0f}× tiktoken.\n\n" + markdown_table(rows, cols, formats)
    )


DEGENERATE_UNITS = 600


def degenerate() -> list[dict]:
    """Runs of a random unit of 1-4 printable ASCII characters, repeated to 256-1,600 characters:
    estimate / true count per tokenizer (below 1 = underestimate)."""
    import random
    import string

    rng = random.Random(16)
    alphabet = string.ascii_letters + string.digits + string.punctuation + " "
    samples = []
    for _ in range(DEGENERATE_UNITS):
        unit = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        if not unit.isspace():
            samples.append(unit * (rng.randint(256, 1600) // len(unit)))
    rows = []
    for ref, (count, profile_name) in tokenizers.REFERENCES.items():
        ratio = np.array([estimate_text(t, PROFILES[profile_name]) / max(count(t), 1) for t in samples])
        rows.append(
            {
                "tokenizer": ref,
                "profile": profile_name,
                "runs": len(samples),
                "min": float(ratio.min()),
                "p10": float(np.percentile(ratio, 10)),
                "median": float(np.median(ratio)),
                "p90": float(np.percentile(ratio, 90)),
                "under_10pct": int((ratio < 0.9).sum()),
            }
        )
    return rows


def render_degenerate(rows: list[dict]) -> str:
    ratio = lambda v: f"{v:.2f}"  # noqa: E731
    formats = {"min": ratio, "p10": ratio, "median": ratio, "p90": ratio}
    return (
        "Degenerate text: a random unit of 1-4 printable ASCII characters repeated to 256-1,600 characters "
        "(`'ab' * 2000` is 2,000 tokens); estimate / true count, below 1.00 = underestimate; `under_10pct` = "
        "runs estimated more than 10% low.\n\n" + markdown_table(rows, list(rows[0]), formats)
    )


THROUGHPUT_COLUMNS = [
    "messages",
    "MB",
    "ours_cold_ms",
    "ours_warm_ms",
    "lc_approx_ms",
    "cold_vs_lc",
    "warm_vs_lc",
    "ours_cold_MBps",
]


def render_throughput(rows: list[dict]) -> str:
    formats = {c: num(2) for c in THROUGHPUT_COLUMNS}
    formats["messages"] = str
    return (
        "Whole-request estimate (`estimate_messages`) on states of real messages: cold = empty cache, "
        "warm = same state grown by one message (per-message LRU hits).\n\n"
        + markdown_table(rows, THROUGHPUT_COLUMNS, formats)
    )


COLUMNS = [
    "corpus",
    "tokenizer",
    "n",
    "profile",
    "ours_median",
    "ours_p10",
    "ours_p90",
    "default_median",
    "default_p10",
    "default_p90",
    "chars4_median",
    "chars4_p10",
    "chars4_p90",
    "target_met",
    "ours_MBps",
    "lc_approx_MBps",
    "tiktoken_MBps",
]


def render(rows: list[dict]) -> str:
    formats = {c: pct for c in COLUMNS if c.endswith(("median", "p10", "p90"))}
    formats.update({c: num(1) for c in COLUMNS if c.endswith("MBps")})
    return (
        f"Estimator `{ESTIMATOR_NAME}` on the CHECK halves (fitted on the FIT halves); relative error "
        f"(estimate - true) / true. Target for ours: |median| <= {MEDIAN_TARGET:.0%}, p10/p90 within "
        f"+-{SPREAD_TARGET:.0%}. Samples: one message / tool output each, >= {corpora.MIN_CHARS} chars.\n\n"
        + markdown_table(rows, COLUMNS, formats)
    )


if __name__ == "__main__":
    rows = run()
    print(render(rows))
    print(render_speed(speed_vs_tiktoken(rows)))
    print(render_degenerate(degenerate()))
    print(render_throughput(run_throughput()))
    print(machine_markdown())

"""``make bench``: every benchmark of issue 8 in one run, written to ``docs/benchmarks.md`` (+ PNG charts in
``docs/benchmarks/``) and printed. The README only links to it: measured figures live in ``docs/``.

Benchmarks are not tests: nothing here fails on a number. Missed targets are reported, with by how much.

    python -m bench.run
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench import (
    bulk,
    cache_economics,
    calibration,
    charts,
    effectiveness,
    estimator_accuracy,
    fresh_worker,
    local_model,
    loss_report,
    manual_latency,
    overhead,
    peers,
    preview_accuracy,
    provider_model,
    reference_index,
    smollm2_turns,
)
from bench.common import machine_markdown, markdown_table

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"


def _pct(v: float) -> str:
    return f"{v:+.1%}"


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}×"


# --- interpretation -------------------------------------------------------------------------------


def estimator_notes(rows: list[dict], speed: list[dict]) -> str:
    missed = [r for r in rows if r["target_met"] != "yes"]
    zh = {r["tokenizer"]: r for r in rows if r["corpus"] == "zh_chats"}
    worst = max(rows, key=lambda r: abs(r["ours_median"]))
    widest = max(rows, key=lambda r: max(-r["ours_p10"], r["ours_p90"]))
    lines = [
        f"Ours meets the target on {len(rows) - len(missed)} of {len(rows)} corpus × tokenizer pairs"
        + (
            f"; missed on {', '.join(r['corpus'] + '/' + r['tokenizer'] for r in missed)}." if missed else "."
        ),
        f"The largest median error is {_pct(worst['ours_median'])} ({worst['corpus']}/{worst['tokenizer']}), the "
        f"widest spread p10 {_pct(widest['ours_p10'])} / p90 {_pct(widest['ours_p90'])} "
        f"({widest['corpus']}/{widest['tokenizer']}).",
        f"Characters/4 is off by {_pct(zh['cl100k']['chars4_median'])} (cl100k) and {_pct(zh['qwen']['chars4_median'])} "
        "(Qwen) median on the Chinese chats and underestimates JSON tool output (tau2, web search) by about a "
        "third, so a chars/4 budget fires late exactly where tool-heavy and Chinese conversations need it.",
    ]
    if speed:
        big = speed[-1]
        lines.append(
            f"Cost: ours reads every byte (~{big['ours_cold_MBps']:.0f} MB/s cold) where chars/4 only takes lengths, "
            f"so a cold whole-request estimate of {big['messages']:,} messages is {big['cold_vs_lc']:.1f}× "
            "`count_tokens_approximately`; the per-message cache brings repeated estimates down (warm column)."
        )
    return " ".join(lines) + "\n"


def effectiveness_notes(summary: list[dict], sens: list[dict]) -> str:
    total = summary[-1]
    t = effectiveness.targets(summary)
    worse = [r for r in summary[:-1] if r["calls_vs_langchain"] is not None and r["calls_vs_langchain"] > 1]
    lines = [
        f"Summary calls at a {effectiveness.SETUP.trigger_tokens:,}-token trigger: ours {t['summary_calls_ours']}, "
        f"LangChain {t['summary_calls_langchain']}, deepagents {t['summary_calls_deepagents']} "
        f"({_x(t['calls_vs_langchain'])} and {_x(t['calls_vs_deepagents'])}; target <= 0.50×: "
        f"{'met' if t['calls_target_met'] else 'MISSED'}).",
        "Ours first moves large tool results into files (no model call), so it summarizes only when the "
        "non-tool part of the history itself outgrows the budget; the peers summarize every time the raw "
        "history crosses the trigger.",
    ]
    if worse:
        lines.append(
            "Where ours summarizes as often or more ("
            + ", ".join(
                f"{r['trajectories']}: {r['ours_summaries']} vs {r['langchain_summaries']}" for r in worse
            )
            + ") the tool results are small (tau2 JSON records are mostly under the 300-token offload limit, so "
            "there is little to offload) and ours counts with a cl100k-calibrated estimator while the peers count "
            "characters/4, which underestimates JSON by ~30%: at the same nominal trigger the peers actually "
            f"send more (peak {total['langchain_peak_tok']:,} cl100k tokens vs ours {total['ours_peak_tok']:,} "
            f"for an {effectiveness.SETUP.trigger_tokens:,} budget), i.e. they overshoot the budget instead of "
            "summarizing."
        )
    lines.append(
        f"Replaced tool results: {t['replaced']}, byte-recoverable {t['byte_recoverable']} "
        f"({'100%' if t['recoverable_target_met'] else 'NOT all'}: SHA-256 of the saved file = receipt's = "
        "original output's). Identifiers from tool results visible or recoverable at the end: ours "
        f"{total['ours_ids_recoverable']:.0%}, deepagents {total['deepagents_ids_recoverable']:.0%} (its history "
        f"file keeps summarized messages as XML), LangChain {total['langchain_ids_recoverable']:.0%} (it keeps "
        "nothing beyond the summary and the kept tail). Visible in the final request only, all three are close "
        f"(ours {total['ours_ids_visible']:.0%}): receipts show previews, not whole outputs."
    )
    if total["ours_errors"] or total["langchain_errors"] or total["deepagents_errors"]:
        lines.append(
            f"Failed model calls: ours {total['ours_errors']}, LangChain {total['langchain_errors']}, deepagents "
            f"{total['deepagents_errors']}. They come from aider session 644, whose assistant turn 14 is a 149 KB "
            "paste of base64 data (~90K cl100k tokens, larger than the 32K window on its own): while it is the "
            "latest message nothing can fit it without cutting a non-tool message. LangChain sends it and the "
            "model rejects it on every call until it is summarized away; deepagents raises its own "
            "ContextOverflowError; ours fails that one call (the message is the newest, so it cannot be "
            "summarized yet) and summarizes it away on the next."
        )
    if sens:
        lines.append(
            "Across budgets the ratio is "
            + ", ".join(f"{_x(r['calls_vs_langchain'])} at {r['trigger']:,}" for r in sens)
            + " (vs LangChain): the larger the budget relative to the tool results, the more offloading alone "
            "suffices; the platform default is 100K."
        )
    return " ".join(lines) + "\n"


def overhead_notes(rows: list[dict], hot: list[dict]) -> str:
    below = [r for r in rows if r["scenario"] == "below"]
    above = [r for r in rows if r["scenario"] == "above"]
    cold_ok = all(r["cold_ok"] == "yes" for r in rows)
    warm_ok = all(r["warm_ok"] == "yes" for r in rows)
    refs = {r["function"]: r["own_ms"] for r in hot if r["scenario"] == "reference"}
    est = next((v for k, v in refs.items() if k.startswith("tokens.estimate_messages")), None)
    length = next((v for k, v in refs.items() if k.startswith("sum(len")), None)
    big = below[-1]
    lines = [
        f"Warm (the per-turn case inside a run): ours is {', '.join(_x(r['warm_vs_faster_peer']) for r in rows)} "
        f"the faster peer (target <= 0.3×: {'met' if warm_ok else 'MISSED on some rows'}), because it re-estimates "
        "and re-compacts only the messages after the unchanged prefix of the previous call, while both peers "
        "recount the whole history every call (and summarize again when above the trigger).",
        f"Cold on messages without stored estimates (fresh caches; checkpoints written before issue 16): ours "
        f"is {', '.join(_x(r['cold_vs_faster_peer']) for r in below)} below the trigger and "
        f"{', '.join(_x(r['cold_vs_faster_peer']) for r in above)} above it. Messages now carry the estimate "
        "they got when they entered the state, so this is the one-off cost of an old checkpoint; the "
        "fresh-worker table (3b) measures the first call on messages that carry their estimates.",
    ]
    if not cold_ok:
        lines.append(
            "Why: the peers count characters/4 (a `len()` per message), ours runs the script-aware estimator "
            f"over every byte. On {big['messages']:,} messages the estimator alone takes {est:,.0f} ms cold "
            f"vs {big['ours_cold_us'] / 1e3:,.0f} ms for the whole middleware call, i.e. essentially all of it; "
            f"a length-only pass over the same state takes {length:,.1f} ms. Above the trigger the gap narrows "
            "because the peers then pay for a summary (prompt rendering of the whole history) while ours "
            "compacts (hashing, files, previews). Hot spots are in the profile table."
        )
    lines.append(
        "Growth is linear or better for ours (slopes in the growth table; warm is sublinear because only the "
        "new message is estimated)."
    )
    return " ".join(lines) + "\n"


# --- headline ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """The figures the headline reads, one field per section; an optional section left empty (None or
    no rows) has no headline row."""

    accuracy: list[dict]
    summary: list[dict]
    overhead: list[dict]
    latency: list[dict] | None = None
    bulk: list[dict] | None = None
    fresh: list[dict] | None = None
    speed: list[dict] | None = None
    calib: dict[str, list[dict]] | None = None
    extra: list[dict] | None = None


def headline(measured: Measured) -> str:
    rows = [
        *_core_rows(measured),
        *_fresh_rows(measured.fresh),
        *_speed_rows(measured.speed),
        *_calibration_rows(measured.calib),
        *_latency_rows(measured.latency),
        *_bulk_rows(measured.bulk),
        *(measured.extra or ()),
    ]
    return markdown_table(rows, ["measure", "ours", "peers", "target"])


def _core_rows(measured: Measured) -> list[dict]:
    """Estimator error, summary calls, recoverability and overhead: the rows every run has."""
    acc, over = measured.accuracy, measured.overhead

    def err(corpus: str, tok: str) -> dict:
        return next(r for r in acc if r["corpus"] == corpus and r["tokenizer"] == tok)

    total = measured.summary[-1]
    below = [r for r in over if r["scenario"] == "below"]
    return [
        {
            "measure": "Token estimate, Chinese chats: median error vs cl100k / Qwen",
            "ours": f"{_pct(err('zh_chats', 'cl100k')['ours_median'])} / {_pct(err('zh_chats', 'qwen')['ours_median'])}",
            "peers": f"chars/4: {_pct(err('zh_chats', 'cl100k')['chars4_median'])} / "
            f"{_pct(err('zh_chats', 'qwen')['chars4_median'])}",
            "target": "±10%",
        },
        {
            "measure": "Token estimate, English chats: median error vs cl100k / Qwen",
            "ours": f"{_pct(err('en_chats', 'cl100k')['ours_median'])} / {_pct(err('en_chats', 'qwen')['ours_median'])}",
            "peers": f"chars/4: {_pct(err('en_chats', 'cl100k')['chars4_median'])} / "
            f"{_pct(err('en_chats', 'qwen')['chars4_median'])}",
            "target": "±10%",
        },
        {
            "measure": f"Summary-model calls, {total['trajectories'].removeprefix('TOTAL (').rstrip(')')} real "
            "trajectories, "
            f"{effectiveness.SETUP.trigger_tokens:,}-token trigger",
            "ours": str(total["ours_summaries"]),
            "peers": f"LangChain {total['langchain_summaries']} ({_x(total['calls_vs_langchain'])}), "
            f"deepagents {total['deepagents_summaries']} ({_x(total['calls_vs_deepagents'])})",
            "target": "<= 0.50×",
        },
        {
            "measure": "Replaced tool results byte-recoverable (SHA-256)",
            "ours": f"{total['byte_recoverable']} / {total['replaced']}",
            "peers": f"identifiers recoverable: LangChain {total['langchain_ids_recoverable']:.0%}, "
            f"deepagents {total['deepagents_ids_recoverable']:.0%} (ours {total['ours_ids_recoverable']:.0%})",
            "target": "100%",
        },
        {
            "measure": "Middleware overhead, warm (state grown by one message), 100 / 1K / 10K messages",
            "ours": " / ".join(_x(r["warm_vs_faster_peer"]) for r in below),
            "peers": "× the faster peer",
            "target": "<= 0.3×",
        },
        {
            "measure": "Middleware overhead, cold, messages without stored estimates (older checkpoints), "
            "100 / 1K / 10K messages",
            "ours": " / ".join(_x(r["cold_vs_faster_peer"]) for r in below),
            "peers": "× the faster peer",
            "target": "reported (the estimator reads every byte once)",
        },
    ]


def _fresh_rows(fresh: list[dict] | None) -> list[dict]:
    if not fresh:
        return []
    return [
        {
            "measure": "First call in a fresh worker process, stored estimates, "
            + " / ".join(f"{r['messages'] // 1000}K" for r in fresh)
            + " messages",
            "ours": " / ".join(_x(r["ours_vs_faster_peer"]) for r in fresh),
            "peers": "× the faster peer (without stored estimates: "
            + " / ".join(_x(r["unstored_vs_faster_peer"]) for r in fresh)
            + ")",
            "target": "<= 1.5×" + ("" if all(r["target_met"] == "yes" for r in fresh) else " (MISSED)"),
        }
    ]


def _speed_rows(speed: list[dict] | None) -> list[dict]:
    if not speed:
        return []
    total = speed[-1]
    worst = min(speed[:-1], key=lambda r: r["vs_tiktoken"])
    return [
        {
            "measure": "Estimator throughput vs tiktoken's exact count, all corpora (slowest corpus)",
            "ours": f"{_x(total['vs_tiktoken'])} ({worst['corpus']} {_x(worst['vs_tiktoken'])})",
            "peers": f"tiktoken {total['tiktoken_MBps']:.1f} MB/s, ours {total['ours_MBps']:.1f} MB/s",
            "target": ">= 4×" + ("" if total["target_met"] == "yes" else " (MISSED)"),
        }
    ]


def _calibration_rows(calib: dict[str, list[dict]] | None) -> list[dict]:
    if not calib:
        return []
    conv, summ = calib["convergence"][-1], calib["summaries"][-1]
    met = calibration.targets(calib)["met"]
    return [
        {
            "measure": "Calibration from reported usage (conservative profile, cl100k-counting stub): "
            "estimates within ±3% after 10 calls; summary calls",
            "ours": f"{conv['after_10_within_3pct']:.0%}; {summ['calibrated']} calibrated vs "
            f"{summ['uncalibrated']} uncalibrated",
            "peers": f"uncalibrated first-call error {conv['first_call_error']:+.1%}",
            "target": "±3% after 10 calls" + ("" if met else " (MISSED)"),
        }
    ]


def _latency_rows(latency: list[dict] | None) -> list[dict]:
    totals = [r for r in latency or () if r["scenario"] == "idle" and r["phase"] == "total"]
    if not totals:
        return []
    rows: list[dict] = []
    floor = manual_latency.floor_ratio(latency or [])
    rows.append(
        {
            "measure": "Manual compression on PostgreSQL (offline model), p50 / p95, "
            + " / ".join(f"{r['messages']:,}" for r in totals)
            + " messages",
            "ours": " / ".join(f"{r['p50_ms']:.0f} / {r['p95_ms']:.0f} ms" for r in totals),
            "peers": "(no peer has manual compression)",
            "target": "reported",
        }
    )
    if floor:
        rows.append(
            {
                "measure": f"Manual compression, {floor['messages']:,} messages: p95 without the model call "
                "vs the bare checkpoint read + write",
                "ours": f"{floor['ratio']:.2f}× ({floor['p95_ms']:.0f} vs {floor['floor_ms']:.0f} ms)",
                "peers": "(no peer has manual compression)",
                "target": "<= 3×" + ("" if floor["ratio"] <= manual_latency.FLOOR_TARGET else " (MISSED)"),
            }
        )
    held = manual_latency.lock_ratio(latency or []) if hasattr(manual_latency, "lock_ratio") else None
    if held:
        slow = "" if held["slow_p95_ms"] is None else f"; {held['slow_p95_ms']:.0f} ms with a 5 s summarizer"
        rows.append(
            {
                "measure": f"Manual compression, {held['messages']:,} messages: p95 time the row lock is "
                "held (claim + apply) vs the bare checkpoint read + write",
                "ours": f"{held['ratio']:.2f}× ({held['p95_ms']:.0f} vs {held['floor_ms']:.0f} ms){slow}",
                "peers": "(no peer has manual compression)",
                "target": "<= 2×" + ("" if held["ratio"] <= manual_latency.LOCK_TARGET else " (MISSED)"),
            }
        )
    return rows


def _bulk_rows(bulk_rows: list[dict] | None) -> list[dict]:
    picked = [
        r
        for r in bulk_rows or ()
        if r.get("part") == "selection" and r.get("filters") == bulk.HEADLINE_SELECTION
    ]
    if not picked:
        return []
    row = picked[0]
    return [
        {
            "measure": f"Bulk candidate selection over {row['threads']:,} threads (`{row['filters']}`)",
            "ours": f"{row['median_ms']:.1f} ms",
            "peers": "opening every checkpoint instead: see docs/benchmarks.md",
            "target": "indexed, no checkpoint reads",
        }
    ]


# --- the run -------------------------------------------------------------------------------------


def _load(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{a:.2f}" for a in averages)


def main() -> None:
    started = time.perf_counter()
    load_at_start = os.getloadavg()  # other work on the machine moves the timings: say how much there was
    parts: list[str] = []

    def section(title: str, body: str) -> None:
        print(f"\n## {title}\n\n{body}", flush=True)
        parts.append(f"## {title}\n\n{body}")

    acc = estimator_accuracy.run()
    speed = estimator_accuracy.run_throughput()
    vs_tiktoken = estimator_accuracy.speed_vs_tiktoken(acc)
    degenerate = estimator_accuracy.degenerate()
    acc_chart = charts.estimator_error(acc)
    section(
        "1. Token-estimator accuracy",
        estimator_accuracy.render(acc)
        + "\n"
        + estimator_accuracy.render_speed(vs_tiktoken)
        + "\n"
        + estimator_accuracy.render_degenerate(degenerate)
        + "\n"
        + estimator_accuracy.render_throughput(speed)
        + f"\n![estimator error per corpus]({acc_chart})\n\n"
        + estimator_notes(acc, speed),
    )

    replays = effectiveness.run()
    summary = effectiveness.summarize(replays)
    sens = effectiveness.sensitivity(main_total=summary[-1])
    chart_traj = effectiveness.CHART_TRAJECTORY
    series = {r.middleware: r.tokens for r in replays if r.trajectory == chart_traj}
    turn_chart = charts.tokens_per_turn(
        series, trajectory=chart_traj, trigger=effectiveness.SETUP.trigger_tokens
    )
    section(
        "2. Compression effectiveness",
        effectiveness.render(replays)
        + f"\n![tokens per model call]({turn_chart})\n\n"
        + effectiveness_notes(summary, sens)
        + "\n"
        + effectiveness.render_sensitivity(sens)
        + "\n<details><summary>Per trajectory</summary>\n\n"
        + effectiveness.render_trajectories(replays)
        + "\n</details>\n",
    )

    section(
        "2b. What a caching provider bills (issue 40)", cache_economics.render(cache_economics.run(replays))
    )

    over = overhead.run()
    hot = overhead.hot_spots()
    over_chart = charts.overhead(over)
    section(
        "3. Middleware overhead",
        overhead.render(over)
        + f"\n![overhead vs state size]({over_chart})\n\n"
        + overhead_notes(over, hot)
        + "\n"
        + overhead.render_hot_spots(hot),
    )

    fresh = fresh_worker.run()
    section("3b. First call in a fresh worker", fresh_worker.render(fresh))

    calib = calibration.run()
    section("3c. Calibration from reported usage", calibration.render(calib))
    section(
        "3d. The estimator against a real server (llama.cpp, SmolLM2-135M)",
        local_model.render(local_model.run()),
    )
    section(
        "3e. The provider model's request path against a real server (issue 36)",
        provider_model.render(provider_model.run()),
    )

    latency: list[dict] = []
    if manual_latency is not None and hasattr(manual_latency, "run") and hasattr(manual_latency, "render"):
        latency = manual_latency.run()
        section("4. Manual compression latency", manual_latency.render(latency))
    else:
        section(
            "4. Manual compression latency",
            "_Not measured in this run (`bench/manual_latency.py` is absent)._\n",
        )

    bulk_rows = bulk.run()
    section("5. Bulk compaction", bulk.render(bulk_rows))

    survival = loss_report.run_survival()
    previews = preview_accuracy.run()
    section(
        "6. Loss report, repair pass and preview",
        loss_report.render_survival(survival) + "\n" + preview_accuracy.render(previews),
    )

    reached = reference_index.run()
    section("6b. Reference index: nothing folded out of reach", reference_index.render(reached))
    section(
        "6c. A real small model kept talking (llama.cpp, SmolLM2-135M, 2,048-token window)",
        smollm2_turns.render(smollm2_turns.run()),
    )

    head = headline(
        Measured(
            accuracy=acc,
            summary=summary,
            overhead=over,
            latency=latency,
            bulk=bulk_rows,
            fresh=fresh,
            speed=vs_tiktoken,
            calib=calib,
            extra=[
                *loss_report.headline_rows(survival),
                *preview_accuracy.headline_rows(previews),
                *reference_index.headline_rows(reached),
            ],
        )
    )
    elapsed = time.perf_counter() - started
    doc = (
        "# Benchmarks\n\n"
        f"Command: `make bench` (= `python -m bench.run`); run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{elapsed:.0f} s. Data: `../shared/data` (real traces; see its README). Benchmarks are not tests: they "
        "report, they never fail a build.\n\nMachine and versions:\n\n"
        + machine_markdown()
        + f"- load average (1, 5, 15 min) at start / end: `{_load(load_at_start)}` / `{_load(os.getloadavg())}`\n"
        + f"\nPeers: LangChain `SummarizationMiddleware`, deepagents `SummarizationMiddleware`; shared agent model "
        f"and summarizer are fakes (`bench/peers.py`), the reference tokenizer is cl100k (offline). "
        f"Our estimator profile: `{peers.MODEL_NAME}`.\n\n## Headline\n\n" + head + "\n" + "\n".join(parts)
    )
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(doc, encoding="utf-8")
    print(f"\n## Headline\n\n{head}\nWrote {DOC.relative_to(ROOT)} in {elapsed:.0f} s.")


if __name__ == "__main__":
    main()

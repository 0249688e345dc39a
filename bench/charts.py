"""PNG charts for ``docs/benchmarks.md`` (matplotlib, Agg backend): estimator error per corpus, tokens
per model call over one replay, and middleware overhead against state size (log-log)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

from bench import peers

# The backend is chosen before pyplot loads (matplotlib's own order): charts are files, never windows.
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CHART_DIR = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
COLORS = {"ours": "#1b7837", "langchain": "#2166ac", "deepagents": "#b2182b", "chars/4": "#999999"}


def _save(fig, name: str) -> str:
    CHART_DIR.mkdir(parents=True, exist_ok=True)
    path = CHART_DIR / name
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"benchmarks/{name}"


def estimator_error(rows: list[dict]) -> str:
    """Median relative error (bars) with p10-p90 whiskers, ours vs characters/4, per corpus and tokenizer."""
    tokenizers = sorted({r["tokenizer"] for r in rows})
    fig, axes = plt.subplots(1, len(tokenizers), figsize=(6 * len(tokenizers), 4.2), sharey=True)
    axes = axes if len(tokenizers) > 1 else [axes]
    for ax, tok in zip(axes, tokenizers, strict=True):
        rs = [r for r in rows if r["tokenizer"] == tok]
        xs = range(len(rs))
        for offset, key, label in ((-0.2, "ours", "ours"), (0.2, "chars4", "chars/4")):
            med = [r[f"{key}_median"] * 100 for r in rs]
            lo = [(r[f"{key}_median"] - r[f"{key}_p10"]) * 100 for r in rs]
            hi = [(r[f"{key}_p90"] - r[f"{key}_median"]) * 100 for r in rs]
            ax.bar(
                [x + offset for x in xs], med, 0.4, yerr=[lo, hi], capsize=2, label=label, color=COLORS[label]
            )
        ax.axhspan(-10, 10, color="#1b7837", alpha=0.08)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(list(xs), [r["corpus"] for r in rs], rotation=35, ha="right")
        ax.set_title(f"vs {tok}")
        ax.set_ylabel("relative error, % (median, p10-p90)")
        ax.legend()
    return _save(fig, "estimator_error.png")


def tokens_per_turn(series: dict[str, list[int]], *, trajectory: str, trigger: int) -> str:
    fig, ax = plt.subplots(figsize=(8, 4))
    for name, tokens in series.items():
        style = {"langchain": dict(ls="--", lw=2.6), "deepagents": dict(ls=":", lw=1.8)}.get(
            name, dict(lw=1.8)
        )
        ax.plot(range(1, len(tokens) + 1), tokens, label=name, color=COLORS.get(name), **style)
    ax.axhline(trigger, color="black", ls="--", lw=0.8, label=f"trigger {trigger:,}")
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens sent (cl100k)")
    ax.set_title(f"Tokens per model call, replay of {trajectory}")
    ax.legend()
    return _save(fig, "tokens_per_turn.png")


def overhead(rows: list[dict]) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, scenario in zip(axes, ("below", "above"), strict=True):
        rs = sorted((r for r in rows if r["scenario"] == scenario), key=lambda r: r["messages"])
        xs = [r["messages"] for r in rs]
        for name in peers.MIDDLEWARES:
            for kind, style in (("cold", "-"), ("warm", ":")):
                ax.plot(
                    xs,
                    [r[f"{name}_{kind}_us"] for r in rs],
                    style,
                    marker="o",
                    color=COLORS[name],
                    label=f"{name} {kind}",
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("messages in state")
        ax.set_title(f"{scenario} the trigger")
        ax.grid(True, which="both", alpha=0.2)
    axes[0].set_ylabel("µs per model call (median)")
    axes[1].legend(fontsize=8)
    return _save(fig, "overhead.png")

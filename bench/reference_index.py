"""Issue 25: nothing folded is out of reach. Every trajectory of ``bench.trajectories`` is replayed as in
``bench.loss_report`` through ours (summary + reference index + kept), ours with the index off, LangChain's
and deepagents' ``SummarizationMiddleware`` (their summary + kept), with the same budget and two
summarizers: the bench's (``loss_report.FollowingSummarizer``) and the platform's offline model. At each
summary, the identifiers of the ORIGINAL messages that left the view are sorted by what a reader of the
next request reaches:

* ``in_view``: in the request (summary, index, kept messages);
* ``line_read``: one named read with a line pointer: in the lines of a history file that the index
  names for what it left out (each range is one ``read_file`` call);
* ``file_read``: in a saved tool-result file the request names (one read of a whole file);
* ``two_reads``: only through a history file the request names; ``unreachable``: none of these.

Also the index's size against ``T`` (never over its budget) and its pointers checked against the
history file on the replay (each must name a line that holds its identifier).

    python -m bench.reference_index
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from bench import peers, trajectories
from bench.common import markdown_table
from bench.loss_report import HISTORY_DIR_NAME, SETUP, FollowingSummarizer
from context_engine.config import DEFAULT_INDEX_PERCENT
from context_engine.formats import (
    REFERENCE_INDEX_FOOTER,
    REFERENCE_INDEX_HEADER,
)
from context_engine.lines import split_lines
from context_engine.summary.fold_plan import message_text
from context_engine.summary.identifiers import Haystack, identifiers_of
from context_engine.summary.loss import named_paths, through_history, view_text
from context_engine.tokens.messages import estimate_text, profile_for_model

VARIANTS = ("ours", "ours (no index)", "langchain", "deepagents")
TIERS = ("in_view", "line_read", "file_read", "two_reads", "unreachable")
TARGET_REACHED = 0.95  # in view or one named read with a line pointer
_INDEX_BLOCK = re.compile(
    re.escape(REFERENCE_INDEX_HEADER) + r".*?" + re.escape(REFERENCE_INDEX_FOOTER), re.S
)
_RANGE = re.compile(r"^- \d+ in (\S+) lines (\d+)-(\d+) \(one read_file", re.M)
_ENTRY = re.compile(r"^- (.+) L(\d+)$", re.M)
_FILE = re.compile(r"^(\S+/\S+):$")  # a file line (a kind line has no "/")


class CountingOffline:
    """The platform's offline model as a summarizer, counting its calls like the bench's fake."""

    def __new__(cls) -> BaseChatModel:
        from agent_platform.runtime.offline import OfflineChatModel

        class _Counting(OfflineChatModel):
            calls: int = 0

            def _generate(self, messages, stop=None, run_manager=None, **kwargs):
                self.calls += 1
                return super()._generate(messages, stop, run_manager, **kwargs)

        return _Counting()


SUMMARIZERS: dict[str, Callable[[], BaseChatModel]] = {
    "bench": lambda: FollowingSummarizer(profile={"max_input_tokens": SETUP.context_window}),
    "offline model": CountingOffline,
}


@dataclass
class Reached:
    trajectory: str
    variant: str
    summarizer: str
    summaries: int = 0
    summary_calls: int = 0
    tiers: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TIERS, 0))
    index_tokens: list[int] = field(default_factory=list)
    over_budget: int = 0
    pointers: int = 0
    pointers_wrong: int = 0
    errors: int = 0


def _index_block(request: list[BaseMessage]) -> str:
    for message in request:
        if isinstance(message.content, str) and (match := _INDEX_BLOCK.search(message.content)):
            return match.group(0)
    return ""


def _file(files: dict[str, str], path: str) -> str | None:
    return files.get(path, files.get("/" + path))


def _line_texts(block: str, files: dict[str, str]) -> list[str]:
    """The lines the index names for what it left out (each range one ``read_file`` call)."""
    out = []
    for path, start, end in _RANGE.findall(block):
        text = _file(files, path)
        if text is not None:
            out.append("\n".join(split_lines(text)[int(start) - 1 : int(end)]))
    return out


def _check_pointers(block: str, files: dict[str, str], out: Reached) -> None:
    """Each listed identifier against the line its pointer names, in the file named above it."""
    lines: list[str] = []
    for row in block.split("\n"):
        if file := _FILE.match(row):
            lines = split_lines(_file(files, file.group(1)) or "")
            continue
        if entry := _ENTRY.match(row):
            out.pointers += 1
            number = int(entry.group(2))
            text = lines[number - 1] if 0 < number <= len(lines) else ""
            out.pointers_wrong += entry.group(1) not in text


def _tier(value: str, kind: str, tiers: list[tuple[str, Haystack]]) -> str:
    for name, haystack in tiers:
        if (value, kind) in haystack:
            return name
    return "unreachable"


def replay(traj: trajectories.Trajectory, variant: str, summarizer: str) -> Reached:
    name = "ours" if variant.startswith("ours") else variant
    overrides = {"index_percent": 0} if variant == "ours (no index)" else {}
    h = peers.build(name, SETUP, summarizer=SUMMARIZERS[summarizer](), **overrides)
    out = Reached(traj.name, variant, summarizer)
    budget = SETUP.trigger_tokens * DEFAULT_INDEX_PERCENT // 100
    profile = profile_for_model(peers.MODEL_NAME)
    originals = {m.id: message_text(m) for m in traj.messages}
    pointer = 0
    try:
        for i, message in enumerate(traj.messages):
            if i == 0 or not isinstance(message, AIMessage):
                continue
            h.state["messages"] = [*h.state["messages"], *traj.messages[pointer:i]]
            new_ids = {m.id for m in traj.messages[pointer:i]}
            pointer = i
            previous = {m.id for m in h.model.requests[-1] if m.id} if h.model.requests else set()
            calls, before = h.summarizer.calls, len(h.model.requests)
            peers.model_call(h)
            if h.summarizer.calls == calls or len(h.model.requests) == before:
                continue
            out.summaries += 1
            request = h.model.requests[-1]
            folded = (previous | new_ids) - {m.id for m in request if m.id}
            files = h.files()
            block = _index_block(request)
            if block:
                tokens = estimate_text(block, profile)
                out.index_tokens.append(tokens)
                out.over_budget += tokens > budget
                _check_pointers(block, files, out)
            view = [view_text(m) for m in request]
            named = {path: text for path, text in files.items() if named_paths([path.lstrip("/")], view)}
            history = [text for path, text in named.items() if HISTORY_DIR_NAME in path]
            others = {path: text for path, text in files.items() if HISTORY_DIR_NAME not in path}
            tiers = [
                ("in_view", Haystack(message_text(m) for m in request)),
                ("line_read", Haystack(_line_texts(block, files))),
                ("file_read", Haystack(text for path, text in named.items() if HISTORY_DIR_NAME not in path)),
                ("two_reads", Haystack(through_history(history, others))),
            ]
            for value, kind in identifiers_of(originals[j] for j in sorted(folded) if j in originals).items():
                out.tiers[_tier(value, kind, tiers)] += 1
        out.summary_calls = h.summarizer.calls
        out.errors = len(h.errors)
    finally:
        h.cleanup()
    return out


def run(trajs: tuple[trajectories.Trajectory, ...] | None = None) -> list[Reached]:
    trajs = trajs or trajectories.trajectories()
    return [replay(t, v, s) for s in SUMMARIZERS for t in trajs for v in VARIANTS]


def rows(results: list[Reached]) -> list[dict]:
    out = []
    for summarizer in SUMMARIZERS:
        for variant in VARIANTS:
            rs = [r for r in results if r.variant == variant and r.summarizer == summarizer]
            counts = {t: sum(r.tiers[t] for r in rs) for t in TIERS}
            total = sum(counts.values())
            sizes = [t for r in rs for t in r.index_tokens]
            row = {
                "summarizer": summarizer,
                "middleware": variant,
                "summaries": sum(r.summaries for r in rs),
                "summary_calls": sum(r.summary_calls for r in rs),
                "folded_ids": total,
                **{t: counts[t] / total if total else None for t in TIERS},
                "reached": (counts["in_view"] + counts["line_read"]) / total if total else None,
                "index_max_of_T": max(sizes) / SETUP.trigger_tokens if sizes else None,
                "index_mean_of_T": sum(sizes) / len(sizes) / SETUP.trigger_tokens if sizes else None,
                "over_budget": sum(r.over_budget for r in rs),
                "pointers_wrong": f"{sum(r.pointers_wrong for r in rs)} / {sum(r.pointers for r in rs)}",
                "errors": sum(r.errors for r in rs),
            }
            out.append(row)
    return out


COLUMNS = [
    "summarizer",
    "middleware",
    "summaries",
    "summary_calls",
    "folded_ids",
    *TIERS,
    "reached",
    "index_max_of_T",
    "index_mean_of_T",
    "over_budget",
    "pointers_wrong",
    "errors",
]


def _pct(v) -> str:
    return "" if v is None else f"{v:.1%}"


def render(results: list[Reached]) -> str:
    fmt = {c: _pct for c in (*TIERS, "reached", "index_max_of_T", "index_mean_of_T")}
    return (
        f"Budget for all: trigger T = {SETUP.trigger_tokens:,} tokens, keep {SETUP.keep_messages} messages; "
        f"the index's budget {DEFAULT_INDEX_PERCENT}% of T; {len({r.trajectory for r in results})} trajectories. "
        "Shares of the identifiers each summary folded: `in_view` in the next request (summary, index, kept), "
        "`line_read` in the history-file lines the index names for what it left out (one `read_file` each), "
        "`file_read` in a saved tool-result file the request names, `two_reads` only through a history file "
        "the request names, `unreachable` none. `reached` = in_view + line_read (target >= "
        f"{TARGET_REACHED:.0%}, 0 unreachable). `index_*_of_T`: the index's size against T; `over_budget`: "
        "indexes over their budget; `pointers_wrong`: index pointers whose line lacks the identifier.\n\n"
        + markdown_table(rows(results), COLUMNS, fmt)
    )


def headline_rows(results: list[Reached]) -> list[dict]:
    by = {(r["summarizer"], r["middleware"]): r for r in rows(results)}

    def cell(summarizer: str) -> str:
        ours, off = by[(summarizer, "ours")], by[(summarizer, "ours (no index)")]
        return (
            f"{_pct(ours['reached'])} ({_pct(ours['unreachable'])} unreachable, index max "
            f"{_pct(ours['index_max_of_T'])} of T, {ours['summary_calls']} summary calls; without the index "
            f"{_pct(off['in_view'])} in view, {off['summary_calls']} calls)"
        )

    return [
        {
            "measure": "Folded identifiers in view or one line-pointed read away after a summary "
            "(bench summarizer / offline model)",
            "ours": f"{cell('bench')} / {cell('offline model')}",
            "peers": " / ".join(
                f"LangChain {_pct(by[(s, 'langchain')]['in_view'])}, deepagents {_pct(by[(s, 'deepagents')]['in_view'])}"
                for s in SUMMARIZERS
            ),
            "target": f">= {TARGET_REACHED:.0%}, 0 unreachable, index within 10% of T",
        }
    ]


if __name__ == "__main__":
    print(render(run()))

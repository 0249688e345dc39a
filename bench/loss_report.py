"""Issue 14: what summaries lose, and how well a preview predicts a compression.

1. **Identifier survival.** Every trajectory of ``bench.trajectories`` is replayed as in
   ``bench.effectiveness`` through ours (without and with the repair pass), LangChain's and deepagents'
   ``SummarizationMiddleware``, with the same budget and the same summarizer. At each summary, the
   identifiers (``context_engine.summary.identifiers``: URLs, paths, ids, hashes, e-mails, quantities) of the
   ORIGINAL messages that left the model's view are sorted by the loss report's reach tiers
   (``Reach``) against the next request the model receives: visible (summary + whatever stayed
   verbatim), one read (a saved tool-result file the request names), two reads (only in a history file
   the request names), unreachable. The summarizer is ``bench.peers.FakeSummarizer`` (the first
   400 characters of what it is given) that also follows a must-keep list when its prompt carries one,
   as an instruction-following model does; only our repair pass ever sends such a list.
The preview's accuracy (issue 14 item 2, issue 24) is ``bench.preview_accuracy``.

    python -m bench.loss_report
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from bench import peers, trajectories
from bench.common import markdown_table
from context_engine.formats import REPAIR_IDENTIFIER_LINE
from context_engine.summary.fold_plan import message_text
from context_engine.summary.identifiers import (
    TIER_ONE_READ,
    TIER_SUMMARY,
    TIER_TWO_READS,
    TIER_UNREACHABLE,
    TIER_VIEW,
    Reach,
    identifiers_of,
)
from context_engine.summary.loss import named_paths, through_history, view_text

SETUP = peers.Setup(trigger_tokens=8192, keep_messages=10, context_window=32768)
VARIANTS = ("ours", "ours+repair", "langchain", "deepagents")
REPAIR_MARKER = "An earlier summary of these messages left out the identifiers below."
HISTORY_DIR_NAME = (
    "conversation_history"  # ours: outputs/conversation_history/, deepagents: /conversation_history/
)


class FollowingSummarizer(peers.FakeSummarizer):
    """``FakeSummarizer``, plus: when the prompt lists must-keep identifiers, they are added verbatim."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        text = messages[-1].text if messages else ""
        if REPAIR_MARKER not in text:
            return result
        prefix = REPAIR_IDENTIFIER_LINE.split("{", 1)[0]
        listed = [
            line[len(prefix) :]
            for line in text.split(REPAIR_MARKER, 1)[1].splitlines()
            if line.startswith(prefix)
        ]
        summary = (
            result.generations[0].message.content + "\n\n## ARTIFACTS AND REFERENCES\n" + "\n".join(listed)
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=summary))])


@dataclass
class Survival:
    trajectory: str
    variant: str
    summaries: int = 0
    summary_calls: int = 0
    folded_ids: int = 0
    visible_ids: int = 0
    one_read_ids: int = 0  # not visible, in a saved tool-result file the request names
    two_reads_ids: int = 0  # only through a history file the request names (in it, or a file it names)
    unreachable_ids: int = 0
    errors: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [folded, visible]


def _visible_ids(request: list[BaseMessage]) -> set[str]:
    return {m.id for m in request if m.id}


def _reach(request: list[BaseMessage], files: dict[str, str]) -> Reach:
    """The tiers of the loss report for a reader of ``request``: a file counts only when the request
    names its path (``context_engine.summary.loss``: a receipt, the summary, a kept message)."""
    view = [view_text(m) for m in request]
    named = {path: text for path, text in files.items() if named_paths([path], view)}
    history = [text for path, text in named.items() if HISTORY_DIR_NAME in path]
    saved = [text for path, text in named.items() if HISTORY_DIR_NAME not in path]
    others = {path: text for path, text in files.items() if HISTORY_DIR_NAME not in path}
    return Reach(
        summary="",
        kept=[message_text(m) for m in request],
        one_read=saved,
        two_reads=through_history(history, others),
    )


def survive(traj: trajectories.Trajectory, variant: str, setup: peers.Setup = SETUP) -> Survival:
    name = "ours" if variant.startswith("ours") else variant
    overrides = {"repair_pass": True} if variant == "ours+repair" else {}
    h = peers.build(
        name,
        setup,
        summarizer=FollowingSummarizer(profile={"max_input_tokens": setup.context_window}),
        **overrides,
    )
    out = Survival(traj.name, variant)
    originals = {m.id: message_text(m) for m in traj.messages}
    messages = traj.messages
    pointer = 0
    seen: set[str] = set()  # ids the model has been shown so far (still or once)
    try:
        for i, message in enumerate(messages):
            if i == 0 or not isinstance(message, AIMessage):
                continue
            h.state["messages"] = [*h.state["messages"], *messages[pointer:i]]
            new_ids = {m.id for m in messages[pointer:i]}
            pointer = i
            previous = _visible_ids(h.model.requests[-1]) if h.model.requests else set()
            calls, before = h.summarizer.calls, len(h.model.requests)
            peers.model_call(h)
            if h.summarizer.calls == calls or len(h.model.requests) == before:
                seen |= new_ids
                continue
            out.summaries += 1
            request = h.model.requests[-1]
            folded = (previous | new_ids) - _visible_ids(request)
            seen |= new_ids
            ids = identifiers_of(originals[i] for i in sorted(folded) if i in originals)
            reach = _reach(request, h.files())
            for value, kind in ids.items():
                tier = reach.tier(value, kind)
                hit = tier in (TIER_SUMMARY, TIER_VIEW)
                counts = out.by_kind.setdefault(kind, [0, 0])
                counts[0] += 1
                counts[1] += hit
                out.folded_ids += 1
                out.visible_ids += hit
                out.one_read_ids += tier == TIER_ONE_READ
                out.two_reads_ids += tier == TIER_TWO_READS
                out.unreachable_ids += tier == TIER_UNREACHABLE
        out.summary_calls = h.summarizer.calls
        out.errors = len(h.errors)
    finally:
        h.cleanup()
    return out


def run_survival(trajs: tuple[trajectories.Trajectory, ...] | None = None) -> list[Survival]:
    trajs = trajs or trajectories.trajectories()
    return [survive(t, v) for t in trajs for v in VARIANTS]


def survival_rows(results: list[Survival]) -> list[dict]:
    rows = []
    for variant in VARIANTS:
        rs = [r for r in results if r.variant == variant]
        folded = sum(r.folded_ids for r in rs)
        kinds: dict[str, list[int]] = {}
        for r in rs:
            for kind, (f, v) in r.by_kind.items():
                kinds.setdefault(kind, [0, 0])
                kinds[kind][0] += f
                kinds[kind][1] += v
        row = {
            "middleware": variant,
            "summaries": sum(r.summaries for r in rs),
            "summary_calls": sum(r.summary_calls for r in rs),
            "folded_ids": folded,
            "survived": sum(r.visible_ids for r in rs) / folded if folded else None,
            "one_read": sum(r.one_read_ids for r in rs) / folded if folded else None,
            "two_reads": sum(r.two_reads_ids for r in rs) / folded if folded else None,
            "unreachable": sum(r.unreachable_ids for r in rs) / folded if folded else None,
            "errors": sum(r.errors for r in rs),
        }
        for kind in ("url", "path", "record_id", "hash", "quantity"):
            f, v = kinds.get(kind, [0, 0])
            row[kind] = v / f if f else None
        rows.append(row)
    return rows


SURVIVAL_COLUMNS = [
    "middleware",
    "summaries",
    "summary_calls",
    "folded_ids",
    "survived",
    "one_read",
    "two_reads",
    "unreachable",
    "url",
    "path",
    "record_id",
    "hash",
    "quantity",
    "errors",
]


def _pct(v) -> str:
    return "" if v is None else f"{v:.0%}"


def render_survival(results: list[Survival]) -> str:
    rows = survival_rows(results)
    tiers = ("survived", "one_read", "two_reads", "unreachable")
    fmt = {c: _pct for c in (*tiers, "url", "path", "record_id", "hash", "quantity")}
    return (
        f"Budget for all: trigger {SETUP.trigger_tokens:,} tokens, keep {SETUP.keep_messages} messages, window "
        f"{SETUP.context_window:,}; {len({r.trajectory for r in results})} trajectories. `survived` = share of the "
        "identifiers of the messages each summary folded that the model still sees in its next request "
        "(in the summary or kept verbatim); per kind on the right. The rest by the loss report's tiers: "
        "`one_read` in a saved tool-result file the request names (only ours saves tool results), "
        "`two_reads` only through a conversation-history file the request names (ours and deepagents keep one): "
        "in it, or in a saved file it names, "
        "`unreachable` neither; the four shares add up to 100%. `summary_calls` counts repair calls "
        "too.\n\n" + markdown_table(rows, SURVIVAL_COLUMNS, fmt)
    )


if __name__ == "__main__":
    results = run_survival()
    print(render_survival(results))


def headline_rows(results: list[Survival]) -> list[dict]:
    """Rows for the headline table of docs/benchmarks.md (the preview's: ``bench.preview_accuracy``)."""
    by = {row["middleware"]: row for row in survival_rows(results)}

    def pct(v) -> str:
        return "n/a" if v is None else f"{v:.0%}"

    return [
        {
            "measure": "Identifiers of folded messages still visible after a summary, without / with the repair pass",
            "ours": f"{pct(by['ours']['survived'])} / {pct(by['ours+repair']['survived'])} "
            f"({by['ours']['summary_calls']} / {by['ours+repair']['summary_calls']} summary calls)",
            "peers": f"LangChain {pct(by['langchain']['survived'])}, deepagents {pct(by['deepagents']['survived'])} "
            "(same summarizer)",
            "target": "reported",
        },
    ]

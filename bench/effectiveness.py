"""Issue 8, item 2: compression effectiveness on real trajectories, ours against LangChain and deepagents.

Every trajectory of ``bench.trajectories`` is replayed turn by turn: before each recorded
``AIMessage`` the state holds everything up to it and one model call runs through the middleware
(the recording model answers ``ok``; the trajectory's real ``AIMessage`` is then appended, as the
agent's reply). All three middlewares share the trigger, the keep setting, the context window, the
summary prompt and the fake summarizer (``bench.peers``). Reported per trajectory and in total:

* summary-model calls;
* tokens sent per model call (mean) and the peak request, counted with ONE reference tokenizer
  (OpenAI cl100k, offline) for all three: system prompt + every message's text and tool calls;
* identifiers from the ORIGINAL tool results (URLs, document / record ids, file paths) still
  visible in the final request, and visible or recoverable from the files each middleware saved;
* ours only: every replaced tool result is byte-recoverable: the saved file's SHA-256 equals the
  receipt's and the file equals the original tool output.

    python -m bench.effectiveness
"""

from __future__ import annotations

import hashlib
import re
import statistics
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from bench import peers, trajectories
from bench.common import markdown_table, num
from bench.peers import message_text, request_tokens
from context_engine.compaction.tool_results import tool_result_text

SETUP = peers.Setup(trigger_tokens=8192, keep_messages=10, context_window=32768)
SUMMARY_CALL_TARGET = 0.5  # ours at most half the peers' summary calls
CHART_TRAJECTORY = "oh:ponylang__ponyc-4595"

URL_RE = re.compile(r"https?://[^\s\"'<>()\[\]{}\\|^`]+")
PATH_RE = re.compile(r"(?<![\w.:/-])/?(?:[\w.-]+/)+[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5}(?![\w/])")
ID_RE = re.compile(r"""["'](?:\w*_)?id["']\s*:\s*["']([^"'\s]{3,80})["']""")
UUID_RE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
RECEIPT_SHA_RE = re.compile(r"^SHA-256: ([0-9a-f]{64})$", re.M)
RECEIPT_PATH_RE = re.compile(r"^Full output path: (\S+)$", re.M)


def identifiers(text: str) -> set[str]:
    found = {u.rstrip(".,;:") for u in URL_RE.findall(text)}
    found |= set(PATH_RE.findall(text))
    found |= set(ID_RE.findall(text)) | set(UUID_RE.findall(text))
    return {f for f in found if len(f) >= 4}


# --- replay ---------------------------------------------------------------------------------------


@dataclass
class Replay:
    trajectory: str
    source: str
    middleware: str
    model_calls: int = 0
    summary_calls: int = 0
    tokens: list[int] = field(default_factory=list)
    ids_total: int = 0
    ids_visible: int = 0
    ids_recoverable: int = 0
    replaced: int = 0
    byte_recoverable: int = 0
    errors: int = 0
    rejected: int = 0
    # Every request the agent model got, in order (``bench.cache_economics`` prices their prefixes),
    # and the summary calls' prompt tokens (cl100k).
    requests: list[list[BaseMessage]] = field(default_factory=list, repr=False)
    summary_prompt_tokens: int = 0

    @property
    def mean_tokens(self) -> float:
        return statistics.fmean(self.tokens) if self.tokens else 0.0

    @property
    def peak_tokens(self) -> int:
        return max(self.tokens, default=0)


def _replaced_check(
    requests: list[list[BaseMessage]], files: dict[str, str], originals: dict[str, str]
) -> tuple[int, int]:
    """(replaced tool results seen, of which byte-recoverable) over every request the model got."""
    receipts: dict[str, str] = {}
    for request in requests:
        for m in request:
            if (
                isinstance(m, ToolMessage)
                and isinstance(m.content, str)
                and m.content.startswith("[Tool result saved]")
            ):
                receipts[m.tool_call_id] = m.content
    ok = 0
    for call_id, receipt in receipts.items():
        sha, path = RECEIPT_SHA_RE.search(receipt), RECEIPT_PATH_RE.search(receipt)
        saved = files.get(path[1]) if path else None
        original = originals.get(call_id)
        if sha and saved is not None and original is not None:
            digest = hashlib.sha256(saved.encode("utf-8", "surrogatepass")).hexdigest()
            ok += digest == sha[1] and saved == original
    return len(receipts), ok


def replay(traj: trajectories.Trajectory, name: str, setup: peers.Setup = SETUP) -> Replay:
    h = peers.build(name, setup)
    out = Replay(traj.name, traj.source, name)
    messages = traj.messages
    pointer = 0
    try:
        for i, message in enumerate(messages):
            if i == 0 or not isinstance(message, AIMessage):
                continue
            h.state["messages"] = [*h.state["messages"], *messages[pointer:i]]
            pointer = i
            before = len(h.model.requests)
            peers.model_call(h)
            out.model_calls += 1
            if len(h.model.requests) > before:
                out.tokens.append(request_tokens(h.model.requests[-1]))
        out.summary_calls = h.summarizer.calls
        out.summary_prompt_tokens = h.summarizer.prompt_tokens
        out.requests = list(h.model.requests)
        out.errors = len(h.errors)
        out.rejected = h.model.rejected

        originals = {
            m.tool_call_id: tool_result_text(m.content) for m in messages if isinstance(m, ToolMessage)
        }
        # Only results the agent had received by its last model call can be visible or saved.
        seen = [tool_result_text(m.content) for m in messages[:pointer] if isinstance(m, ToolMessage)]
        ids = set().union(*(identifiers(t) for t in seen)) if seen else set()
        final = "\n".join(message_text(m) for m in h.model.requests[-1]) if h.model.requests else ""
        files = h.files()
        saved = "\n".join(files.values())
        out.ids_total = len(ids)
        out.ids_visible = sum(1 for x in ids if x in final)
        out.ids_recoverable = sum(1 for x in ids if x in final or x in saved)
        out.replaced, out.byte_recoverable = _replaced_check(h.model.requests, files, originals)
    finally:
        h.cleanup()
    return out


def run(trajs: tuple[trajectories.Trajectory, ...] | None = None, setup: peers.Setup = SETUP) -> list[Replay]:
    trajs = trajs or trajectories.trajectories()
    return [replay(t, name, setup) for t in trajs for name in peers.MIDDLEWARES]


SENSITIVITY_TRIGGERS = (4096, 8192, 16384)


def sensitivity(triggers=SENSITIVITY_TRIGGERS, *, main_total: dict | None = None) -> list[dict]:
    """TOTAL summary calls and recoverability at other budgets (window = 4x trigger, keep unchanged).

    ``main_total`` is the TOTAL row already measured with ``SETUP``: that budget is not replayed again.
    """
    rows = []
    for trigger in triggers:
        setup = peers.Setup(
            trigger_tokens=trigger, keep_messages=SETUP.keep_messages, context_window=4 * trigger
        )
        total = main_total if main_total is not None and setup == SETUP else summarize(run(setup=setup))[-1]
        rows.append({"trigger": trigger, **{k: total[k] for k in SENSITIVITY_COLUMNS[1:]}})
    return rows


SENSITIVITY_COLUMNS = [
    "trigger",
    "ours_summaries",
    "langchain_summaries",
    "deepagents_summaries",
    "calls_vs_langchain",
    "calls_vs_deepagents",
    "replaced",
    "byte_recoverable",
    "ours_mean_tok",
    "langchain_mean_tok",
    "deepagents_mean_tok",
    "ours_errors",
    "langchain_errors",
    "deepagents_errors",
]


def render_sensitivity(rows: list[dict]) -> str:
    fmt = _formats(SENSITIVITY_COLUMNS)
    fmt["trigger"] = lambda v: f"{v:,}"
    return (
        "All trajectories again at other budgets (context window = 4× the trigger, keep 10 messages), TOTAL rows "
        "only, to show the comparison does not hinge on one trigger.\n\n"
        + markdown_table(rows, SENSITIVITY_COLUMNS, fmt)
    )


# --- tables ---------------------------------------------------------------------------------------


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _group(rows: list[Replay], key) -> dict[str, dict[str, list[Replay]]]:
    out: dict[str, dict[str, list[Replay]]] = {}
    for r in rows:
        out.setdefault(key(r), {}).setdefault(r.middleware, []).append(r)
    return out


def _aggregate(label: str, by_mw: dict[str, list[Replay]]) -> dict:
    row: dict = {"trajectories": label}
    for mw in peers.MIDDLEWARES:
        rs = by_mw.get(mw, [])
        tokens = [t for r in rs for t in r.tokens]
        ids = sum(r.ids_total for r in rs)
        row[f"{mw}_summaries"] = sum(r.summary_calls for r in rs)
        row[f"{mw}_mean_tok"] = statistics.fmean(tokens) if tokens else 0.0
        row[f"{mw}_peak_tok"] = max(tokens, default=0)
        row[f"{mw}_ids_visible"] = sum(r.ids_visible for r in rs) / ids if ids else None
        row[f"{mw}_ids_recoverable"] = sum(r.ids_recoverable for r in rs) / ids if ids else None
        row[f"{mw}_errors"] = sum(r.errors for r in rs)
        row[f"{mw}_rejected"] = sum(r.rejected for r in rs)
    ours = row["ours_summaries"]
    row["calls_vs_langchain"] = _ratio(ours, row["langchain_summaries"])
    row["calls_vs_deepagents"] = _ratio(ours, row["deepagents_summaries"])
    rs = by_mw.get("ours", [])
    row["replaced"] = sum(r.replaced for r in rs)
    row["byte_recoverable"] = sum(r.byte_recoverable for r in rs)
    row["model_calls"] = sum(r.model_calls for r in rs)
    row["ids"] = sum(r.ids_total for r in rs)
    return row


def summarize(rows: list[Replay]) -> list[dict]:
    """One row per source plus a TOTAL row."""
    out = [_aggregate(src, by_mw) for src, by_mw in _group(rows, lambda r: r.source).items()]
    out.append(_aggregate("TOTAL", _group(rows, lambda r: "all")["all"]))
    for row, src in zip(out, [*_group(rows, lambda r: r.source), "TOTAL"], strict=True):
        row["trajectories"] = (
            f"{src} ({len({r.trajectory for r in rows if src == 'TOTAL' or r.source == src})})"
        )
    return out


def per_trajectory(rows: list[Replay]) -> list[dict]:
    return [_aggregate(name, by_mw) for name, by_mw in _group(rows, lambda r: r.trajectory).items()]


def _pct(v) -> str:
    return "" if v is None else f"{v:.0%}"


def _x(v) -> str:
    return "" if v is None else f"{v:.2f}×"


SUMMARY_COLUMNS = [
    "trajectories",
    "model_calls",
    "ours_summaries",
    "langchain_summaries",
    "deepagents_summaries",
    "calls_vs_langchain",
    "calls_vs_deepagents",
    "ours_mean_tok",
    "langchain_mean_tok",
    "deepagents_mean_tok",
    "ours_peak_tok",
    "langchain_peak_tok",
    "deepagents_peak_tok",
]
IDS_COLUMNS = [
    "trajectories",
    "ids",
    "ours_ids_visible",
    "langchain_ids_visible",
    "deepagents_ids_visible",
    "ours_ids_recoverable",
    "langchain_ids_recoverable",
    "deepagents_ids_recoverable",
    "replaced",
    "byte_recoverable",
    "ours_rejected",
    "langchain_rejected",
    "deepagents_rejected",
    "ours_errors",
    "langchain_errors",
    "deepagents_errors",
]
TRAJ_COLUMNS = [
    "trajectories",
    "model_calls",
    "ours_summaries",
    "langchain_summaries",
    "deepagents_summaries",
    "ours_mean_tok",
    "langchain_mean_tok",
    "deepagents_mean_tok",
    "ours_peak_tok",
    "langchain_peak_tok",
    "deepagents_peak_tok",
    "ours_ids_recoverable",
    "langchain_ids_recoverable",
    "deepagents_ids_recoverable",
]


def _formats(columns: list[str]) -> dict:
    fmt: dict = {}
    for c in columns:
        if c.endswith("_tok"):
            fmt[c] = num(0)
        elif c.startswith("calls_vs"):
            fmt[c] = _x
        elif "_ids_" in c:
            fmt[c] = _pct
    return fmt


def targets(summary: list[dict]) -> dict[str, object]:
    total = summary[-1]
    return {
        "summary_calls_ours": total["ours_summaries"],
        "summary_calls_langchain": total["langchain_summaries"],
        "summary_calls_deepagents": total["deepagents_summaries"],
        "calls_vs_langchain": total["calls_vs_langchain"],
        "calls_vs_deepagents": total["calls_vs_deepagents"],
        "calls_target_met": all(
            v is not None and v <= SUMMARY_CALL_TARGET
            for v in (total["calls_vs_langchain"], total["calls_vs_deepagents"])
        ),
        "replaced": total["replaced"],
        "byte_recoverable": total["byte_recoverable"],
        "recoverable_target_met": total["replaced"] == total["byte_recoverable"],
        "ids_recoverable_ours": total["ours_ids_recoverable"],
        "ids_visible_ours": total["ours_ids_visible"],
    }


def render(rows: list[Replay]) -> str:
    summary = summarize(rows)
    s = SETUP
    return (
        f"Budget for all three: trigger {s.trigger_tokens:,} tokens, keep {s.keep_messages} messages, context "
        f"window {s.context_window:,} (the summarizer's input is trimmed to it), the same summary prompt and "
        f"the same fake summarizer (first {peers.SUMMARY_CHARS} characters of the conversation it is given). "
        f"Ours offloads tool results above {s.tool_result_token_limit} estimated tokens. Tokens are cl100k "
        "counts of what the model received (system prompt + messages + tool calls). "
        "`calls_vs_*` = our summary calls / the peer's (target <= 0.50×).\n\n"
        + markdown_table(summary, SUMMARY_COLUMNS, _formats(SUMMARY_COLUMNS))
        + "\nIdentifiers (URLs, record / document ids, file paths) taken from the original tool results: share "
        "visible in the final request, and visible or recoverable from the files the middleware saved "
        "(ours: workdir store; deepagents: its backend's history files; LangChain saves nothing). "
        "`replaced` = tool results ours replaced by a receipt; `byte_recoverable` = of those, saved file SHA-256 "
        "= receipt's = original output's. `*_rejected` = requests the model refused as larger than its window (ContextOverflowError, as a provider would); `*_errors` = model calls that failed (the error reached the agent).\n\n"
        + markdown_table(summary, IDS_COLUMNS, _formats(IDS_COLUMNS))
    )


def render_trajectories(rows: list[Replay]) -> str:
    table = per_trajectory(rows)
    return markdown_table(table, TRAJ_COLUMNS, _formats(TRAJ_COLUMNS))


if __name__ == "__main__":
    results = run()
    print(render(results))
    print(render_trajectories(results))
    print(targets(summarize(results)))

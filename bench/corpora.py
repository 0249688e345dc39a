"""Text samples from the real traces in ``../shared/data`` (see its README.md), one per message.

Each corpus yields :class:`Sample` objects; a sample is one message / tool output as the estimator
sees it. Samples are split deterministically into a FIT half and a CHECK half by a hash of their
*group* (the conversation, session or file they come from), so that no conversation contributes
text to both halves: the estimator is fitted on one half and checked on the other (SPEC §4).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA_DIR = Path(os.environ.get("BENCH_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
MIN_CHARS = 20  # shorter messages (e.g. "谢谢！") carry too few tokens for a relative error to mean much

FIT = "fit"
CHECK = "check"


@dataclass(frozen=True)
class Sample:
    corpus: str
    id: str
    group: str
    text: str

    @property
    def half(self) -> str:
        return split_of(self.group)


def split_of(group: str) -> str:
    digest = hashlib.sha256(group.encode()).digest()
    return FIT if digest[0] % 2 == 0 else CHECK


def _load_json(rel: str):
    with open(DATA_DIR / rel, encoding="utf-8") as fh:
        return json.load(fh)


def _load_jsonl(rel: str) -> list:
    with open(DATA_DIR / rel, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _chats(lang: str) -> Iterator[Sample]:
    rel = f"cjk_toolcall_chats/glaive_toolcall_{lang}_demo.json"
    for i, conv in enumerate(_load_json(rel)):
        group = f"{lang}:{i}"
        for j, turn in enumerate(conv["conversations"]):
            yield Sample(f"{lang}_chats", f"{group}:{j}:{turn['from']}", group, turn["value"])
        if conv.get("tools"):
            yield Sample(f"{lang}_chats", f"{group}:tools", group, conv["tools"])


def zh_chats() -> Iterator[Sample]:
    """Chinese tool-calling chats: user/assistant turns, tool calls, JSON tool outputs, tool schemas."""
    return _chats("zh")


def en_chats() -> Iterator[Sample]:
    """The English originals of the same chats."""
    return _chats("en")


def aider() -> Iterator[Sample]:
    """The aider author's chat history: user, assistant (diffs, code) and console-output turns."""
    for session in _load_jsonl("aider_chat_history/sessions.jsonl"):
        group = f"aider:{session['session_index']}"
        for j, turn in enumerate(session["turns"]):
            yield Sample("aider", f"{group}:{j}:{turn['role']}", group, turn["content"])


def swe_agent() -> Iterator[Sample]:
    """SWE-agent / EnIGMA / mini-swe-agent tool output (shell, file windows, decompiler, hexdumps)."""
    root = DATA_DIR / "swe_agent_trajectories"
    for path in sorted(root.iterdir()):
        group = f"swe:{path.name}"
        if path.name.endswith(".traj"):
            data = json.loads(path.read_text(encoding="utf-8"))
            for j, step in enumerate(data.get("trajectory", [])):
                yield Sample("swe_agent", f"{group}:{j}", group, _text(step.get("observation")))
        elif path.name.endswith(".traj.json"):
            data = json.loads(path.read_text(encoding="utf-8"))
            messages = data if isinstance(data, list) else data.get("messages", [])
            for j, msg in enumerate(messages):
                if msg.get("role") in ("user", "tool") and j > 1:  # bash output arrives as user turns
                    yield Sample("swe_agent", f"{group}:{j}", group, _text(msg.get("content")))
        elif path.suffix in (".log", ".txt"):
            # Raw console logs: one sample per block of 60 lines.
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
            for j in range(0, len(lines), 60):
                yield Sample("swe_agent", f"{group}:{j}", group, "".join(lines[j : j + 60]))


def tau2_json() -> Iterator[Sample]:
    """tau2-bench gpt-4o simulations: the JSON tool outputs (flight lists, reservations, records)."""
    for rel in (
        "tau2_bench_simulations/airline_gpt-4o-2024-11-20_50sims.json",
        "tau2_bench_simulations/telecom_gpt-4o_20sims.json",
    ):
        for sim in _load_json(rel)["simulations"]:
            group = f"tau2:{sim['id']}"
            for j, msg in enumerate(sim["messages"]):
                if msg.get("role") == "tool":
                    yield Sample("tau2_json", f"{group}:{j}", group, _text(msg.get("content")))


def web_search() -> Iterator[Sample]:
    """Web/file-search and MCP tool-result payloads (pydantic_ai_cassettes/tool_results.jsonl), as JSON."""
    for i, rec in enumerate(_load_jsonl("pydantic_ai_cassettes/tool_results.jsonl")):
        group = f"web:{rec.get('cassette')}:{rec.get('interaction')}:{i}"
        yield Sample("web_search", group, group, json.dumps(rec["payload"], ensure_ascii=False))


def kb_retrieval() -> Iterator[Sample]:
    """Pinecone / LangChain retriever outputs (Python reprs with ids, scores, metadata)."""
    for i, rec in enumerate(_load_jsonl("kb_retrieval/pinecone_examples_notebook_retrieval_outputs.jsonl")):
        group = f"kb:{rec.get('notebook')}:{rec.get('cell_index')}:{i}"
        yield Sample("kb_retrieval", group, group, rec["output_text"])


def openhands() -> Iterator[Sample]:
    """OpenHands CodeActAgent events: file reads, shell/compiler output, agent messages."""
    for i, run in enumerate(_load_jsonl("openhands_trajectories/multi_swe_bench_codeact_output.jsonl")):
        group = f"oh:{run.get('instance_id', i)}"
        for j, event in enumerate(run.get("history", [])):
            text = event.get("content") or event.get("message")
            if isinstance(text, str):
                yield Sample("openhands", f"{group}:{j}", group, text)


# The six corpora of issue 8, then two extra real-trace corpora.
CORPORA: dict[str, Callable[[], Iterator[Sample]]] = {
    "zh_chats": zh_chats,
    "en_chats": en_chats,
    "aider": aider,
    "swe_agent": swe_agent,
    "tau2_json": tau2_json,
    "web_search": web_search,
    "kb_retrieval": kb_retrieval,
    "openhands": openhands,
}


@cache
def samples(corpus: str, half: str | None = None, min_chars: int = MIN_CHARS) -> tuple[Sample, ...]:
    """The samples of ``corpus`` (optionally only the FIT or CHECK half), at least ``min_chars`` long."""
    out = []
    for s in CORPORA[corpus]():
        if len(s.text) >= min_chars and (half is None or s.half == half):
            out.append(s)
    return tuple(out)


if __name__ == "__main__":
    for name in CORPORA:
        fit, check = samples(name, FIT), samples(name, CHECK)
        chars = sum(len(s.text) for s in fit + check)
        print(f"{name:14s} fit={len(fit):5d} check={len(check):5d} chars={chars:,}")

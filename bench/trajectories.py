"""Real agent trajectories from ``../shared/data`` as LangChain message lists, one converter per source.

Every trajectory is a list of ``HumanMessage`` / ``AIMessage`` (with ``tool_calls``) / ``ToolMessage``
(with the matching ``tool_call_id`` and ``name``), in the order the agent saw them. A model call
happens before every ``AIMessage``: that is how the effectiveness replay grows the state one agent
step at a time. Message ids are deterministic (``<trajectory>:<index>``), so the output is identical
on every run.

* ``swe_agent``: SWE-agent / EnIGMA ``.traj`` files (``trajectory`` steps: thought, action, observation;
  ``history`` with native tool calls where the run used function calling);
* ``openhands``: the three real CodeActAgent Multi-SWE-bench runs (run/read/edit/think/finish actions);
* ``tau2``: gpt-4o airline and telecom simulations, five consecutive simulations of one domain per
  thread (one support agent's day), with their real JSON tool calls and outputs;
* ``aider``: the largest real aider sessions; console output (lint, pytest, ``/run``) becomes tool results;
* ``search``: a synthetic thread whose tool results are real web-search (pydantic_ai cassettes) and
  retrieval (Pinecone) outputs rewritten into the platform's ``web_search`` / ``query_kb`` JSON shapes
  (SPEC §2.2), so the structured previews are exercised.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlparse

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from bench.corpora import DATA_DIR

TAU2_SIMS_PER_THREAD = 5
AIDER_SESSIONS = 6
AIDER_MIN_TURNS = 20
SEARCH_THREADS = 2


@dataclass(frozen=True)
class Trajectory:
    source: str
    name: str
    messages: tuple[BaseMessage, ...]

    @property
    def model_calls(self) -> int:
        return sum(1 for i, m in enumerate(self.messages) if i and isinstance(m, AIMessage))


class _Builder:
    """Appends messages with deterministic ids and keeps tool calls paired with their results."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.messages: list[BaseMessage] = []
        self._calls = 0

    def _id(self) -> str:
        return f"{self.name}:{len(self.messages)}"

    def call_id(self) -> str:
        self._calls += 1
        return f"call_{self.name.replace(':', '_')}_{self._calls}"

    def human(self, text: str) -> None:
        if text.strip():
            self.messages.append(HumanMessage(content=text, id=self._id()))

    def ai(self, text: str, calls: list[dict] | None = None) -> None:
        tool_calls = [
            {"name": c["name"], "args": c["args"], "id": c["id"], "type": "tool_call"} for c in calls or []
        ]
        if text.strip() or tool_calls:
            self.messages.append(AIMessage(content=text or "", tool_calls=tool_calls, id=self._id()))

    def tool(self, text: str, *, call_id: str, name: str) -> None:
        self.messages.append(ToolMessage(content=text, tool_call_id=call_id, name=name, id=self._id()))

    def trajectory(self, source: str) -> Trajectory:
        return Trajectory(source, self.name, tuple(self.messages))


def _text(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _load_json(rel: str):
    with open(DATA_DIR / rel, encoding="utf-8") as fh:
        return json.load(fh)


def _load_jsonl(rel: str) -> list:
    with open(DATA_DIR / rel, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _literal(value):
    """Fields stored as Python reprs (``"[{'id': ...}]"``) or JSON strings, parsed; else the value."""
    if not isinstance(value, str):
        return value
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(value)
        except (ValueError, SyntaxError):
            continue
    return value


# --- SWE-agent -----------------------------------------------------------------------------------


def _swe_history(b: _Builder, history: list[dict]) -> None:
    """Function-calling trajectories: native tool calls in ``history``, results as ``tool`` turns."""
    pending: list[tuple[str, str]] = []
    for msg in history:
        role = msg.get("role")
        if role == "system":
            continue
        if role == "assistant":
            calls = []
            for raw in _literal(msg.get("tool_calls")) or []:
                fn = raw.get("function", {})
                calls.append(
                    {
                        "name": fn.get("name", "bash"),
                        "args": _literal(fn.get("arguments")) or {},
                        "id": raw.get("id") or b.call_id(),
                    }
                )
            if not calls and msg.get("action"):
                calls = [{"name": "bash", "args": {"command": msg["action"]}, "id": b.call_id()}]
            b.ai(_text(msg.get("thought") or msg.get("content")), calls)
            pending = [(c["id"], c["name"]) for c in calls]
        elif role == "tool" and pending:
            call_id, name = pending.pop(0)
            b.tool(_text(msg.get("content")), call_id=call_id, name=name)
        elif role in ("user", "tool"):
            for call_id, name in pending:  # a user-role observation answers the open call
                b.tool(_text(msg.get("content")), call_id=call_id, name=name)
                break
            else:
                b.human(_text(msg.get("content")))
            pending = []


def swe_agent() -> Iterator[Trajectory]:
    root = DATA_DIR / "swe_agent_trajectories"
    for i, path in enumerate(sorted(root.glob("*.traj"))):
        data = json.loads(path.read_text(encoding="utf-8"))
        short = path.stem.replace("demo__replay__marshmallow-code__marshmallow-1867__", "marshmallow__")
        b = _Builder(f"swe:{i:02d}:{short[:44]}")
        history = data.get("history", [])
        steps = data.get("trajectory", [])
        if any(m.get("role") == "tool" for m in history) or not steps:
            _swe_history(b, history)
        else:
            issue = next((m for m in history if m.get("role") == "user"), None)
            b.human(_text(issue.get("content")) if issue else "Solve the task in this repository.")
            for step in steps:
                call_id = b.call_id()
                b.ai(
                    _text(step.get("thought") or step.get("response")),
                    [{"name": "bash", "args": {"command": _text(step.get("action"))}, "id": call_id}],
                )
                b.tool(_text(step.get("observation")), call_id=call_id, name="bash")
        if len(b.messages) >= 4:
            yield b.trajectory("swe_agent")


# --- OpenHands -----------------------------------------------------------------------------------

_OH_DROP_ARGS = {
    "thought",
    "impl_source",
    "is_input",
    "blocking",
    "is_static",
    "cwd",
    "hidden",
    "confirmation_state",
    "file_text",
    "insert_line",
    "content",
    "start",
    "end",
}


def openhands() -> Iterator[Trajectory]:
    for run in _load_jsonl("openhands_trajectories/multi_swe_bench_codeact_output.jsonl"):
        b = _Builder(f"oh:{run['instance_id']}")
        open_calls: dict[str, str] = {}  # OpenHands tool_call_id -> our call id
        for event in run["history"]:
            meta = event.get("tool_call_metadata") or {}
            action, observation = event.get("action"), event.get("observation")
            if event.get("source") == "user" and action == "message":
                b.human(_text(event.get("message")))
            elif action and meta:
                args = {
                    k: v
                    for k, v in (event.get("args") or {}).items()
                    if k not in _OH_DROP_ARGS and v not in ("None", None, "")
                }
                call_id = b.call_id()
                open_calls[meta["tool_call_id"]] = call_id
                b.ai(
                    _text((event.get("args") or {}).get("thought")),
                    [{"name": meta.get("function_name") or action, "args": args, "id": call_id}],
                )
            elif action == "finish":
                b.ai(_text((event.get("args") or {}).get("final_thought") or event.get("message")))
            elif observation and meta and meta.get("tool_call_id") in open_calls:
                call_id = open_calls.pop(meta["tool_call_id"])
                b.tool(
                    _text(event.get("content")),
                    call_id=call_id,
                    name=meta.get("function_name") or observation,
                )
        yield b.trajectory("openhands")


# --- tau2-bench ----------------------------------------------------------------------------------


def _tau2_sim(b: _Builder, sim: dict) -> None:
    names: dict[str, str] = {}
    for msg in sim["messages"]:
        role = msg.get("role")
        if role == "user":
            b.human(_text(msg.get("content")))  # the simulated user's own tool calls stay on their side
        elif role == "assistant":
            calls = []
            for raw in msg.get("tool_calls") or []:
                names[raw["id"]] = raw["name"]
                calls.append({"name": raw["name"], "args": raw.get("arguments") or {}, "id": raw["id"]})
            b.ai(_text(msg.get("content")), calls)
        elif role == "tool" and msg.get("id") in names:
            b.tool(_text(msg.get("content")), call_id=msg["id"], name=names.pop(msg["id"]))


def tau2() -> Iterator[Trajectory]:
    for rel, domain in (
        ("tau2_bench_simulations/airline_gpt-4o-2024-11-20_50sims.json", "airline"),
        ("tau2_bench_simulations/telecom_gpt-4o_20sims.json", "telecom"),
    ):
        sims = _load_json(rel)["simulations"]
        for start in range(0, len(sims), TAU2_SIMS_PER_THREAD):
            b = _Builder(f"tau2:{domain}:{start // TAU2_SIMS_PER_THREAD}")
            for sim in sims[start : start + TAU2_SIMS_PER_THREAD]:
                _tau2_sim(b, sim)
            yield b.trajectory("tau2")


# --- aider ---------------------------------------------------------------------------------------


def aider() -> Iterator[Trajectory]:
    sessions = _load_jsonl("aider_chat_history/sessions.jsonl")
    sessions = [s for s in sessions if len(s["turns"]) >= AIDER_MIN_TURNS]
    sessions.sort(key=lambda s: (-sum(len(t["content"]) for t in s["turns"]), s["session_index"]))
    for session in sorted(sessions[:AIDER_SESSIONS], key=lambda s: s["session_index"]):
        b = _Builder(f"aider:{session['session_index']}")
        for turn in session["turns"]:
            role, text = turn["role"], turn["content"]
            if role == "user":
                b.human(text)
            elif role == "assistant":
                b.ai(text)
            elif text.strip():  # console output: a result of the tool call the previous step made
                if not any(isinstance(m, HumanMessage) for m in b.messages):
                    b.human(text)  # the launch banner opens the session
                    continue
                call_id = b.call_id()
                b.ai("", [{"name": "console", "args": {}, "id": call_id}])
                b.tool(text, call_id=call_id, name="console")
        yield b.trajectory("aider")


# --- web_search / query_kb in the platform's shapes ------------------------------------------------


def _site(url: str | None) -> str | None:
    return urlparse(url).hostname if url else None


# One reader per recorded provider payload kind: (query, results), as the platform's web_search records.
WebResults = tuple[str | None, list[dict]]


def _tavily_results(payload) -> WebResults:
    return payload.get("query"), [
        {
            "title": r.get("title"),
            "url": r.get("url"),
            "site_name": _site(r.get("url")),
            "publish_time": r.get("published_date"),
            "score": r.get("score"),
            "content": r.get("content") or "",
        }
        for r in payload.get("results", [])
    ]


def _groq_results(payload) -> WebResults:
    query = (_literal(payload.get("arguments")) or {}).get("query")
    results = []
    for block in re.split(r"\n(?=Title: )", payload.get("output") or ""):
        m = re.match(r"Title: (.*)\nURL: (\S+)\n+(?:Content: )?(.*)", block, re.S)
        if m:
            results.append(
                {
                    "title": m[1],
                    "url": m[2],
                    "site_name": _site(m[2]),
                    "publish_time": None,
                    "score": None,
                    "content": m[3].strip(),
                }
            )
    return query, results


def _anthropic_search_results(payload) -> WebResults:
    if not isinstance(payload.get("content"), list):
        return None, []
    return None, [
        {
            "title": r.get("title"),
            "url": r.get("url"),
            "site_name": _site(r.get("url")),
            "publish_time": r.get("page_age"),
            "score": None,
            "content": "",
        }  # page text is encrypted
        for r in payload["content"]
        if isinstance(r, dict) and r.get("url")
    ]


def _anthropic_fetch_results(payload) -> WebResults:
    inner = payload.get("content", {})
    url = inner.get("url")
    data = ((inner.get("content") or {}).get("source") or {}).get("data", "")
    title = (inner.get("content") or {}).get("title")
    return None, [
        {
            "title": title,
            "url": url,
            "site_name": _site(url),
            "publish_time": inner.get("retrieved_at"),
            "score": None,
            "content": data,
        }
    ]


def _google_results(payload) -> WebResults:
    chunks = payload.get("groundingChunks") or []
    texts: dict[int, list[str]] = {}
    for support in payload.get("groundingSupports") or []:
        for idx in support.get("groundingChunkIndices", []):
            texts.setdefault(idx, []).append(support.get("segment", {}).get("text", ""))
    queries = payload.get("webSearchQueries") or [None]
    return queries[0], [
        {
            "title": c.get("web", {}).get("title"),
            "url": c.get("web", {}).get("uri"),
            "site_name": c.get("web", {}).get("title"),
            "publish_time": None,
            "score": None,
            "content": " ".join(texts.get(i, [])),
        }
        for i, c in enumerate(chunks)
    ]


def _mcp_results(payload) -> WebResults:
    text = "\n".join(c.get("text", "") for c in payload.get("content", []) if isinstance(c, dict))
    return None, [
        {
            "title": "MCP tool result",
            "url": None,
            "site_name": None,
            "publish_time": None,
            "score": None,
            "content": text,
        }
    ]


_WEB_READERS = {
    "tavily_search_response": _tavily_results,
    "groq_executed_tool": _groq_results,
    "web_search_tool_result": _anthropic_search_results,
    "web_fetch_tool_result": _anthropic_fetch_results,
    "google_grounding_metadata": _google_results,
    "mcp_tool_result": _mcp_results,
}


def _web_results(kind: str, payload) -> WebResults:
    """(query, results) of one recorded provider payload, as the platform's web_search records; a kind
    with no reader has none."""
    reader = _WEB_READERS.get(kind)
    return reader(payload) if reader else (None, [])


def _kb_query(rec: dict) -> str:
    m = re.search(r"""query\s*=\s*["']([^"']+)["']""", rec.get("cell_source") or "")
    return m[1] if m else f"{rec['notebook']} cell {rec['cell_index']}"


def _kb_results(rec: dict, kb_id: str) -> list[dict]:
    parsed = rec.get("parsed") or {}
    out = []
    for match in parsed.get("matches") or parsed.get("results") or []:
        if not isinstance(match, dict):
            continue
        meta = match.get("metadata") or {}
        source = meta.get("source") or meta.get("url")
        filename = source.rsplit("/", 1)[-1] if isinstance(source, str) else None
        chunk = meta.get("chunk")
        out.append(
            {
                "id": match.get("id"),
                "kb_id": kb_id,
                "file_id": filename or match.get("id"),
                "title": meta.get("title") or filename,
                "source": source,
                "score": match.get("score"),
                "content": meta.get("text") or meta.get("context") or json.dumps(meta, ensure_ascii=False),
                "metadata": {
                    "source": source,
                    "filename": filename,
                    "chunk_index": int(chunk) if isinstance(chunk, (int, float)) else None,
                    "score": match.get("score"),
                    **{k: v for k, v in meta.items() if k not in ("text", "source", "url", "chunk")},
                },
            }
        )
    return out


def _search_calls() -> list[tuple[str, str, str]]:
    """(tool name, user question, JSON result) for every usable recorded payload, in file order."""
    web, kb = [], []
    for i, rec in enumerate(_load_jsonl("pydantic_ai_cassettes/tool_results.jsonl")):
        query, results = _web_results(rec["kind"], rec["payload"])
        if not results:
            continue
        query = query or rec["cassette"].removesuffix(".json").replace("_", " ")
        body = {"query": query, "response_time": round(0.4 + (i % 7) * 0.13, 2), "results": results}
        web.append(("web_search", query, json.dumps(body, ensure_ascii=False)))
    for i, rec in enumerate(_load_jsonl("kb_retrieval/pinecone_examples_notebook_retrieval_outputs.jsonl")):
        kb_id = (
            "kb_"
            + re.sub(r"[^a-z0-9]+", "_", rec["notebook"].lower().removesuffix(".ipynb")).strip("_")[-40:]
        )
        results = _kb_results(rec, kb_id)
        if not results:
            continue
        query = _kb_query(rec)
        body = {
            "query": query,
            "kb_id": kb_id,
            "response_time": round(0.05 + (i % 5) * 0.02, 2),
            "results": results,
        }
        kb.append(("query_kb", query, json.dumps(body, ensure_ascii=False)))
    mixed = []
    for i in range(max(len(web), len(kb))):  # interleave: a research session alternating both tools
        mixed += [x for x in (web[i] if i < len(web) else None, kb[i] if i < len(kb) else None) if x]
    return mixed


def search() -> Iterator[Trajectory]:
    calls = _search_calls()
    per = -(-len(calls) // SEARCH_THREADS)
    for t in range(SEARCH_THREADS):
        b = _Builder(f"search:{t}")
        for tool, question, result in calls[t * per : (t + 1) * per]:
            b.human(f"Please look this up: {question}")
            call_id = b.call_id()
            b.ai("", [{"name": tool, "args": {"query": question}, "id": call_id}])
            b.tool(result, call_id=call_id, name=tool)
            n = len(json.loads(result)["results"])
            b.ai(f"I found {n} results for “{question}”. The most relevant sources are listed above.")
        yield b.trajectory("search")


SOURCES: dict[str, Callable[[], Iterator[Trajectory]]] = {
    "swe_agent": swe_agent,
    "openhands": openhands,
    "tau2": tau2,
    "aider": aider,
    "search": search,
}


@cache
def trajectories(source: str | None = None) -> tuple[Trajectory, ...]:
    names = [source] if source else list(SOURCES)
    return tuple(t for name in names for t in SOURCES[name]())


def check_pairs(messages: tuple[BaseMessage, ...] | list[BaseMessage]) -> None:
    """Raise ``ValueError`` unless every ToolMessage answers an earlier, still open tool call."""
    open_calls: dict[str, str] = {}
    for m in messages:
        if isinstance(m, AIMessage):
            open_calls.update({c["id"]: c["name"] for c in m.tool_calls})
        elif isinstance(m, ToolMessage):
            if open_calls.pop(m.tool_call_id, None) != m.name:
                raise ValueError(f"unpaired tool result {m.id}")


if __name__ == "__main__":
    from bench.tokenizers import count_cl100k

    for t in trajectories():
        check_pairs(t.messages)
        toks = sum(count_cl100k(str(m.content)) for m in t.messages)
        tools = sum(isinstance(m, ToolMessage) for m in t.messages)
        print(
            f"{t.source:10s} {t.name[:48]:48s} msgs={len(t.messages):4d} tools={tools:3d} "
            f"calls={t.model_calls:3d} cl100k={toks:7,d}"
        )

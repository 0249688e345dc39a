"""A long conversation with the packaged SmolLM2 (issue 37, item 6), shared by the 40-turn test and the
200-turn bench: a recording proxy in front of llama.cpp (every request the model received, summary calls
told apart), the users' messages (log lines and this repository's own source code), our raw estimate of
a recorded request, and what the thread's memory is (a validated model summary, a labelled extractive
one, the template echoed, or no summary at all)."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from langchain_core.messages import convert_to_messages

from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.state import SUMMARY_EVENT_KEY
from context_engine.summary.validation import DEFAULT_RULE, summary_problem
from context_engine.tokens.messages import TokenProfile, estimate_messages

ROOT = Path(__file__).resolve().parents[2]
# The summary prompt's first line: a request carrying it is a summary call, not the agent's.
SUMMARY_CALL_MARK = DEFAULT_SUMMARY_PROMPT.split("\n", 1)[0][:60]
# The prompt's instructions under its headings ("What the user is trying to achieve in this session."):
# a memory holding one of them is the template copied back, whatever else it holds.
TEMPLATE_LINES = tuple(
    line.strip()
    for line in DEFAULT_SUMMARY_PROMPT.split("<messages>", 1)[0].splitlines()[2:]
    if line.strip() and not line.startswith("##")
)
_SUMMARY_BODY = re.compile(r"<summary>\n(.*)\n</summary>", re.S)
# Where the extractive fallback (issue 37, item 1) may say what it is: the summary event, the record's
# event copy (``result``) or its loss report. Read by ``memory_labelled_extractive`` only.
EXTRACTIVE_LABEL_KEYS = ("summary_kind",)  # the loss report's: "model" or "extractive" (issue 37, item 1)
EXTRACTIVE = "extractive"


# --- the proxy -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    """One request the model server received, as sent, and the status it answered."""

    body: dict[str, Any]
    status: int

    @property
    def is_summary(self) -> bool:
        messages = self.body.get("messages") or []
        return any(SUMMARY_CALL_MARK in str(m.get("content") or "") for m in messages if isinstance(m, dict))


class RecordingProxy:
    """A loopback HTTP proxy in front of an OpenAI-compatible server: forwards every request as it came,
    relays the answer as it streams, and keeps each chat request's body and status (``requests``)."""

    def __init__(self, upstream_base_url: str) -> None:
        self.upstream = upstream_base_url.rstrip("/").removesuffix("/v1")
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=None)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="smollm2-proxy", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> RecordingProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def since(self, start: int) -> list[Recorded]:
        with self._lock:
            return self.requests[start:]

    def record(self, body: bytes, status: int) -> None:
        try:
            parsed = json.loads(body)
        except ValueError:
            return
        if isinstance(parsed, dict) and "messages" in parsed:
            with self._lock:
                self.requests.append(Recorded(parsed, status))


def _handler_for(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: the answer ends when the connection closes, so a stream is relayed as it comes.
        def do_GET(self) -> None:
            self._forward(b"")

        def do_POST(self) -> None:
            self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def _forward(self, body: bytes) -> None:
            headers = {"Content-Type": self.headers.get("Content-Type") or "application/json"}
            if authorization := self.headers.get("Authorization"):  # the local server's key
                headers["Authorization"] = authorization
            url = proxy.upstream + self.path
            with proxy._client.stream(self.command, url, content=body, headers=headers) as answer:
                proxy.record(body, answer.status_code)
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                self.end_headers()
                for chunk in answer.iter_raw():
                    self.wfile.write(chunk)
                    self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            return

    return Handler


def request_estimate(body: Mapping[str, Any], profile: TokenProfile) -> int:
    """Our raw estimate (no calibration) of a recorded request: its messages, tools and reply priming."""
    messages = convert_to_messages(list(body.get("messages") or []))
    return estimate_messages(messages, tools=list(body.get("tools") or []), profile=profile)


# --- the users' messages ---------------------------------------------------------------------------

_SERVICES = ("orders-api", "billing-worker", "auth-gateway", "search-indexer", "media-resizer")
_PATHS = (
    "/api/v2/orders/{n}",
    "/api/v2/invoices/{n}/pdf",
    "/oauth/token",
    "/search?q=sku-{n}",
    "/img/{n}.webp",
)
_SOURCES = (
    "context_engine/config.py",
    "context_engine/policy/trigger.py",
    "context_engine/summary/cutoff.py",
)


def _log_lines(rng: random.Random, turn: int, count: int) -> str:
    lines = []
    for i in range(count):
        service = rng.choice(_SERVICES)
        stamp = f"2025-03-{10 + turn // 24:02d}T{turn % 24:02d}:{i * 2 % 60:02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z"
        request = f"req-{rng.randrange(16**8):08x}"
        match rng.randrange(6):
            case 0:
                lines.append(
                    f"{stamp} ERROR [{service}] {request} psycopg.OperationalError: connection to server at "
                    f'"db-{rng.randrange(1, 6)}.internal" (10.0.{rng.randrange(8)}.{rng.randrange(2, 250)}), '
                    "port 5432 failed: timeout expired"
                )
            case 1:
                lines.append(
                    f"{stamp} WARN  [{service}] {request} retry {rng.randrange(1, 5)}/5 for job "
                    f"job-{rng.randrange(10**5):05d} (queue=invoices-{turn}): upstream answered 503 after "
                    f"{rng.randrange(1, 30)}s"
                )
            case _:
                path = rng.choice(_PATHS).format(n=rng.randrange(10**5))
                lines.append(
                    f"{stamp} INFO  [{service}] {request} GET {path} {rng.choice((200, 200, 304, 404))} "
                    f"{rng.randrange(3, 900)}ms user=u-{rng.randrange(10**4):04d}"
                )
    return "\n".join(lines)


def _source_excerpt(turn: int, lines: int) -> tuple[str, str]:
    path = _SOURCES[turn % len(_SOURCES)]
    text = (ROOT / path).read_text(encoding="utf-8").splitlines()
    start = (turn * lines) % max(1, len(text) - lines)
    return f"{path} lines {start + 1}-{start + lines}", "\n".join(text[start : start + lines])


def user_messages(turns: int, *, seed: int = 37, log_lines: int = 6, source_lines: int = 24) -> Iterator[str]:
    """``turns`` messages a user might paste: ``log_lines`` application log lines on even turns,
    ``source_lines`` of this repository's own source code on odd ones (real text, present wherever the
    tests run), each with a short question."""
    rng = random.Random(seed)
    for turn in range(turns):
        if turn % 2 == 0:
            yield (
                f"Turn {turn}: here are the latest log lines from production.\n```\n"
                f"{_log_lines(rng, turn, log_lines)}\n```\n"
                "Which request failed? Answer in one short sentence."
            )
        else:
            where, code = _source_excerpt(turn, source_lines)
            yield (
                f"Turn {turn}: this is {where}.\n```python\n{code}\n```\n"
                "What does this code do? Answer in one short sentence."
            )


# --- the thread's memory ---------------------------------------------------------------------------


class ExtractiveLabelMissing(LookupError):
    """No summary event or record carries a field that says how the memory was written."""


def memory_text(values: Mapping[str, Any]) -> str | None:
    """The summary the thread's state holds as memory (inside its message's ``<summary>``), or None."""
    event = values.get(SUMMARY_EVENT_KEY)
    if not event:
        return None
    content = str(event["summary_message"].content)
    found = _SUMMARY_BODY.search(content)
    return found.group(1).strip() if found else content.split("\n\n", 1)[-1].strip()


def echoes_template(text: str) -> bool:
    """Does ``text`` copy one of the summary prompt's instructions back (the template, not a summary)?"""
    lowered = text.lower()
    return any(line.lower() in lowered for line in TEMPLATE_LINES)


def _label(where: Mapping[str, Any] | None) -> str | None:
    for key in EXTRACTIVE_LABEL_KEYS:
        value = (where or {}).get(key)
        if isinstance(value, bool):
            return EXTRACTIVE if value else "model"
        if isinstance(value, str) and value:
            return value
    return None


def memory_labelled_extractive(event: Mapping[str, Any] | None, record: Any | None) -> bool:
    """Is the memory labelled as the extractive fallback (issue 37, item 1)? Read from the summary event
    or the compression record that applied it (its event copy, ``result``, or its loss report). Raises
    ``ExtractiveLabelMissing`` when none of them carries any of ``EXTRACTIVE_LABEL_KEYS``."""
    places = [event, getattr(record, "result", None), getattr(record, "loss_report", None)]
    labels = [label for place in places if (label := _label(place)) is not None]
    if not labels:
        raise ExtractiveLabelMissing(
            "neither the summary event nor its compression record carries any of "
            f"{', '.join(EXTRACTIVE_LABEL_KEYS)} (the extractive fallback's label, issue 37 item 1)"
        )
    return any(EXTRACTIVE in label.lower() for label in labels)


MEMORY_NONE, MEMORY_MODEL, MEMORY_EXTRACTIVE, MEMORY_TEMPLATE, MEMORY_INVALID = (
    "none",
    "model",
    "extractive",
    "template",
    "invalid",
)


def memory_kind(values: Mapping[str, Any], record: Any | None) -> tuple[str, str]:
    """What the thread's memory is, and why when it is not acceptable: no summary yet, the template
    copied back, an extractive summary labelled so, a model summary that passes validation, or invalid.
    ``record`` is the compression record that applied the summary (None before any)."""
    text = memory_text(values)
    if text is None:
        return MEMORY_NONE, ""
    if echoes_template(text):
        return MEMORY_TEMPLATE, f"the summary prompt's template echoed as memory: {text[:300]!r}"
    try:
        extractive: bool | None = memory_labelled_extractive(values.get(SUMMARY_EVENT_KEY), record)
    except ExtractiveLabelMissing as missing:
        extractive, unlabelled = None, str(missing)
    if extractive:
        return MEMORY_EXTRACTIVE, ""
    problem = summary_problem(text, DEFAULT_RULE)
    if problem is None:
        return MEMORY_MODEL, ""
    why = unlabelled if extractive is None else "it is not labelled extractive either"
    return MEMORY_INVALID, f"memory is no valid model summary ({problem}); {why}: {text[:300]!r}"


# --- one turn through the HTTP API -----------------------------------------------------------------

ACTIVE_RUN_STATUSES = ("queued", "running")
POLL_SECONDS = 0.2


@dataclass(frozen=True)
class ApiThread:
    """A thread driven through ``/api/threads/...`` with a Django test client, and what watches it: the
    proxy every model request goes through, the estimator profile and the model's window."""

    client: Any  # django.test.Client, logged in or given ``headers``
    headers: dict[str, str]
    thread_id: str
    proxy: RecordingProxy
    profile: TokenProfile
    window: int
    timeout: float = 600.0


@dataclass(frozen=True)
class Sent:
    """One request the model received during a turn: our raw estimate, the server's status, its kind."""

    estimate: int
    status: int
    summary: bool


@dataclass(frozen=True)
class Turn:
    """What one user message brought: the run's end, its answer, the requests the model received and
    the thread's memory after it (``memory_kind``)."""

    number: int
    seconds: float
    status: str
    error: str
    answer: str
    sent: tuple[Sent, ...]
    memory: str
    memory_detail: str

    def over(self, window: int) -> list[Sent]:
        """The requests over ``window`` by our raw estimate, or that the server refused as too long."""
        return [s for s in self.sent if s.estimate > window or s.status == 400]

    @property
    def summary_calls(self) -> int:
        return sum(1 for s in self.sent if s.summary)


def thread_open(client: Any, headers: dict[str, str], *, agent_slug: str) -> str:
    response = client.post(
        "/api/threads", {"agent": agent_slug}, content_type="application/json", headers=headers
    )
    assert response.status_code == 201, response.content
    return str(response.json()["thread_id"])


def take_turn(thread: ApiThread, number: int, content: str) -> Turn:
    """Post ``content`` as the user's message and wait, through ``GET .../state``, for its run to end."""
    base = f"/api/threads/{thread.thread_id}"
    first = len(thread.proxy.requests)
    started = time.monotonic()
    posted = thread.client.post(
        f"{base}/messages", {"content": content}, content_type="application/json", headers=thread.headers
    )
    assert posted.status_code == 202, posted.content
    run_id = posted.json()["run"]["id"]
    run = _run_end(thread, run_id, deadline=started + thread.timeout)
    seconds = time.monotonic() - started
    messages = thread.client.get(f"{base}/messages", headers=thread.headers).json()
    answer = next((m["content"] for m in messages if m["role"] == "assistant" and m["run_id"] == run_id), "")
    sent = tuple(
        Sent(request_estimate(r.body, thread.profile), r.status, r.is_summary)
        for r in thread.proxy.since(first)
    )
    memory, detail = memory_kind(*_memory_sources(thread.thread_id))
    return Turn(number, seconds, run["status"], run["error"], answer, sent, memory, detail)


def _run_end(thread: ApiThread, run_id: int, *, deadline: float) -> dict[str, Any]:
    while True:
        state = thread.client.get(f"/api/threads/{thread.thread_id}/state", headers=thread.headers).json()
        run = state["latest_run"] or {}
        if run.get("id") == run_id and run.get("status") not in ACTIVE_RUN_STATUSES:
            return run
        assert time.monotonic() < deadline, f"run {run_id} did not end: {state}"
        time.sleep(POLL_SECONDS)


def _memory_sources(thread_id: str) -> tuple[Mapping[str, Any], Any | None]:
    """The thread's state values and the compression record that applied its latest summary."""
    from compression.models import CompressionRecord
    from conversations.models import Conversation
    from tests.compression._threads import repository_for

    conversation = Conversation.objects.get(thread_id=thread_id)
    record = (
        CompressionRecord.objects.filter(
            conversation=conversation,
            level=CompressionRecord.Level.SUMMARY,
            status=CompressionRecord.Status.COMPLETED,
        )
        .order_by("-created_at", "-id")
        .first()
    )
    return repository_for(conversation).get_values(), record


# --- the thread's compressions, at the end ---------------------------------------------------------


@dataclass(frozen=True)
class Folded:
    """Every summary applied to a thread: how many, how many labelled extractive (None: no record
    carries a label), and where the identifiers they folded went (summed loss reports)."""

    summaries: int
    extractive: int | None
    in_view: int
    one_read: int
    two_reads: int
    unreachable: int
    lost_identifiers: tuple[str, ...]


def thread_folded(thread_id: str) -> Folded:
    from compression.models import CompressionRecord
    from context_engine.summary.identifiers import LossReport

    records = list(
        CompressionRecord.objects.filter(
            conversation__thread_id=thread_id,
            level=CompressionRecord.Level.SUMMARY,
            status=CompressionRecord.Status.COMPLETED,
        )
    )
    reports = [LossReport.from_dict(r.loss_report) for r in records]
    labels = [_label(r.result) or _label(r.loss_report) for r in records]
    known = [label for label in labels if label is not None]
    return Folded(
        summaries=len(records),
        extractive=sum(EXTRACTIVE in label.lower() for label in known) if known else None,
        in_view=sum(r.in_summary + r.in_view for r in reports),
        one_read=sum(r.one_read for r in reports),
        two_reads=sum(r.two_reads for r in reports),
        unreachable=sum(r.unreachable for r in reports),
        lost_identifiers=tuple(i for r in reports if r.unreachable for i in r.lost_identifiers),
    )

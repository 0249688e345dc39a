"""Compaction that keeps the prompt prefix a provider caches (issue 40), as properties over generated
conversations driven through the real ``CompressionMiddleware``: between two compression events no
message before the newest changes (each request repeats the previous one and only adds at its end);
an event happens only when the request reaches ``T``; a receipt, once shown, is never shown otherwise
until a summary folds it."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph.message import add_messages

from context_engine.compaction.horizon import low_water_count, read_horizon
from context_engine.formats import RECEIPT_HEADER
from context_engine.state import COMPACTION_HORIZON_KEY, SUMMARY_EVENT_KEY
from context_engine.store import MemoryStore
from tests.context_engine.fakes import Handler, ScriptedChatModel, make_request
from tests.context_engine.middleware.support import mw_config, mw_for, request_size

EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOOLS = ("web_search", "read_file", "run_tests")
STEP = st.one_of(
    st.tuples(st.just("ask"), st.integers(5, 400), st.just("")),
    st.tuples(st.just("tool"), st.integers(20, 6_000), st.sampled_from(TOOLS)),
)


def _incoming(index: int, kind: str, size: int, tool: str) -> list[BaseMessage]:
    body = f"item-{index} " + " ".join(f"w{index}x{j}" for j in range(size // 6))
    if kind == "ask":
        return [HumanMessage(content=f"Question {index}: {body}", id=f"h-{index}")]
    call = {"name": tool, "args": {"q": index, "path": f"src/mod_{index}.py"}, "id": f"call-{index}"}
    return [
        AIMessage(content=f"Step {index}.", tool_calls=[call], id=f"ai-{index}"),
        ToolMessage(content=body, tool_call_id=f"call-{index}", name=tool, id=f"tool-{index}"),
    ]


def _apply(state: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        state[key] = add_messages(state["messages"], value) if key == "messages" else value


def _drive(steps, trigger: int):
    """Every model call of the conversation ``steps``: (messages sent, size measured before, event?)."""
    mw = mw_for(mw_config(trigger, keep=4, limit=100), MemoryStore(), ScriptedChatModel())
    state: dict[str, Any] = {"messages": [HumanMessage(content="Start the task.", id="h-start")]}
    calls = []
    cards: list[list[dict]] = []
    _drive.cards = cards  # type: ignore[attr-defined]
    for index, (kind, size, tool) in enumerate(steps):
        state["messages"] = [*state["messages"], *_incoming(index, kind, size, tool)]
        rest = {k: v for k, v in state.items() if k != "messages"}
        events: list[dict] = []
        handler = Handler()
        request = make_request(state["messages"], state=rest, events=events)
        response = mw.wrap_model_call(request, handler)
        update = dict(response.command.update or {}) if hasattr(response, "command") else {}
        changed = any(
            key in update and update[key] != state.get(key)
            for key in (COMPACTION_HORIZON_KEY, SUMMARY_EVENT_KEY)
        )
        # An event is what the engine changes in state (a horizon, a summary, replaced messages); a card
        # for receipts made at once below T is not one, and must keep the prefix too.
        calls.append((list(handler.sent), changed or "messages" in update))
        cards.append(events)
        _apply(state, update)
    return calls, state


@EXAMPLES
@given(steps=st.lists(STEP, min_size=2, max_size=24), trigger=st.integers(900, 4_000))
def test_no_message_before_the_newest_changes_between_two_compression_events(steps, trigger):
    calls, _state = _drive(steps, trigger)
    for (before, _), (sent, event) in zip(calls, calls[1:], strict=False):
        if not event:
            assert sent[: len(before)] == before, "a request changed an earlier message without an event"
            assert len(sent) > len(before) or sent == before


@EXAMPLES
@given(steps=st.lists(STEP, min_size=2, max_size=24), trigger=st.integers(900, 4_000))
def test_a_receipt_once_shown_stays_until_a_summary_folds_it(steps, trigger):
    calls, _state = _drive(steps, trigger)
    shown: dict[str, str] = {}  # tool message id -> the receipt it went out as
    for sent, _event in calls:
        summary = bool(sent) and "summar" in str(sent[0].content)[:200].lower()
        if summary:
            shown = {k: v for k, v in shown.items() if any(m.id == k for m in sent)}
        for message in sent:
            if isinstance(message, ToolMessage) and message.id in shown:
                assert message.content == shown[message.id], "a receipt was re-rendered or reverted"
            if isinstance(message, ToolMessage) and RECEIPT_HEADER in str(message.content):
                shown.setdefault(message.id or "", str(message.content))


def test_below_the_trigger_nothing_is_compacted_and_no_horizon_is_written():
    steps = [("tool", 3_000, "web_search"), ("ask", 50, ""), ("tool", 3_000, "run_tests")]
    calls, state = _drive(steps, trigger=1_000_000)
    assert not any(event for _, event in calls) and COMPACTION_HORIZON_KEY not in state
    assert not any(RECEIPT_HEADER in str(m.content) for m in calls[-1][0])


def test_events_happen_only_at_the_trigger():
    steps = [("tool", 4_000, "web_search")] * 6 + [("ask", 30, "")] * 6
    mw = mw_for(mw_config(2_000, keep=4, limit=100))
    calls, _state = _drive(steps, trigger=2_000)
    sizes = []
    messages: list[BaseMessage] = [HumanMessage(content="Start the task.", id="h-start")]
    for index, (kind, size, tool) in enumerate(steps):
        messages = [*messages, *_incoming(index, kind, size, tool)]
        sizes.append(request_size(mw, make_request(messages)))
    first = next(i for i, (_, event) in enumerate(calls) if event)
    assert sizes[first] >= 2_000 and all(size < 2_000 for size in sizes[:first])
    # After the first event the requests only grow at their end until the next one.
    assert sum(event for _, event in calls) < len(calls) - first


def test_the_low_water_count_compacts_only_as_far_as_needed():
    compacted, arrival = [10, 10, 10, 10], [50, 50, 50, 50]
    # base 0: all arrival = 200; each message compacted saves 40.
    assert low_water_count(compacted, arrival, start=0, limit=4, base=0, target=130) == 2
    assert low_water_count(compacted, arrival, start=0, limit=4, base=0, target=200) == 0
    assert low_water_count(compacted, arrival, start=0, limit=4, base=0, target=10) == 4
    assert low_water_count(compacted, arrival[1:], start=1, limit=4, base=0, target=100) == 3


def test_a_stored_horizon_counts_only_for_its_own_summary():
    stored = {"count": 3, "cutoff": 5, "pinned": ["a"], "lean": True}
    horizon = read_horizon(stored, cutoff=5, length=10)
    assert horizon is not None and horizon.count == 3 and horizon.pinned == {"a"} and horizon.lean
    assert read_horizon(stored, cutoff=None, length=10) is None  # another summary (undo, manual)
    assert read_horizon(stored, cutoff=5, length=2) is None  # messages gone (an edit)
    assert read_horizon({"count": True, "cutoff": 5}, cutoff=5, length=10) is None
    assert read_horizon(None, cutoff=None, length=10) is None


def test_a_receipt_made_at_once_below_t_is_reported_once_and_keeps_the_prefix():
    """After the first event, a new large result goes out as a receipt in its first request: one card
    reports its file; the next request, with nothing new to save, reports nothing."""
    steps = [("tool", 4_000, "web_search")] * 3 + [
        ("tool", 4_000, "run_tests"),
        ("ask", 20, ""),
        ("ask", 20, ""),
    ]
    calls, _state = _drive(steps, trigger=2_500)
    cards = _drive.cards  # type: ignore[attr-defined]
    first = next(i for i, (_, event) in enumerate(calls) if event)
    later = [i for i in range(first + 1, len(calls)) if not calls[i][1]]
    assert later, "no call below T after the first event"
    reported = [i for i in later if any(e.get("status") == "completed" for e in cards[i])]
    assert reported == [i for i in later if steps[i][0] == "tool"]  # a new large result each, and only
    for i in reported:
        [completed] = [e for e in cards[i] if e.get("status") == "completed"]
        assert len(completed["saved_files"]) == 1 and completed["level"] == "compaction"
    for i in later:
        before, sent = calls[i - 1][0], calls[i][0]
        assert sent[: len(before)] == before

"""Per-message stored estimates (issue 16, item 1): a message carries its estimate; every later
estimate, in any process, reads it instead of the text."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from context_engine.compaction import tool_results as compaction
from context_engine.compaction.arguments import truncate_tool_call_args
from context_engine.compaction.tool_results import compact_messages
from context_engine.config import CompressionConfig
from context_engine.store import MemoryStore
from context_engine.tokens import messages as tokens
from context_engine.tokens.messages import (
    ESTIMATE_KEY,
    ESTIMATOR_NAME,
    PROFILES,
    estimate_message,
    stored_estimate,
    with_estimate,
)

CL100K, QWEN = PROFILES["cl100k"], PROFILES["qwen"]
TEXT = "The quarterly report shows revenue up 12% on the year, driven by the APAC region. " * 20


@pytest.fixture
def computed(monkeypatch):
    """The messages whose estimate was computed from their text (not read from a stored one)."""
    tokens.clear_cache()
    calls: list[object] = []
    real = tokens._estimate_message_uncached

    def counting(message, profile, *args):
        calls.append(message)
        return real(message, profile, *args)

    monkeypatch.setattr(tokens, "_estimate_message_uncached", counting)
    yield calls
    tokens.clear_cache()


def test_a_stored_estimate_is_read_instead_of_the_text(computed):
    message = with_estimate(HumanMessage(content=TEXT, id="m1"), CL100K)
    assert len(computed) == 1
    record = message.response_metadata[ESTIMATE_KEY]
    assert record == {
        "tokens": record["tokens"],
        "profile": "cl100k",
        "estimator": ESTIMATOR_NAME,
        "chars": len(TEXT),
    }
    tokens.clear_cache()  # a fresh process: nothing cached
    assert estimate_message(message, CL100K) == record["tokens"]
    assert len(computed) == 1


def test_the_message_is_otherwise_unchanged():
    original = AIMessage(
        content=TEXT, id="a1", response_metadata={"model_name": "m", "finish_reason": "stop"}
    )
    stored = with_estimate(original, CL100K)
    assert stored.model_dump(exclude={"response_metadata"}) == original.model_dump(
        exclude={"response_metadata"}
    )
    assert {
        k: v for k, v in stored.response_metadata.items() if k != ESTIMATE_KEY
    } == original.response_metadata
    assert with_estimate(stored, CL100K) is stored  # already carries it: no copy


def test_it_survives_the_checkpoint_serializer(computed):
    serde = JsonPlusSerializer()
    message = with_estimate(ToolMessage(content=TEXT, tool_call_id="c1", name="query_kb", id="t1"), CL100K)
    loaded = serde.loads_typed(serde.dumps_typed([message]))[0]
    computed.clear()
    tokens.clear_cache()
    assert estimate_message(loaded, CL100K) == message.response_metadata[ESTIMATE_KEY]["tokens"]
    assert computed == []


def test_another_profile_a_new_estimator_or_new_content_recomputes(computed, monkeypatch):
    message = with_estimate(HumanMessage(content=TEXT, id="m1"), CL100K)
    assert stored_estimate(message, QWEN) is None
    changed = message.model_copy(update={"content": TEXT + " And one more sentence."})
    assert stored_estimate(changed, CL100K) is None
    assert estimate_message(changed, CL100K) > message.response_metadata[ESTIMATE_KEY]["tokens"]
    monkeypatch.setattr(tokens, "ESTIMATOR_NAME", "script-aware-v99")
    assert stored_estimate(message, CL100K) is None


def test_messages_without_a_stored_estimate_still_work(computed):
    plain = HumanMessage(content=TEXT, id="old")
    assert stored_estimate(plain, CL100K) is None
    assert estimate_message(plain, CL100K) == estimate_message(with_estimate(plain, CL100K), CL100K)


def test_a_receipt_does_not_inherit_the_estimate_of_the_output_it_replaces():
    call = AIMessage(content="", tool_calls=[{"name": "query_kb", "args": {"q": "x"}, "id": "c1"}], id="a1")
    result = with_estimate(ToolMessage(content=TEXT * 3, tool_call_id="c1", name="query_kb", id="t1"), CL100K)
    config = CompressionConfig(trigger_tokens=1, tool_result_token_limit=50)
    view = compact_messages([call, result], config=config, store=MemoryStore(), profile=CL100K).messages
    receipt = view[1]
    assert receipt.content != result.content and ESTIMATE_KEY not in receipt.response_metadata
    assert estimate_message(receipt, CL100K) < estimate_message(result, CL100K)


def test_truncated_tool_call_arguments_drop_the_stored_estimate():
    call = with_estimate(
        AIMessage(
            content="", tool_calls=[{"name": "write_file", "args": {"content": "x" * 5000}, "id": "c1"}]
        ),
        CL100K,
    )
    truncated, count = truncate_tool_call_args(call, max_length=100)
    assert count == 1 and ESTIMATE_KEY not in truncated.response_metadata
    assert estimate_message(truncated, CL100K) < call.response_metadata[ESTIMATE_KEY]["tokens"]


def test_compaction_decides_on_the_stored_text_estimate_without_reading_the_text(monkeypatch):
    call = AIMessage(content="", tool_calls=[{"name": "query_kb", "args": {"q": "x"}, "id": "c1"}], id="a1")
    small = ToolMessage(content="three short words", tool_call_id="c1", name="query_kb", id="t1")
    stored = with_estimate(small, CL100K)
    assert stored.response_metadata[ESTIMATE_KEY]["text"] == tokens.estimate_text(small.content, CL100K)
    config = CompressionConfig(trigger_tokens=1, tool_result_token_limit=50)
    # The stored figure is what counts: one that says "large" gets the result offloaded.
    record = {**stored.response_metadata[ESTIMATE_KEY], "text": 10_000}
    marked = stored.model_copy(update={"response_metadata": {ESTIMATE_KEY: record}})
    texts: list[str] = []
    real = tokens.estimate_text
    monkeypatch.setattr(
        "context_engine.compaction.tool_results.estimate_text",
        lambda t, p=None: texts.append(t) or real(t, p),
    )
    tokens.clear_cache()
    compaction.clear_caches()
    kept = compact_messages([call, stored], config=config, store=MemoryStore(), profile=CL100K)
    assert kept.saved == () and texts == []
    offloaded = compact_messages([call, marked], config=config, store=MemoryStore(), profile=CL100K)
    assert [r.tool_call_id for r in offloaded.saved] == ["c1"]

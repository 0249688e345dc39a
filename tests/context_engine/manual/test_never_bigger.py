"""A compression never makes the request bigger (issue 24 invariant 2): over generated conversations
and summaries of any size, a forced compression either folds into a smaller request, or applies
nothing (``no_op``, reason ``summary_not_smaller``) and writes no history, only the billed call."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_engine.config import CompressionConfig
from context_engine.manual.apply import REASON_NOT_SMALLER, STATUS_COMPLETED, STATUS_NO_OP, force_summarize
from context_engine.state import SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY
from context_engine.steps import run_sync
from context_engine.store import MemoryStore
from context_engine.summary.history import effective_messages
from context_engine.tokens.messages import DEFAULT_PROFILE, messages_tokens
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _compress(messages, summary: str, store: MemoryStore):
    config = CompressionConfig(trigger_tokens=4096, keep_messages=4, tool_result_token_limit=50)
    return run_sync(
        force_summarize({"messages": messages}, config=config, store=store, profile=DEFAULT_PROFILE, now=NOW),
        handler=lambda request: None,
        summary_model=ScriptedChatModel(summaries=[summary]),
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.integers(min_value=2, max_value=6),
    result_chars=st.integers(min_value=0, max_value=3000),
    summary_words=st.integers(min_value=1, max_value=2500),
)
def test_a_forced_compression_never_makes_the_request_bigger(turns, result_chars, summary_words):
    messages = conversation_messages(turns, big_result_chars=result_chars)
    store = MemoryStore()
    before = messages_tokens(messages, DEFAULT_PROFILE)

    result = _compress(messages, "## SESSION INTENT\n" + "detail " * summary_words, store)

    if result.status == STATUS_COMPLETED:
        visible = effective_messages(messages, result.update[SUMMARY_EVENT_KEY])
        assert messages_tokens(visible, DEFAULT_PROFILE) < before
        assert result.after_tokens < result.before_tokens
    else:
        assert result.status == STATUS_NO_OP and result.after_tokens == result.before_tokens
        if result.reason == REASON_NOT_SMALLER:
            assert set(result.update) == {SUMMARY_CALLS_KEY}  # the billed call, nothing else
            assert result.reason_detail["tokens"] >= result.reason_detail["folded"]
            assert not [p for p in store.files if p.startswith("outputs/conversation_history/")]


def test_a_summary_longer_than_what_it_folds_is_not_applied():
    store = MemoryStore()
    result = _compress(
        conversation_messages(3, big_result_chars=0),
        "## SESSION INTENT\n"
        + " ".join(f"Question {n}: document {n} is about compression." for n in range(400)),
        store,
    )
    assert result.status == STATUS_NO_OP and result.reason == REASON_NOT_SMALLER
    assert result.outcome == "no_change_needed" and result.reason_detail["code"] == "summary_not_smaller"
    assert len(result.update[SUMMARY_CALLS_KEY]) == 1

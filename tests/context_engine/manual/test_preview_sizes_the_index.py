"""The preview sizes the reference index that will follow the summary (issue 25): deterministic, so it
is built, not guessed, as if the summary kept none of the folded identifiers; with the summary's size
known (a summary history that fits it), the previewed size after matches the applied one closely."""

from __future__ import annotations

from datetime import UTC, datetime

from context_engine.config import CompressionConfig
from context_engine.manual.apply import force_summarize
from context_engine.manual.preview import fold_preview
from context_engine.policy.trigger import tail_cap
from context_engine.steps import run_sync
from context_engine.store import MemoryStore, StagedStore
from context_engine.summary.fold_plan import plan_fold
from context_engine.summary.indexing import preview_index_tokens
from context_engine.tokens.messages import DEFAULT_PROFILE, messages_tokens
from tests.context_engine.chats import SUMMARY, conversation_messages
from tests.context_engine.fakes import ScriptedChatModel


def _plan(values, config, store):
    return plan_fold(
        values,
        config=config,
        store=StagedStore(store),
        profile=DEFAULT_PROFILE,
        max_tail_tokens=tail_cap(config),
    )


def test_the_previewed_size_after_counts_the_index_the_summary_will_carry():
    values = {"messages": conversation_messages(6)}
    config = CompressionConfig(trigger_tokens=20_000, keep_messages=4)
    store = MemoryStore()
    plan = _plan(values, config, store)
    folded = messages_tokens(plan.split.folded, DEFAULT_PROFILE)
    applied = run_sync(
        force_summarize(values, config=config, store=store, profile=DEFAULT_PROFILE, now=datetime.now(UTC)),
        handler=lambda request: None,
        summary_model=ScriptedChatModel(summaries=[SUMMARY]),  # keeps none of the folded identifiers
    )
    assert applied.status == "completed"
    # With this summary's own size on record, the only unknown left is the index: built, not guessed.
    history = [(applied.folded_tokens, applied.summary_tokens)] * 5
    fresh = _plan(values, config, MemoryStore())  # the thread as it was before that summary
    preview = fold_preview(fresh, preview_id="p", summary_history=history)
    index = preview_index_tokens(fresh, summary_tokens=preview.summary_estimate_tokens, folded_tokens=folded)
    assert index == preview.index_tokens > 0
    assert preview.estimated_after_tokens == preview.summary_estimate_tokens + preview.tail_tokens + index
    assert abs(preview.estimated_after_tokens - applied.after_tokens) <= 0.02 * applied.after_tokens
    off = CompressionConfig(trigger_tokens=20_000, keep_messages=4, index_percent=0)
    assert (
        preview_index_tokens(_plan(values, off, MemoryStore()), summary_tokens=100, folded_tokens=folded) == 0
    )

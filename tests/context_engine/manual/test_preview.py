"""The preview's pure core: the plan applying it would follow, nothing written, and a fingerprint that
changes with anything the fold depends on."""

from __future__ import annotations

from dataclasses import replace

from langchain_core.messages import HumanMessage

from context_engine.config import CompressionConfig
from context_engine.manual.preview import fold_preview, preview_fingerprint
from context_engine.store import MemoryStore, StagedStore
from context_engine.summary.fold_plan import plan_fold, receipt_paths
from context_engine.tokens.messages import DEFAULT_PROFILE
from tests.context_engine.chats import conversation_messages

CONFIG = CompressionConfig(trigger_tokens=4096, keep_messages=4, tool_result_token_limit=50)


def _plan(values, store, pinned=()):
    return plan_fold(
        values,
        config=CONFIG,
        store=StagedStore(store),
        profile=DEFAULT_PROFILE,
        pinned_ids=pinned,
        max_tail_tokens=CONFIG.trigger_tokens // 2,
    )


def test_preview_lists_folded_kept_and_pinned_and_writes_nothing():
    store = MemoryStore()
    messages = [
        HumanMessage("Keep ticket OPS-4711 in mind.", id="pin"),
        *conversation_messages(4, big_result_chars=800),
    ]
    plan = _plan({"messages": messages}, store, pinned=["pin", "t1"])
    preview = fold_preview(plan, preview_id="p")

    assert preview.foldable
    assert preview.pinned_ids == ("pin", "a1", "t1")
    assert preview.tail_ids == ("h3", "a3", "t3", "r3")
    assert "pin" not in preview.folded_ids and "h0" in preview.folded_ids
    assert (
        preview.estimated_after_tokens
        == preview.summary_estimate_tokens
        + preview.index_tokens
        + preview.pinned_tokens
        + preview.tail_tokens
    )
    assert preview.estimated_after_tokens < preview.before_tokens
    # The URL of a folded tool result is in its saved file (staged, never written), but nothing left in
    # view names that file: it is at risk (only the history file, two reads away, holds it).
    assert preview.identifiers_total > 0
    assert "https://example.com/doc/0" in preview.at_risk
    assert preview.identifiers_in_saved_files == 0
    assert not any(v.startswith("outputs/large_tool_results/") for v in preview.at_risk)  # receipt frames
    assert store.files == {}


def test_a_folded_saved_file_that_a_kept_message_names_is_one_read_away():
    store = MemoryStore()
    messages = conversation_messages(4, big_result_chars=3000)  # big enough that a receipt is smaller
    saved = receipt_paths(_plan({"messages": messages}, store).split.folded)
    assert saved
    named = [*messages, HumanMessage(f"Look again at {saved[0]}.", id="again")]
    preview = fold_preview(_plan({"messages": named}, store), preview_id="p")
    assert preview.identifiers_in_saved_files >= 1
    assert "https://example.com/doc/0" not in preview.at_risk


def test_nothing_to_fold_gives_a_preview_that_says_so():
    plan = _plan({"messages": conversation_messages(1)}, MemoryStore())
    preview = fold_preview(plan, preview_id="p")
    assert not preview.foldable and preview.estimated_after_tokens == preview.before_tokens


def test_the_fingerprint_changes_with_messages_pins_settings_summary_and_transcript():
    messages = conversation_messages(3)
    values = {"messages": messages}
    base = preview_fingerprint(values, config=CONFIG, pinned_ids=[], transcript_marker=12)
    assert base == preview_fingerprint(
        {"messages": list(messages)}, config=CONFIG, pinned_ids=[], transcript_marker=12
    )
    changed = [
        preview_fingerprint(
            {"messages": [*messages, HumanMessage("more", id="x")]},
            config=CONFIG,
            pinned_ids=[],
            transcript_marker=12,
        ),
        preview_fingerprint(values, config=CONFIG, pinned_ids=["h0"], transcript_marker=12),
        preview_fingerprint(
            values, config=replace(CONFIG, keep_messages=5), pinned_ids=[], transcript_marker=12
        ),
        preview_fingerprint(values, config=CONFIG, pinned_ids=[], transcript_marker=13),
        preview_fingerprint(
            {"messages": [*messages[:-1], messages[-1].model_copy(update={"content": "edited"})]},
            config=CONFIG,
            pinned_ids=[],
            transcript_marker=12,
        ),
    ]
    assert base not in changed and len(set(changed)) == len(changed)

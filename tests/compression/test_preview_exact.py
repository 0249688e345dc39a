"""Issue 24: with the offline model as the summarizer (local code, no provider), the preview computes the
summary instead of estimating it, so its size after is the size the compression then applies. Property
over generated threads, first and second summaries, equal to the token. The one input the preview
cannot know is the session id a thread's first summary names (the history file's name, drawn when it
is applied): the preview names a stand-in of the same shape, and every id of that shape has the same
token estimate (``new_session_id``)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agent_platform.runtime.offline import OfflineChatModel
from context_engine.config import CompressionConfig
from context_engine.manual.apply import force_summarize
from context_engine.manual.exact_size import sized_preview
from context_engine.manual.preview import fold_preview, forced_plan
from context_engine.steps import run_sync
from context_engine.store import MemoryStore, StagedStore
from context_engine.summary.history import new_session_id
from context_engine.summary.indexing import stand_in_session_id
from context_engine.tokens.messages import DEFAULT_PROFILE, estimate_text

WORDS = "the index keeps every path and url the summary drops so nothing folded is out of reach".split()


def generated_thread(seed: int) -> list[BaseMessage]:
    """A thread of varied turns: plain questions and answers, tool calls with results of every size
    (some offloaded behind receipts), identifiers (URLs, paths, ids) the index and the summary pick up."""
    rng = random.Random(seed)
    messages: list[BaseMessage] = []
    for n in range(rng.randint(6, 24)):

        def text(low: int, high: int) -> str:
            return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))

        ask = text(4, 40)
        if rng.random() < 0.4:
            ask += f" Please read docs/spec_{rng.randint(1, 99)}.md and keep ISSUE-{rng.randint(100, 999)}."
        messages.append(HumanMessage(ask, id=f"h{n}"))
        if rng.random() < 0.6:
            call = f"call_{n}"
            tool = rng.choice(["query_kb", "web_search", "read_file"])
            messages.append(
                AIMessage("", id=f"a{n}", tool_calls=[{"id": call, "name": tool, "args": {"q": text(1, 6)}}])
            )
            body = f"https://example.com/{rng.randint(1, 10**6)}/r{n} " + text(
                20, rng.choice([80, 400, 3000])
            )
            messages.append(ToolMessage(body, tool_call_id=call, name=tool, id=f"t{n}"))
        messages.append(AIMessage(text(5, 120), id=f"r{n}"))
    return messages


def _sizer():
    model = OfflineChatModel()
    return lambda prompt: model.reply([HumanMessage(prompt)])


def _preview_and_apply(values, config, store):
    plan = forced_plan(values, config=config, store=StagedStore(store), profile=DEFAULT_PROFILE)
    estimate = fold_preview(plan, preview_id="p")
    files, writes = dict(store.files), store.writes
    preview = sized_preview(
        estimate, values, sizer=_sizer(), config=config, store=store, profile=DEFAULT_PROFILE
    )
    assert store.files == files and store.writes == writes  # the preview wrote nothing
    applied = run_sync(
        force_summarize(values, config=config, store=store, profile=DEFAULT_PROFILE, now=datetime.now(UTC)),
        handler=lambda request: None,
        summary_model=OfflineChatModel(),
    )
    return estimate, preview, applied


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    keep=st.integers(2, 8),
    repair=st.booleans(),
    index_percent=st.sampled_from([0, 10, 30]),
)
def test_the_offline_preview_is_the_size_the_compression_applies(seed, keep, repair, index_percent):
    messages = generated_thread(seed)
    config = CompressionConfig(
        trigger_tokens=6000, keep_messages=keep, repair_pass=repair, index_percent=index_percent
    )
    store = MemoryStore()
    values: dict = {"messages": messages[: len(messages) // 2]}
    for round_ in (1, 2):
        if round_ == 2:
            values = {**values, "messages": messages}
        estimate, preview, applied = _preview_and_apply(values, config, store)
        if not estimate.foldable:
            assert preview == estimate
            continue
        assert preview.estimate_exact and not preview.estimate_unsure
        assert preview.estimated_after_range == (preview.estimated_after_tokens,) * 2
        if applied.status != "completed":  # a summary not smaller: nothing applied, the size stays
            assert applied.reason == "summary_not_smaller"
            assert preview.estimated_after_tokens == preview.before_tokens == applied.after_tokens
            continue
        assert preview.estimated_after_tokens == applied.after_tokens
        assert preview.summary_estimate_tokens == applied.summary_tokens
        values = {**values, **applied.update}


def test_the_preview_writes_nothing_and_a_reply_that_is_no_summary_keeps_the_estimate():
    messages = generated_thread(7)
    config = CompressionConfig(trigger_tokens=6000, keep_messages=2)
    store = MemoryStore()
    values = {"messages": messages}
    plan = forced_plan(values, config=config, store=StagedStore(store), profile=DEFAULT_PROFILE)
    estimate = fold_preview(plan, preview_id="p")
    assert estimate.foldable
    sized = sized_preview(
        estimate, values, sizer=_sizer(), config=config, store=store, profile=DEFAULT_PROFILE
    )
    assert sized.estimate_exact and store.files == {}  # nothing saved, no history section appended
    refused = sized_preview(
        estimate,
        values,
        sizer=lambda prompt: AIMessage("I can't help with that."),
        config=config,
        store=store,
        profile=DEFAULT_PROFILE,
    )
    # A refused reply is replaced by the extractive summary (issue 37): sized exactly, still writing nothing.
    assert refused.estimate_exact and store.files == {}


def test_every_session_id_and_the_previews_stand_in_have_the_same_token_estimate():
    """What makes a first summary's preview exact: the name drawn at apply costs what the stand-in costs."""
    stand_in = stand_in_session_id(generated_thread(1))
    drawn = {new_session_id() for _ in range(2000)}
    assert len(drawn) == 2000 and all(len(i) == len(stand_in) for i in drawn)
    for profile_name in (None, "gpt-4o", "qwen2.5:7b", "claude-3-5-sonnet", "deepseek-chat"):
        from context_engine.tokens.messages import profile_for_model

        profile = profile_for_model(profile_name)
        sizes = {estimate_text(f"saved to outputs/conversation_history/{i}.md.", profile) for i in drawn}
        assert sizes == {estimate_text(f"saved to outputs/conversation_history/{stand_in}.md.", profile)}

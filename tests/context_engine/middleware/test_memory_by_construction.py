"""Memory is a summary by construction (issue 37 items 1 and 2) on the automatic path: SmolLM2's answers
become the folded messages' extractive summary, labelled with the refusal; after repeated refusals the
breaker stops asking the model and goes extractive directly; and over any scripted answer, what becomes
memory is a validated model summary or a labelled extractive one, and the request never grows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_engine.config import BreakerLimits
from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.middleware import CompressionMiddleware
from context_engine.state import SUMMARY_EVENT_KEY, SUMMARY_REFUSALS_KEY
from context_engine.store import MemoryStore
from context_engine.summary.faithfulness import SummarySource, content_refusal
from context_engine.summary.history import summary_text
from context_engine.summary.reading import summary_body
from context_engine.summary.validation import DEFAULT_HEADINGS
from tests.context_engine.fakes import Handler, ScriptedChatModel, Verbatim, conversation, make_request
from tests.context_engine.middleware.support import history_files, mw_config, request_size
from tests.context_engine.summary.smollm2_replies import FAITHFUL, SMOLLM2_REPLIES

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _mw(model, *, now=NOW, store=None, **config):
    return CompressionMiddleware(
        config=mw_config(1000, keep=4, **config),
        store=store if store is not None else MemoryStore(),
        summary_model=model,
        now=lambda: now,
    )


def _run(mw, state=None):
    events = []
    request = make_request(conversation(6), events=events)
    if state:
        request = request.override(state={**request.state, **state})
    result = mw.wrap_model_call(request, Handler())
    return result.command.update, events[-1]


@pytest.mark.parametrize("name", list(SMOLLM2_REPLIES))
def test_a_smollm2_answer_becomes_the_labelled_extractive_summary(name):
    text, code = SMOLLM2_REPLIES[name]
    model = ScriptedChatModel(summaries=[Verbatim(text)])
    update, event = _run(_mw(model))
    memory = summary_body(update[SUMMARY_EVENT_KEY]["summary_message"].content)
    assert event["status"] == "completed" and event["loss_report"]["summary_kind"] == "extractive"
    # The fixtures were answered about another conversation: that alone refuses them too.
    assert event["loss_report"]["refusal"]["code"] in {code, "too_little_shared"}
    assert "Research the topic please." in memory and text[:200] not in memory
    assert [r["code"] for r in update[SUMMARY_REFUSALS_KEY]] == [event["loss_report"]["refusal"]["code"]]


def test_a_refused_answer_gets_one_repair_try_when_the_agent_allows_it():
    model = ScriptedChatModel(summaries=[Verbatim(SMOLLM2_REPLIES["template_echo"][0]), Verbatim(FAITHFUL)])
    _update, event = _run(_mw(model, repair_pass=True))
    assert len(model.summary_prompts) == 2 and "An earlier answer was refused" in model.summary_prompts[1]
    # FAITHFUL is about another conversation: refused again, so the extractive one stands.
    assert event["loss_report"]["summary_kind"] == "extractive"
    assert event["loss_report"]["refusal"]["code"] == "template_echo"


def test_repeated_refusals_pause_model_summaries_and_an_accepted_one_clears_them():
    limits = BreakerLimits(refusals=2, window_seconds=3600, cooldown_seconds=600)
    echo = Verbatim(SMOLLM2_REPLIES["template_echo"][0])
    state: dict = {}
    for minute in (0, 1):
        model = ScriptedChatModel(summaries=[echo])
        update, _ = _run(_mw(model, now=NOW + timedelta(minutes=minute), breaker=limits), state)
        state = {SUMMARY_REFUSALS_KEY: update[SUMMARY_REFUSALS_KEY]}
        assert len(model.summary_prompts) == 1
    paused = ScriptedChatModel(summaries=[echo])
    update, event = _run(_mw(paused, now=NOW + timedelta(minutes=5), breaker=limits), state)
    assert paused.summary_prompts == []  # nothing paid for
    assert event["loss_report"]["refusal"]["code"] == "summaries_paused"
    assert SUMMARY_REFUSALS_KEY not in update  # a pause adds no refusal
    later = ScriptedChatModel(summaries=["## SESSION INTENT\nResearch the topic."])
    update, event = _run(_mw(later, now=NOW + timedelta(minutes=12), breaker=limits), state)
    assert len(later.summary_prompts) == 1 and event["loss_report"]["summary_kind"] == "model"
    assert update[SUMMARY_REFUSALS_KEY] == []


_ANSWERS = st.one_of(
    st.sampled_from([text for text, _ in SMOLLM2_REPLIES.values()]),
    st.text(max_size=400).map(Verbatim),
    st.lists(
        st.sampled_from(["Research", "topic", "BEGIN-1", "END-2", "/srv/x.py", "word3", "None"]), max_size=30
    )
    .map(" ".join)
    .map(lambda body: "## SESSION INTENT\n" + body),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANSWERS)
def test_memory_is_a_validated_model_summary_or_a_labelled_extractive_one_and_never_bigger(answer):
    store = MemoryStore()
    messages = conversation(6)
    mw = _mw(ScriptedChatModel(summaries=[answer]), store=store)
    events = []
    request = make_request(messages, events=events)
    before = request_size(mw, request)
    handler = Handler()
    result = mw.wrap_model_call(request, handler)
    update = getattr(getattr(result, "command", None), "update", {}) or {}
    if SUMMARY_EVENT_KEY not in update:
        return
    assert request_size(mw, request.override(messages=handler.sent)) < before
    report = events[-1]["loss_report"]
    memory = summary_body(update[SUMMARY_EVENT_KEY]["summary_message"].content)
    memory = memory.split("\n\n[", 1)[0]  # the reference index after it is ours
    # What it summarizes: the folded messages as the history file holds them (receipts included).
    source = SummarySource([store.files[path] for path in history_files(store)])
    if report["summary_kind"] == "extractive":
        assert report["refusal"]["reason"]
        assert not source.invented(memory)
    else:
        refusal = content_refusal(
            summary_text(memory), prompt=DEFAULT_SUMMARY_PROMPT, required=DEFAULT_HEADINGS, source=source
        )
        assert refusal is None

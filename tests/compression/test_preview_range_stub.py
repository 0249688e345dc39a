"""Issue 24 for a provider's model: the preview cannot compute the summary (that is a provider call), so
it estimates it from the agent's earlier summaries and carries a range. Through the real OpenAI client
against the local OpenAI-protocol stub, whose summaries follow what they are sent (the extractive summary
of the prompt: sizes that vary with content, not a fixed length), the applied size lies inside the
range for at least 90% of the previews of a generated set of threads (first and second summaries), with
the agent's summary sizes accumulating as the service reads them from its records."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_openai import ChatOpenAI

from agent_platform.runtime.offline import extractive_summary
from context_engine.config import CompressionConfig
from context_engine.manual.apply import force_summarize
from context_engine.manual.preview import fold_preview, forced_plan
from context_engine.steps import run_sync
from context_engine.store import MemoryStore, StagedStore
from context_engine.tokens.messages import profile_for_model
from tests.compression.test_preview_exact import generated_thread
from tests.support.openai_stub import ScriptedReply

COVERAGE = 0.90
MODEL = "gpt-4o"


def test_the_applied_size_is_inside_the_previews_range_for_nine_in_ten(openai_stub):
    openai_stub.responder = lambda body: ScriptedReply(
        content=extractive_summary(body["messages"][-1]["content"])
    )
    model = ChatOpenAI(model=MODEL, base_url=openai_stub.base_url, api_key="stub", max_retries=0)
    config = CompressionConfig(trigger_tokens=6000, keep_messages=4, model_name=MODEL)
    profile = profile_for_model(MODEL)
    history: list[tuple[int, int]] = []
    inside: list[bool] = []
    for seed in range(30):
        messages = generated_thread(1000 + seed)
        store = MemoryStore()
        values: dict = {"messages": messages[: len(messages) // 2]}
        for round_ in (1, 2):
            if round_ == 2:
                values = {**values, "messages": messages}
            plan = forced_plan(values, config=config, store=StagedStore(store), profile=profile)
            sizes = [size for _, size in history[-20:]]  # the agent's recent mean, as the service's hint
            hint = round(sum(sizes) / len(sizes)) if sizes else None
            preview = fold_preview(plan, preview_id="p", summary_hint=hint, summary_history=history)
            if not preview.foldable:
                continue
            calls = len(openai_stub.requests)
            applied = run_sync(
                force_summarize(values, config=config, store=store, profile=profile, now=datetime.now(UTC)),
                handler=lambda request: None,
                summary_model=model,
            )
            assert len(openai_stub.requests) > calls  # the summary went through the client to the stub
            if applied.status != "completed":
                continue
            low, high = preview.estimated_after_range
            assert low <= preview.estimated_after_tokens <= high
            inside.append(low <= applied.after_tokens <= high)
            history.append((applied.folded_tokens, applied.summary_tokens))
            values = {**values, **applied.update}
    assert len(inside) >= 40
    assert sum(inside) / len(inside) >= COVERAGE, (sum(inside), len(inside))

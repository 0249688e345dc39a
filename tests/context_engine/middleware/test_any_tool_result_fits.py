"""Issue 37 item 3 at the engine level: any tool result fits. Whatever the window, the history before it
and the sizes of the fresh tool results (those the model has not answered yet), the request goes out
within the window by our raw estimate and no run fails. A request that reaches T is compressed, and then
a fresh result larger than its share (``CompressionConfig.fresh_result_cap``) goes out as a receipt in the same turn,
while a ``read_file`` page within its share goes out whole, so a saved file read back is never replaced
by a receipt of itself; below T a request goes out untouched."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from context_engine.compaction.receipts import parse_receipt
from context_engine.middleware import CompressionMiddleware
from context_engine.middleware.measure import request_overhead
from context_engine.store import MemoryStore
from context_engine.tokens.messages import estimate_text, messages_tokens
from tests.context_engine.fakes import Handler, ScriptedChatModel, conversation, make_request
from tests.context_engine.middleware.support import mw_config

EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LOG_LINE = "2024-05-01T12:00:01.123Z INFO [worker-3] request id=req-000123 path=/api/v1/items/77 status=200\n"


def _fresh(results: list[tuple[str, str]]) -> list[BaseMessage]:
    """One model turn calling each tool, and the results it has not answered yet."""
    calls = [
        {"name": name, "args": {"path": f"f{i}.log"}, "id": f"fresh_{i}"}
        for i, (name, _) in enumerate(results)
    ]
    return [
        AIMessage(content="", tool_calls=calls, id="ai-fresh"),
        *(
            ToolMessage(content=text, tool_call_id=f"fresh_{i}", name=name, id=f"tool-fresh-{i}")
            for i, (name, text) in enumerate(results)
        ),
    ]


@EXAMPLES
@given(
    window=st.integers(2_048, 32_000),
    turns=st.integers(0, 5),
    size=st.integers(100, 3_000),
    fresh=st.lists(
        st.tuples(st.sampled_from(["read_file", "web_search", "shell"]), st.floats(0.001, 3.0)),
        min_size=1,
        max_size=3,
    ),
)
def test_a_fresh_tool_result_of_any_size_fits_the_window_in_the_same_turn(window, turns, size, fresh):
    config = mw_config(int(window * 0.9), keep=4, limit=300, window=window)
    store = MemoryStore()
    mw = CompressionMiddleware(config=config, store=store, summary_model=ScriptedChatModel())
    # Each fresh result is a log of up to three times the window, by our estimate.
    line_tokens = estimate_text(LOG_LINE, mw.profile)
    results = [(name, LOG_LINE * max(int(ratio * window / line_tokens), 1)) for name, ratio in fresh]
    handler = Handler()
    asked = make_request([*conversation(turns, size=size), *_fresh(results)])
    compressed = (
        request_overhead(asked, mw.profile) + messages_tokens(asked.messages, mw.profile)
        >= config.trigger_tokens
    )

    mw.wrap_model_call(asked, handler)

    (request,) = handler.requests  # one call: no run fails because a tool result is large
    raw = request_overhead(request, mw.profile) + messages_tokens(request.messages, mw.profile)
    assert raw < window
    sent = {m.tool_call_id: m for m in request.messages if isinstance(m, ToolMessage)}
    kept = 0
    for i, (name, text) in enumerate(results):
        tokens = estimate_text(text, mw.profile)
        receipt = parse_receipt(sent[f"fresh_{i}"].content)
        if not compressed:  # below T a request goes out untouched: it fits as it is
            assert sent[f"fresh_{i}"].content == text
        elif tokens > config.fresh_result_cap or kept + tokens > config.fresh_batch_cap:
            assert receipt is not None and store.read_text(receipt.path) == text  # saved, then a receipt
        elif name == "read_file":
            assert sent[f"fresh_{i}"].content == text  # a page within its share reads back whole
            kept += tokens

"""Nothing leaves the view except into a file the model can name: the history section and the
summarizer's input carry every message's text verbatim (nothing escaped)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.summary.history import format_summary_prompt, render_history_section
from context_engine.summary.rendering import render_messages

_texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=200)
_messages = st.lists(
    st.one_of(
        _texts.map(HumanMessage),
        _texts.map(AIMessage),
        _texts.map(lambda t: ToolMessage(t, tool_call_id="c1", name="web_search")),
        st.tuples(_texts, _texts).map(
            lambda pair: AIMessage(
                pair[0], tool_calls=[{"id": "c1", "name": "web_search", "args": {"q": pair[1]}}]
            )
        ),
    ),
    min_size=1,
    max_size=6,
)


@given(_messages)
def test_every_messages_text_reaches_the_history_file_and_the_summarizer_verbatim(messages):
    section = render_history_section(messages, now=datetime(2026, 1, 1, tzinfo=UTC))
    prompt = format_summary_prompt(messages)
    for message in messages:
        assert message.text in section and message.text in prompt
        for call in getattr(message, "tool_calls", []):  # arguments as the JSON the model wrote
            arguments = json.dumps(call["args"], ensure_ascii=False)
            assert arguments in section and arguments in prompt


def test_a_url_with_a_query_string_and_markup_stay_as_written():
    url = "https://example.com/search?q=redis&lang=en&page=2"
    rendered = render_messages(
        [
            HumanMessage(f"see {url} <b>& more</b>"),
            AIMessage("", tool_calls=[{"id": "c", "name": "f", "args": {"u": url}}]),
        ]
    )
    assert rendered == (
        f'<message type="human">see {url} <b>& more</b></message>\n'
        f'<message type="ai">\n  <tool_call id="c" name="f">{{"u": "{url}"}}</tool_call>\n</message>'
    )


def test_content_blocks_keep_text_and_media_urls_and_leave_out_inline_payloads():
    message = HumanMessage(
        [
            {"type": "text", "text": "a & b"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png?w=1&h=2"}},
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    )
    assert render_messages([message]) == (
        '<message type="human">a & b <image url="https://x.test/a.png?w=1&h=2" /></message>'
    )

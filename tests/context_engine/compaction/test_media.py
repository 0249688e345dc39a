"""Inline media saved to outputs/media/ and replaced by receipts (engine, pure)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from context_engine.compaction.media import media_path, offload_media, offload_message_media
from context_engine.compaction.tool_results import compact_messages
from context_engine.config import CompressionConfig
from context_engine.errors import StoreError
from context_engine.formats import MEDIA_RECEIPT_TEMPLATE, MEDIA_SAVED_KEY
from context_engine.store import MemoryStore
from context_engine.tokens.messages import estimate_message, profile_for_model
from tests.context_engine.chats import as_summary

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
PDF = b"%PDF-1.4\n" + b"0123456789" * 300


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_media_receipt_format_is_pinned():
    assert MEDIA_RECEIPT_TEMPLATE == "[Media saved: {path} | {mime_type} | {size} bytes | SHA-256 {sha256}]"
    assert media_path("image/png", "ab" * 32) == "outputs/media/abababababababab.png"
    assert media_path("image/jpeg", "cd" * 32) == "outputs/media/cdcdcdcdcdcdcdcd.jpg"
    assert media_path("application/x-unknown-thing", "ef" * 32).startswith("outputs/media/efefefefefefefef.")


def test_data_uri_in_text_is_saved_byte_for_byte_and_replaced_by_a_receipt():
    store = MemoryStore()
    message = HumanMessage(f"look: data:image/png;base64,{b64(PNG)} and tell me", id="h1")
    new, saved, failed = offload_message_media(message, store=store)
    path = media_path("image/png", digest(PNG))
    assert failed == []
    assert store.blobs[path] == PNG
    assert new.content == (
        f"look: [Media saved: {path} | image/png | {len(PNG)} bytes | SHA-256 {digest(PNG)}] and tell me"
    )
    assert new.id == "h1" and new.additional_kwargs[MEDIA_SAVED_KEY] == [path]
    assert saved[0].sha256 == digest(PNG) and saved[0].size == len(PNG) and saved[0].written


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
        {"type": "image_url", "image_url": f"data:image/png;base64,{b64(PNG)}"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PNG)}"},
        {"type": "image", "base64": b64(PNG), "mime_type": "image/png"},
        {"type": "image", "source_type": "base64", "data": b64(PNG), "mime_type": "image/png"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
    ],
    ids=["openai-url-dict", "openai-url-str", "responses", "lc-v1", "lc-v0", "anthropic"],
)
def test_every_image_block_shape_is_saved_and_replaced_by_a_text_block(block):
    store = MemoryStore()
    message = HumanMessage(content=[{"type": "text", "text": "what is this?"}, block], id="h1")
    new, saved, _ = offload_message_media(message, store=store)
    assert [item.mime_type for item in saved] == ["image/png"]
    assert new.content[0] == {"type": "text", "text": "what is this?"}
    assert new.content[1]["type"] == "text" and "SHA-256 " + digest(PNG) in new.content[1]["text"]
    assert b64(PNG) not in str(new.content)
    assert store.blobs[saved[0].path] == PNG


def test_file_parts_in_a_tool_result_are_saved():
    store = MemoryStore()
    part = {
        "type": "file",
        "file": {"file_data": f"data:application/pdf;base64,{b64(PDF)}", "filename": "a.pdf"},
    }
    message = ToolMessage(content=[part], tool_call_id="c1", name="fetch", id="t1")
    new, saved, _ = offload_message_media(message, store=store)
    assert saved[0].path.endswith(".pdf") and store.blobs[saved[0].path] == PDF
    assert new.tool_call_id == "c1" and b64(PDF) not in str(new.content)


def test_identical_media_are_saved_once():
    store = MemoryStore()
    messages = [HumanMessage(f"data:image/png;base64,{b64(PNG)}", id=f"h{i}") for i in range(3)]
    result = offload_media(messages, store=store)
    assert len(store.blobs) == 1 and store.writes == 1
    assert [item.written for item in result.saved] == [True, False, False]


def test_a_payload_that_cannot_be_written_stays_inline_and_is_reported():
    class Broken(MemoryStore):
        def write_bytes(self, path, data):
            raise StoreError("disk full")

    message = HumanMessage(f"data:image/png;base64,{b64(PNG)}", id="h1")
    new, saved, failed = offload_message_media(message, store=Broken())
    assert new is message and saved == [] and "disk full" in failed[0].error


def test_text_that_only_mentions_base64_is_left_alone():
    store = MemoryStore()
    for text in (
        "use data:image/png;base64,AAAA here",
        "base64, not a data uri",
        "data:image/png;base64,%%%%",
    ):
        message = HumanMessage(text, id="h1")
        assert offload_message_media(message, store=store)[0] is message
    assert store.writes == 0


def _image_turn(data: bytes) -> list:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(data)}"}}
    return [
        HumanMessage(content=[{"type": "text", "text": "describe"}, image], id="h1"),
        AIMessage("A chart.", id="a1"),
    ]


def test_compaction_saves_media_the_model_has_answered_and_is_idempotent():
    store = MemoryStore()
    config = CompressionConfig(trigger_tokens=100_000, model_name="gpt-4o-mini")
    messages = [*_image_turn(PNG), HumanMessage("thanks", id="h2")]
    first = compact_messages(messages, config=config, store=store)
    assert first.changed and [item.sha256 for item in first.media] == [digest(PNG)]
    assert b64(PNG) not in str([m.content for m in first.messages])
    assert [m.id for m in first.messages] == ["h1", "a1", "h2"]
    second = compact_messages(first.messages, config=config, store=store)
    assert not second.changed and second.messages == first.messages
    assert store.writes == 1


def test_compaction_leaves_media_the_model_has_not_answered_yet():
    store = MemoryStore()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}}
    messages = [
        HumanMessage("hi", id="h0"),
        AIMessage("hello", id="a0"),
        HumanMessage(content=[image], id="h1"),
    ]
    result = compact_messages(
        messages, config=CompressionConfig(trigger_tokens=100_000, model_name="gpt-4o-mini"), store=store
    )
    assert result.media == () and result.messages[-1] is messages[-1]


def test_an_image_block_costs_the_profiles_image_cost_whatever_its_size():
    profile = profile_for_model("gpt-4o-mini")
    small = _image_turn(PNG[:200])[0]
    large = _image_turn(PNG * 50)[0]
    assert estimate_message(small, profile) == estimate_message(large, profile)
    assert estimate_message(large, profile) < profile.image + 50


def _drive_summary(messages, store):
    """Run the summary step with a fake summarizer; returns the prompt it was sent."""
    from datetime import UTC, datetime

    from context_engine.steps import Blocking, Summarize
    from context_engine.summary.call import Span, summarize_span

    config = CompressionConfig(trigger_tokens=100_000, model_name="gpt-4o-mini")
    span = Span(
        messages,
        state={},
        previous=None,
        local_cutoff=len(messages),
        budget=50_000,
        now=datetime(2026, 11, 30, tzinfo=UTC),
    )
    steps = summarize_span(span, config=config, store=store, profile=profile_for_model("gpt-4o-mini"))
    prompts, value = [], None
    try:
        while True:
            effect = steps.send(value)
            if isinstance(effect, Blocking):
                value = effect.fn()
            elif isinstance(effect, Summarize):
                prompts.append(effect.prompt)
                value = AIMessage(as_summary("## SESSION INTENT\nLook at a chart."))
    except StopIteration:
        return prompts


def test_the_summary_step_saves_media_first_so_neither_history_nor_prompt_holds_base64():
    store = MemoryStore()
    image = {"type": "image", "base64": b64(PNG), "mime_type": "image/png"}
    # Enough text around the image for a summary to be smaller than what it folds.
    text = "chart of the quarterly revenue by region, with notes. " * 40
    messages = [HumanMessage(content=[{"type": "text", "text": text}, image], id="h1")]  # never answered
    [prompt] = _drive_summary(messages, store)
    path = media_path("image/png", digest(PNG))
    assert "base64" not in prompt and b64(PNG)[:100] not in prompt and path in prompt
    [history] = [
        text for name, text in store.files.items() if name.startswith("outputs/conversation_history/")
    ]
    assert b64(PNG)[:100] not in history and path in history
    assert store.blobs[path] == PNG


def test_the_summary_step_fails_closed_when_media_cannot_be_saved():
    class Broken(MemoryStore):
        def write_bytes(self, path, data):
            raise StoreError("disk full")

    store = Broken()
    messages = [HumanMessage(f"data:image/png;base64,{b64(PNG)}", id="h1")]
    with pytest.raises(StoreError, match="disk full"):
        _drive_summary(messages, store)
    assert store.files == {}  # no history section written either


def test_media_of_names_the_saved_files_without_writing():
    from context_engine.compaction.media import media_of

    text = f"a data:image/png;base64,{b64(PNG)} b data:application/pdf;base64,{b64(PDF)}"
    found = media_of(text)
    assert [(m.path, m.size, m.sha256) for m in found] == [
        (media_path("image/png", digest(PNG)), len(PNG), digest(PNG)),
        (media_path("application/pdf", digest(PDF)), len(PDF), digest(PDF)),
    ]
    store = MemoryStore()
    offload_message_media(HumanMessage(text, id="h"), store=store)
    assert {m.path for m in found} == set(store.blobs)
    assert media_of("no media here") == [] and media_of([{"type": "text", "text": "x"}]) == []


# What follows the payload: its own line, a closing quote or bracket, or nothing (words on the payload's
# last line are taken for prose only after an unwrapped or padded payload: see the tests above).
_prose_after = st.sampled_from(["", "\n\nNext paragraph.", "\nWhat is it?", '")', "\n"])


@given(
    data=st.binary(min_size=60, max_size=3000),
    width=st.sampled_from([64, 76, 60, 72, 120]) | st.integers(16, 200).map(lambda w: w - w % 4),
    head=st.sampled_from(["data:image/png;base64,", "DATA:IMAGE/PNG;BASE64,", "data:image/png;Base64,\n"]),
    indent=st.sampled_from(["", "  ", "\t"]),
    after=_prose_after,
)
def test_a_data_uri_in_any_case_wrapped_at_any_width_is_saved_whole(data, width, head, indent, after):
    payload = b64(data)
    lines = [payload[i : i + width] for i in range(0, len(payload), width)]
    text = "look: " + head + f"\n{indent}".join(lines) + after
    store = MemoryStore()
    new, saved, failed = offload_message_media(HumanMessage(text, id="h"), store=store)
    path = media_path("image/png", digest(data))
    assert failed == [] and [item.path for item in saved] == [path]
    assert store.blobs[path] == data  # the whole payload, not its first line
    assert (
        new.content
        == f"look: {MEDIA_RECEIPT_TEMPLATE.format(path=path, mime_type='image/png', size=len(data), sha256=digest(data))}{after}"
    )


# --- URL-safe and bare base64 (issue 37 item 5) -------------------------------------------------------


def urlsafe(data: bytes, *, padded: bool = True) -> str:
    text = base64.urlsafe_b64encode(data).decode()
    return text if padded else text.rstrip("=")


@pytest.mark.parametrize("padded", [True, False])
def test_a_url_safe_data_uri_is_saved_byte_for_byte(padded):
    store = MemoryStore()
    payload = urlsafe(PNG, padded=padded)
    assert "-" in payload or "_" in payload  # it differs from the standard alphabet
    message = HumanMessage(f"the chart: data:image/png;base64,{payload} (from the dashboard)", id="h")
    new, saved, failed = offload_message_media(message, store=store)
    path = media_path("image/png", digest(PNG))
    assert not failed and [s.path for s in saved] == [path] and store.blobs[path] == PNG
    assert payload[:40] not in new.content and new.content.endswith(" (from the dashboard)")


@pytest.mark.parametrize(("data", "mime"), [(PNG, "image/png"), (PDF, "application/pdf")])
@pytest.mark.parametrize("encode", [b64, urlsafe])
def test_bare_base64_media_in_a_tool_result_is_saved(data, mime, encode):
    store = MemoryStore()
    result = f'{{"name": "report", "content": "{encode(data)}", "pages": 3}}'
    message = ToolMessage(result, tool_call_id="c1", id="t1")
    new, saved, _failed = offload_message_media(message, store=store)
    path = media_path(mime, digest(data))
    assert [s.path for s in saved] == [path] and store.blobs[path] == data
    assert encode(data)[:40] not in new.content and new.content.endswith('", "pages": 3}')


def test_long_base64_looking_text_that_is_not_media_stays_text():
    store = MemoryStore()
    tokens = [b64(bytes(range(200)) * 3), "a1b2c3d4" * 64, "x" * 400, urlsafe(b"plain words " * 60)]
    for text in tokens:
        message = HumanMessage(f"token: {text}", id="h")
        assert offload_message_media(message, store=store)[0] is message
    assert store.blobs == {}


def test_the_summary_step_saves_url_safe_and_bare_media_first():
    store = MemoryStore()
    text = "chart of the quarterly revenue by region, with notes. " * 40
    messages = [
        HumanMessage(f"{text} data:image/png;base64,{urlsafe(PNG, padded=False)}", id="h1"),
        HumanMessage(f"{text} the report as base64: {b64(PDF)}", id="h2"),
    ]
    [prompt] = _drive_summary(messages, store)
    assert urlsafe(PNG)[:100] not in prompt and b64(PDF)[:100] not in prompt
    assert (
        media_path("image/png", digest(PNG)) in prompt
        and media_path("application/pdf", digest(PDF)) in prompt
    )
    [history] = [t for name, t in store.files.items() if name.startswith("outputs/conversation_history/")]
    assert b64(PDF)[:100] not in history and urlsafe(PNG)[:100] not in history


def test_a_tool_result_saved_whole_is_its_original_bytes_even_when_its_media_were_saved_first():
    # An answered console result with an inline image (bare base64, as a terminal's image escape) and a
    # long text: the image goes to outputs/media/, and the result's file holds what the tool returned.
    original = "log line with details\n" * 400 + f"\x1b]1337;File=inline=1:{b64(PNG)}\x07\n" + "tail\n" * 50
    messages = [
        HumanMessage("run it", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": "console", "args": {}, "id": "c1"}]),
        ToolMessage(original, tool_call_id="c1", name="console", id="t1"),
        AIMessage("done", id="a2"),
    ]
    store = MemoryStore()
    result = compact_messages(messages, config=CompressionConfig(trigger_tokens=100_000), store=store)
    [saved] = result.saved
    assert store.files[saved.path] == original
    assert saved.sha256 == hashlib.sha256(original.encode()).hexdigest()
    assert b64(PNG)[:100] not in str(result.messages[2].content)  # the preview shows no base64

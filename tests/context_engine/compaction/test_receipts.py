"""The receipt format's one owner (``compaction.receipts``): what it renders it reads back, field for
field, over generated receipts; anything else is not a receipt."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from context_engine.compaction.receipts import Receipt, parse_receipt, receipt_preview, render_receipt
from context_engine.formats import RECEIPT_TRUNCATED_TEMPLATE

_names = st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), min_size=1, max_size=30)
_previews = st.text(max_size=400)


@given(
    tool_name=_names,
    tokens=st.integers(0, 10**7),
    sha256=st.text("0123456789abcdef", min_size=64, max_size=64),
    path=st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), min_size=1, max_size=80),
    preview=_previews,
    omitted_chars=st.integers(0, 10**6),
)
def test_a_rendered_receipt_parses_back_to_its_fields(
    tool_name, tokens, sha256, path, preview, omitted_chars
):
    # The one ambiguity of the format: a preview whose own last line reads as the truncation note.
    last = preview.split("\n")[-1]
    assume(not (omitted_chars == 0 and last.startswith(RECEIPT_TRUNCATED_TEMPLATE.split("{n}")[0])))
    text = render_receipt(
        tool_name=tool_name,
        tokens=tokens,
        sha256=sha256,
        path=path,
        preview=preview,
        omitted_chars=omitted_chars,
    )
    assert parse_receipt(text) == Receipt(tool_name, tokens, sha256, path, preview, omitted_chars)
    assert receipt_preview(text) == preview


@given(st.text(max_size=300))
def test_text_that_is_not_a_receipt_parses_to_none_and_previews_as_itself(text):
    assume(not text.startswith("[Tool result saved]"))
    assert parse_receipt(text) is None
    assert receipt_preview(text) == text


def test_a_receipt_needs_its_header_and_a_path_and_reads_its_frame_in_any_order():
    frame = "[Tool result saved]\nTool: x\nApprox tokens: 3\nSHA-256: ab\nFull output path: "
    assert parse_receipt(frame) is None
    assert parse_receipt(frame + "p") == Receipt("x", 3, "ab", "p")
    swapped = "[Tool result saved]\nApprox tokens: 3\nTool: x\nSHA-256: ab\nFull output path: p"
    assert parse_receipt(swapped) == Receipt("x", 3, "ab", "p")
    assert parse_receipt(swapped.replace("[Tool result saved]", "[Tool result]")) is None
    assert parse_receipt(None) is None

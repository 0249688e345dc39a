"""Golden tests: every byte format the model sees is pinned here, byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_core.messages import HumanMessage

from context_engine import formats
from context_engine.compaction.receipts import render_receipt
from context_engine.summary.history import build_summary_message, render_history_section


def test_receipt_line_constants_are_pinned():
    assert formats.RECEIPT_HEADER == "[Tool result saved]"
    assert formats.RECEIPT_TOOL_PREFIX == "Tool: "
    assert formats.RECEIPT_UNKNOWN_TOOL == "unknown"
    assert formats.RECEIPT_TOKENS_PREFIX == "Approx tokens: "
    assert formats.RECEIPT_SHA256_PREFIX == "SHA-256: "
    assert formats.RECEIPT_PATH_PREFIX == "Full output path: "
    assert formats.RECEIPT_PREVIEW_HEADER == "Output preview:"
    assert (
        formats.RECEIPT_TRUNCATED_TEMPLATE
        == "[Truncated {n} chars. Read the full output from the saved file.]"
    )
    assert formats.RECEIPT_LINE_SEPARATOR == "\n"


def test_argument_truncation_constants_are_pinned():
    assert formats.TRUNCATED_ARG_SUFFIX == "...(argument truncated for context view)"
    assert formats.TRUNCATED_ARG_KEEP_CHARS == 20
    assert formats.TRUNCATED_ARG_TOOLS == frozenset({"write_file", "edit_file"})
    assert formats.RECOVERY_TOOLS == frozenset({"read_file"})


def test_preview_labels_are_pinned():
    assert formats.PREVIEW_HEAD_LABEL == "[HEAD]\n"
    assert formats.PREVIEW_MIDDLE_LABEL == "\n\n[MIDDLE]\n"
    assert formats.PREVIEW_TAIL_LABEL == "\n\n[TAIL]\n"
    assert formats.PREVIEW_CLIP_ELLIPSIS == "…"
    assert formats.STRUCTURED_KIND_KB == "knowledge_base"
    assert formats.STRUCTURED_KIND_WEB == "web_search"


def test_paths_and_markers_are_pinned():
    assert formats.LARGE_TOOL_RESULTS_DIR == "outputs/large_tool_results"
    assert formats.CONVERSATION_HISTORY_DIR == "outputs/conversation_history"
    assert formats.TOOL_RESULT_FILE_TEMPLATE == "{directory}/{tool}-{digest}.txt"
    assert formats.TOOL_RESULT_DIGEST_CHARS == 16
    assert formats.FALLBACK_TOOL_FILE_NAME == "tool-result"
    assert formats.HISTORY_FILE_TEMPLATE == "{directory}/{session_id}.md"
    assert formats.SESSION_ID_PREFIX == "session_"
    assert formats.TOOL_RESULT_SAVED_KEY == "tool_result_saved"
    assert (formats.SUMMARY_MARKER_KEY, formats.SUMMARY_MARKER_VALUE) == ("lc_source", "summarization")


def test_full_receipt_is_pinned_byte_for_byte():
    receipt = render_receipt(
        tool_name="web_search",
        tokens=1234,
        sha256="a" * 64,
        path="outputs/large_tool_results/web_search-aaaaaaaaaaaaaaaa.txt",
        preview="[HEAD]\nhello",
        omitted_chars=42,
    )
    assert receipt == (
        "[Tool result saved]\n"
        "Tool: web_search\n"
        "Approx tokens: 1234\n"
        "SHA-256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
        "Full output path: outputs/large_tool_results/web_search-aaaaaaaaaaaaaaaa.txt\n"
        "\n"
        "Output preview:\n"
        "[HEAD]\nhello\n"
        "[Truncated 42 chars. Read the full output from the saved file.]"
    )


def test_receipt_without_preview_or_truncation_has_only_the_header_lines():
    receipt = render_receipt(tool_name=None, tokens=1, sha256="0" * 64, path="p", preview="", omitted_chars=0)
    assert (
        receipt
        == f"[Tool result saved]\nTool: unknown\nApprox tokens: 1\nSHA-256: {'0' * 64}\nFull output path: p"
    )


def test_summary_message_is_pinned_byte_for_byte():
    message = build_summary_message("S", file_path="outputs/conversation_history/session_x.md")
    assert message.content == (
        "You are in the middle of a conversation that has been summarized.\n\n"
        "The full conversation history has been saved to outputs/conversation_history/session_x.md "
        "should you need to refer back to it for details.\n\n"
        "A condensed summary follows:\n\n"
        "<summary>\nS\n</summary>"
    )
    assert message.additional_kwargs == {"lc_source": "summarization"}
    assert (
        formats.SUMMARY_MESSAGE_NO_FILE_TEMPLATE
        == "Here is a summary of the conversation to date:\n\n{summary}"
    )


def test_history_section_is_pinned_byte_for_byte():
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    section = render_history_section([HumanMessage("hi")], now=now)
    assert formats.HISTORY_SECTION_TEMPLATE == "## Summarized at {timestamp}\n\n{messages}\n\n"
    assert section == '## Summarized at 2026-01-02T03:04:05+00:00\n\n<message type="human">hi</message>\n\n'
    # Issue 24: the messages are framed by our own formats and carried verbatim (no XML escaping).
    assert formats.TRANSCRIPT_MESSAGE_TEMPLATE == '<message type="{role}">{content}</message>'
    assert formats.TRANSCRIPT_CALLS_TEMPLATE == '<message type="{role}">\n{parts}\n</message>'
    assert formats.TRANSCRIPT_CONTENT_TEMPLATE == "  <content>{content}</content>"
    assert formats.TRANSCRIPT_TOOL_CALL_TEMPLATE == '  <tool_call id="{id}" name="{name}">{args}</tool_call>'
    assert formats.TRANSCRIPT_MEDIA_TEMPLATE == '<{kind} {key}="{value}" />'
    assert formats.TRANSCRIPT_SEPARATOR == "\n"
    verbatim = render_history_section([HumanMessage("a?x=1&y=<2>")], now=now)
    assert (
        verbatim
        == '## Summarized at 2026-01-02T03:04:05+00:00\n\n<message type="human">a?x=1&y=<2></message>\n\n'
    )


def test_default_summary_prompt_has_the_required_headings_and_placeholder():
    prompt = formats.DEFAULT_SUMMARY_PROMPT
    for heading in (
        "## SESSION INTENT",
        "## USER REQUIREMENTS AND PREFERENCES",
        "## PROGRESS AND DECISIONS",
        "## ARTIFACTS AND REFERENCES",
        "## NEXT STEPS",
    ):
        assert heading in prompt
    assert "<messages>\n{messages}\n</messages>" in prompt
    assert prompt.format(messages="X").count("X") >= 1


def test_repair_and_drop_formats_are_pinned():
    assert formats.REPAIR_PROMPT_TEMPLATE == (
        "{prompt}\n\n"
        "An earlier summary of these messages left out the identifiers below. Keep every one of them "
        "verbatim in the summary (under ## ARTIFACTS AND REFERENCES when no other place fits):\n"
        "{identifiers}"
    )
    assert formats.REPAIR_IDENTIFIER_LINE == "- {identifier}"
    assert formats.REFUSED_REPAIR_TEMPLATE == (
        "{prompt}\n\n"
        "An earlier answer was refused: {reason}. Write the summary again from the messages above only: under "
        "each heading what they say (never the instructions), and no path, id, URL or number they do not contain."
    )
    assert formats.REPAIR_IDENTIFIERS_MAX == 40
    assert formats.DROPPED_NOTE_TEMPLATE == (
        "[{count} earlier messages were removed from this view to fit the model's context window, without "
        "a summary. They are saved in {file_path}; read that file for any detail you need.]"
    )
    assert formats.DROPPED_NOTE_AFTER_SUMMARY_TEMPLATE == "{summary}\n\n{note}"


def test_reference_index_format_is_pinned():
    path = "outputs/conversation_history/session_x.md"
    assert formats.REFERENCE_INDEX_HEADER == (
        "<reference_index>\n"
        "Identifiers from the summarized messages and their saved tool results that the summary leaves out, "
        'most used first. L<n> is a line of the file named above it: read_file("<file>:L<n>") opens it; '
        "search_history finds any text."
    )
    assert formats.REFERENCE_INDEX_FILE_LINE.format(path=path) == f"{path}:"
    assert formats.REFERENCE_INDEX_KIND_LINE.format(kind="url") == "url:"
    assert formats.REFERENCE_INDEX_ENTRY.format(value="PROJ-7", line=412) == "- PROJ-7 L412"
    assert formats.REFERENCE_INDEX_OMITTED.format(count=3) == (
        "3 more not listed here; search_history finds them. Lines holding most of them:"
    )
    assert (
        formats.REFERENCE_INDEX_OMITTED_RANGE.format(count=3, path=path, start=10, end=19, offset=9, limit=10)
        == f"- 3 in {path} lines 10-19 (one read_file: offset=9, limit=10)"
    )
    assert formats.REFERENCE_INDEX_FOOTER == "</reference_index>"
    assert formats.REFERENCE_INDEX_SEPARATOR == "\n\n"


def test_read_file_page_formats_are_pinned():
    assert formats.READ_ROW_TEMPLATE == "{label:>6}\t{text}"
    assert formats.READ_PART_LABEL == "{line}.{part}"
    assert formats.READ_MORE_TEMPLATE == (
        "(showing lines {first}-{last} of {total}; call read_file with offset={last} to read more)"
    )
    assert formats.READ_MORE_IN_LINE_TEMPLATE == (
        "(showing lines {first}-{last} of {total}; line {last} goes on: call read_file with "
        'path="{pointer}" to read more)'
    )
    assert formats.READ_ROW_TEMPLATE.format(label="412.3", text="x") == " 412.3\tx"

"""Byte formats the model sees: receipts, previews, summary message, history sections, the default prompt.

Every constant here is pinned by a golden test in tests/compression/test_formats.py.
"""

from __future__ import annotations

DEFAULT_SUMMARY_PROMPT = """You are the context-compression assistant of an agent platform. Rewrite the conversation below into \
the high-value context that an agent continuing this work needs, under exactly these headings:

## SESSION INTENT
What the user is trying to achieve in this session.

## USER REQUIREMENTS AND PREFERENCES
Constraints, requirements and preferences the user stated.

## PROGRESS AND DECISIONS
What has been done, what was found, and the decisions taken (with their reasons).

## ARTIFACTS AND REFERENCES
Concrete file paths, saved tool-output paths, ids, URLs and names, copied verbatim.

## NEXT STEPS
What remains to be done. Write None when there is nothing.

Rules: never repeat long tool output verbatim; never invent facts; record open risks and unanswered questions; \
write in the user's language.

<messages>
{messages}
</messages>

Output only the summary, with no extra commentary."""

# --- Paths (virtual, relative to the thread's workdir) -------------------------------------------

LARGE_TOOL_RESULTS_DIR = "outputs/large_tool_results"
CONVERSATION_HISTORY_DIR = "outputs/conversation_history"
TOOL_RESULT_FILE_TEMPLATE = "{directory}/{tool}-{digest}.txt"  # digest: sha256[:16]
TOOL_RESULT_DIGEST_CHARS = 16
FALLBACK_TOOL_FILE_NAME = "tool-result"
HISTORY_FILE_TEMPLATE = "{directory}/{session_id}.md"
SESSION_ID_PREFIX = "session_"

# --- Markers in message additional_kwargs ---------------------------------------------------------

TOOL_RESULT_SAVED_KEY = "tool_result_saved"  # value True on a receipt ToolMessage
SUMMARY_MARKER_KEY = "lc_source"
SUMMARY_MARKER_VALUE = "summarization"  # additional_kwargs={"lc_source": "summarization"}

# --- Tool-call argument truncation (write_file / edit_file) ---------------------------------------

TRUNCATED_ARG_TOOLS = frozenset({"write_file", "edit_file"})
# Tools that read saved content back: their unseen results are not replaced by another receipt within
# their share of the window (``CompressionConfig.fresh_result_cap``; read_file pages fit it).
RECOVERY_TOOLS = frozenset({"read_file"})
TRUNCATED_ARG_KEEP_CHARS = 20
TRUNCATED_ARG_SUFFIX = "...(argument truncated for context view)"

# --- read_file pages (sized to the agent's window: ``CompressionConfig.read_page_tokens``) ----------

READ_ROW_TEMPLATE = "{label:>6}\t{text}"  # label: the line number, or <line>.<part> for a continuation row
READ_PART_LABEL = "{line}.{part}"
READ_MORE_TEMPLATE = (
    "(showing lines {first}-{last} of {total}; call read_file with offset={last} to read more)"
)
READ_MORE_IN_LINE_TEMPLATE = (
    "(showing lines {first}-{last} of {total}; line {last} goes on: call read_file with "
    'path="{pointer}" to read more)'
)

# --- Receipt of a saved tool result ---------------------------------------------------------------

RECEIPT_HEADER = "[Tool result saved]"
RECEIPT_TOOL_PREFIX = "Tool: "
RECEIPT_UNKNOWN_TOOL = "unknown"
RECEIPT_TOKENS_PREFIX = "Approx tokens: "
RECEIPT_SHA256_PREFIX = "SHA-256: "
RECEIPT_PATH_PREFIX = "Full output path: "
RECEIPT_PREVIEW_HEADER = "Output preview:"
RECEIPT_TRUNCATED_TEMPLATE = "[Truncated {n} chars. Read the full output from the saved file.]"
RECEIPT_LINE_SEPARATOR = "\n"

# --- Previews ------------------------------------------------------------------------------------

PREVIEW_HEAD_LABEL = "[HEAD]\n"
PREVIEW_MIDDLE_LABEL = "\n\n[MIDDLE]\n"
PREVIEW_TAIL_LABEL = "\n\n[TAIL]\n"
PREVIEW_CLIP_ELLIPSIS = "\u2026"  # joins head and tail of a clipped string in structured previews
STRUCTURED_KIND_KB = "knowledge_base"
STRUCTURED_KIND_WEB = "web_search"

# --- Summary message and history file -------------------------------------------------------------

SUMMARY_MESSAGE_TEMPLATE = (
    "You are in the middle of a conversation that has been summarized.\n\n"
    "The full conversation history has been saved to {file_path} should you need to refer back to it "
    "for details.\n\n"
    "A condensed summary follows:\n\n"
    "<summary>\n{summary}\n</summary>"
)
SUMMARY_MESSAGE_NO_FILE_TEMPLATE = "Here is a summary of the conversation to date:\n\n{summary}"
HISTORY_SECTION_TEMPLATE = "## Summarized at {timestamp}\n\n{messages}\n\n"
# One message of a history section and of the summarizer's input: its text verbatim, nothing escaped
# (a URL's ``&`` stays ``&``); an AI message with tool calls nests its text and each call.
TRANSCRIPT_MESSAGE_TEMPLATE = '<message type="{role}">{content}</message>'
TRANSCRIPT_CALLS_TEMPLATE = '<message type="{role}">\n{parts}\n</message>'
TRANSCRIPT_CONTENT_TEMPLATE = "  <content>{content}</content>"
TRANSCRIPT_TOOL_CALL_TEMPLATE = '  <tool_call id="{id}" name="{name}">{args}</tool_call>'
TRANSCRIPT_MEDIA_TEMPLATE = '<{kind} {key}="{value}" />'  # a media block by URL or file id
TRANSCRIPT_SEPARATOR = "\n"

# --- Inline media saved to the workdir (data: URIs, base64 image/file/audio blocks) -----------------

MEDIA_DIR = "outputs/media"
MEDIA_FILE_TEMPLATE = "{directory}/{digest}.{ext}"  # digest: sha256[:16] of the decoded bytes
MEDIA_DIGEST_CHARS = 16
MEDIA_FALLBACK_EXT = "bin"
MEDIA_SAVED_KEY = "media_saved"  # additional_kwargs: the paths of the media saved from this message
MEDIA_RECEIPT_TEMPLATE = "[Media saved: {path} | {mime_type} | {size} bytes | SHA-256 {sha256}]"

# --- Attachments a user brought into a thread (uploads/) --------------------------------------------

UPLOADS_DIR = "uploads"
ATTACHMENT_FILE_TEMPLATE = "{directory}/{digest}-{name}"  # digest: sha256[:12] of the file's bytes
ATTACHMENT_DIGEST_CHARS = 12
ATTACHMENT_TEXT_SUFFIX = ".txt"  # text extracted from a PDF is saved beside it: <path>.txt
ATTACHMENT_INLINE_TEMPLATE = (
    '<attachment name="{name}" path="{path}" type="{mime_type}" size="{size}" sha256="{sha256}">\n'
    "{text}\n"
    "</attachment>"
)
ATTACHMENT_NOTE_TEMPLATE = (
    "[Attachment saved]\nName: {name}\nType: {mime_type}\nSize: {size} bytes\nSHA-256: {sha256}\nPath: {path}"
)
ATTACHMENT_READ_HINT = "Read the full text with read_file: {text_path}"
ATTACHMENT_PREVIEW_HEADER = "Preview:"
ATTACHMENT_NO_VISION_HINT = "This model cannot see images; only the file's details are shown."
ATTACHMENT_IMAGE_LABEL = "Attached image {name} ({mime_type}, {size} bytes, saved at {path}):"

# --- Pinned messages, loss repair, spend guard (issue 14) -----------------------------------------

# Appended to the filled summary prompt for the single repair pass, one identifier per line.
REPAIR_PROMPT_TEMPLATE = (
    "{prompt}\n\n"
    "An earlier summary of these messages left out the identifiers below. Keep every one of them "
    "verbatim in the summary (under ## ARTIFACTS AND REFERENCES when no other place fits):\n"
    "{identifiers}"
)
REPAIR_IDENTIFIER_LINE = "- {identifier}"
REPAIR_IDENTIFIERS_MAX = 40
# Appended to the filled summary prompt for the single repair pass after a refused answer (issue 37).
REFUSED_REPAIR_TEMPLATE = (
    "{prompt}\n\n"
    "An earlier answer was refused: {reason}. Write the summary again from the messages above only: under "
    "each heading what they say (never the instructions), and no path, id, URL or number they do not contain."
)
# The model-visible note that stands for messages the spend guard dropped from view (no model call):
# it keeps the earlier summary, when there was one, ahead of the note.
DROPPED_NOTE_TEMPLATE = (
    "[{count} earlier messages were removed from this view to fit the model's context window, without "
    "a summary. They are saved in {file_path}; read that file for any detail you need.]"
)
DROPPED_NOTE_AFTER_SUMMARY_TEMPLATE = "{summary}\n\n{note}"

# --- Reference index after a summary (issue 25) -----------------------------------------------------

# Appended to the summary message: the folded identifiers the summary and the kept messages lack, each
# with the line of the history file (or of a saved tool result) where it was last seen
# (``context_engine.summary.reference_index``).
REFERENCE_INDEX_HEADER = (
    "<reference_index>\n"
    "Identifiers from the summarized messages and their saved tool results that the summary leaves out, "
    'most used first. L<n> is a line of the file named above it: read_file("<file>:L<n>") opens it; '
    "search_history finds any text."
)
REFERENCE_INDEX_FILE_LINE = "{path}:"
REFERENCE_INDEX_KIND_LINE = "{kind}:"
REFERENCE_INDEX_ENTRY = "- {value} L{line}"
REFERENCE_INDEX_OMITTED = (
    "{count} more not listed here; search_history finds them. Lines holding most of them:"
)
REFERENCE_INDEX_OMITTED_RANGE = (
    "- {count} in {path} lines {start}-{end} (one read_file: offset={offset}, limit={limit})"
)
REFERENCE_INDEX_FOOTER = "</reference_index>"
REFERENCE_INDEX_SEPARATOR = "\n\n"  # between the summary message's text and the index

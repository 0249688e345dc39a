"""What SmolLM2-135M answered when asked for a summary (issue 37, research/wave4.md), written down as
test data: invented prose unrelated to the folded text, the same prose until the 512-token output limit,
the prompt's own template echoed back with its instructions under each heading, and the shapes around
them (empty sections, placeholders, a summary naming paths and figures the conversation never held).
Each was accepted as a thread's memory before issue 37: every one has the five headings, in order."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from context_engine.formats import DEFAULT_SUMMARY_PROMPT

HEADINGS = (
    "## SESSION INTENT",
    "## USER REQUIREMENTS AND PREFERENCES",
    "## PROGRESS AND DECISIONS",
    "## ARTIFACTS AND REFERENCES",
    "## NEXT STEPS",
)


def _under_headings(*bodies: str) -> str:
    return "\n\n".join(f"{heading}\n{body}" for heading, body in zip(HEADINGS, bodies, strict=True))


# The conversation these replies were asked to summarize: a user reading a service's log and its code.
FOLDED: list[BaseMessage] = [
    HumanMessage("Read logs/worker-7.log and tell me why the nightly export job failed.", id="u1"),
    AIMessage(
        "", id="a1", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "logs/worker-7.log"}}]
    ),
    ToolMessage(
        "2025-03-02 02:14:07 INFO export started run_id=exp-5521\n"
        "2025-03-02 02:14:09 WARN retrying upload to https://storage.example.net/exports/daily.csv\n"
        "2025-03-02 02:15:40 ERROR upload failed after 3 attempts: timeout after 30s (payload 48 MB)\n",
        tool_call_id="c1",
        name="read_file",
        id="t1",
    ),
    AIMessage(
        "The export failed because the upload of daily.csv to the storage bucket timed out after 30s on "
        "each of 3 attempts; the payload was 48 MB.",
        id="a2",
    ),
    HumanMessage(
        "Please keep the retry count but raise the upload timeout in src/export/upload.py.", id="u2"
    ),
    AIMessage("I will change UPLOAD_TIMEOUT in src/export/upload.py from 30 to 120 seconds.", id="a3"),
]

INVENTED_PROSE = _under_headings(
    "The end-date of the function is 2019-03-28 and it returns the value of the variable.",
    "The user would like to know the function that is called when the program is executed in the shell.",
    "The function was called with the arguments of the class and the program printed the value of the class "
    "to the console window, which was the result of the calculation of the date in the calendar.",
    "The calendar module of the standard library was used for the calculation of the dates.",
    "The program will print the date of the end of the function.",
)

_LOOP = (
    "The end-date of the function is the date of the end of the function and the function returns the date. "
)
REPEATED_TO_THE_LIMIT = _under_headings(
    "The end-date of the function.",
    "The function returns the date.",
    "The function returns the date of the calendar.",
    "The calendar of the function.",
    _LOOP * 40,  # until the 512-token output limit (the HTTP reply's finish_reason was "length")
)

_PROMPT_BODY = DEFAULT_SUMMARY_PROMPT.split("headings:\n\n", 1)[1].split("\n\nRules:", 1)[0]
TEMPLATE_ECHO = _PROMPT_BODY  # the five headings, each followed by its own instruction
TEMPLATE_ECHO_WITH_RULES = (
    DEFAULT_SUMMARY_PROMPT.split("headings:\n\n", 1)[1].split("<messages>", 1)[0].strip()
)

EMPTY_SECTIONS = "\n\n".join(f"{heading}\n" for heading in HEADINGS[:-1]) + f"\n\n{HEADINGS[-1]}\nNone"
PLACEHOLDER_SECTIONS = _under_headings("...", "[Your requirements here]", "TODO", "<artifacts>", "None")

INVENTED_IDENTIFIERS = _under_headings(
    "Find why the nightly export job failed.",
    "Keep the retry count; raise the upload timeout.",
    "The upload of daily.csv timed out after 30s on 3 attempts (run exp-5521); the timeout is being raised.",
    "logs/worker-7.log, src/export/upload.py, /var/lib/export/cache.db, https://storage.example.net/exports/"
    "weekly.csv, a 2.5 GB payload",
    "Change UPLOAD_TIMEOUT to 120 seconds.",
)

# What a model that does its job answers: accepted.
FAITHFUL = _under_headings(
    "Find why the nightly export job failed.",
    "Keep the retry count; raise the upload timeout.",
    "The upload of daily.csv to the storage bucket timed out after 30s on each of 3 attempts "
    "(run exp-5521, payload 48 MB). Decided: raise UPLOAD_TIMEOUT from 30 to 120 seconds.",
    "- logs/worker-7.log\n- src/export/upload.py\n- https://storage.example.net/exports/daily.csv",
    "Change UPLOAD_TIMEOUT in src/export/upload.py to 120 seconds.",
)

# name -> (reply, the refusal code ``faithfulness`` gives it).
SMOLLM2_REPLIES: dict[str, tuple[str, str]] = {
    "invented_prose": (INVENTED_PROSE, "too_little_shared"),
    "repeated_to_the_limit": (REPEATED_TO_THE_LIMIT, "repetition"),
    "template_echo": (TEMPLATE_ECHO, "template_echo"),
    "template_echo_with_rules": (TEMPLATE_ECHO_WITH_RULES, "template_echo"),
    "empty_sections": (EMPTY_SECTIONS, "empty_section"),
    "placeholder_sections": (PLACEHOLDER_SECTIONS, "placeholder_section"),
    "invented_identifiers": (INVENTED_IDENTIFIERS, "invented_identifiers"),
}

"""Validation reads the content, not the headings (issue 37 item 2): SmolLM2's real failures are refused
with their reason, a faithful summary is accepted, and each rule holds over generated summaries."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.errors import SummaryError
from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.summary.faithfulness import (
    CODE_ECHO,
    CODE_EMPTY_SECTION,
    CODE_INVENTED,
    CODE_NOT_A_SUMMARY,
    CODE_PLACEHOLDER,
    CODE_UNRELATED,
    Refusal,
    SummarySource,
    content_refusal,
)
from context_engine.summary.history import render_history_section, summary_text
from context_engine.summary.validation import DEFAULT_HEADINGS
from tests.context_engine.summary.smollm2_replies import FAITHFUL, FOLDED, HEADINGS, SMOLLM2_REPLIES

SOURCE = SummarySource([render_history_section(FOLDED)])


def _refusal(text: str, source: SummarySource = SOURCE):
    """Why ``text`` may not become memory: its shape (``validation``), then its content."""
    try:
        text = summary_text(text)
    except SummaryError as exc:
        return Refusal(CODE_NOT_A_SUMMARY, str(exc))
    return content_refusal(text, prompt=DEFAULT_SUMMARY_PROMPT, required=DEFAULT_HEADINGS, source=source)


def _spread(words: list[str]) -> str:
    """``words`` shared out under the five headings."""
    return "\n\n".join(f"{h}\n{' '.join(words[i::5]) or 'None'}" for i, h in enumerate(HEADINGS))


@pytest.mark.parametrize("name", list(SMOLLM2_REPLIES))
def test_smollm2s_answers_pass_the_headings_check_and_are_refused_for_their_content(name):
    text, code = SMOLLM2_REPLIES[name]
    assert summary_text(text)  # the five headings, in order: the old check took each of them as memory
    refusal = _refusal(text)
    assert refusal is not None and refusal.code == code, refusal


def test_a_faithful_summary_is_accepted():
    assert _refusal(FAITHFUL) is None


def test_invented_identifiers_are_named_in_the_refusal():
    refusal = _refusal(SMOLLM2_REPLIES["invented_identifiers"][0])
    assert set(refusal.invented) == {
        "/var/lib/export/cache.db",
        "https://storage.example.net/exports/weekly.csv",
        "2.5 GB",
    }
    assert refusal.as_dict()["invented_identifiers"] == list(refusal.invented)


def test_an_identifier_of_a_saved_file_the_fold_names_is_not_invented():
    summary = FAITHFUL.replace(
        "- logs/worker-7.log", "- logs/worker-7.log (settings in /etc/export/storage.json)"
    )
    assert _refusal(summary).code == CODE_INVENTED
    saved = "loaded /etc/export/storage.json"
    assert _refusal(summary, SummarySource([render_history_section(FOLDED), saved])) is None


def test_a_quantity_whose_number_the_fold_holds_is_wording_not_invention():
    assert _refusal(FAITHFUL.replace("after 30s", "after 30 seconds")) is None


def test_none_is_an_answer_not_a_placeholder():
    summary = FAITHFUL.replace("Keep the retry count; raise the upload timeout.", "None.")
    assert _refusal(summary) is None


# --- the rules as properties over generated summaries --------------------------------------------------

_INSTRUCTIONS = [
    line
    for line in DEFAULT_SUMMARY_PROMPT.split("<messages>")[0].splitlines()
    if len(line.split()) >= 7 and not line.startswith("##")
]
_FOLDED_WORDS = sorted({w for w in render_history_section(FOLDED).split() if w.isalpha() and len(w) > 3})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_INSTRUCTIONS), st.integers(min_value=0, max_value=4))
def test_a_summary_that_repeats_an_instruction_line_is_refused(instruction, where):
    sections = FAITHFUL.split("\n\n")
    sections[where] += "\n" + instruction
    assert _refusal("\n\n".join(sections)).code == CODE_ECHO


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=4),
    st.sampled_from(["", "   ", "...", "…", "TODO", "TBD", "[summary here]", "<fill in>", "- ...", "**"]),
)
def test_an_empty_or_placeholder_section_is_refused(where, filler):
    sections = FAITHFUL.split("\n\n")
    sections[where] = f"{HEADINGS[where]}\n{filler}"
    refusal = _refusal("\n\n".join(sections))
    assert refusal is not None and refusal.code in {CODE_EMPTY_SECTION, CODE_PLACEHOLDER, CODE_NOT_A_SUMMARY}


_UNRELATED = st.lists(
    st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=5, max_size=9), min_size=12, max_size=40, unique=True
)


@settings(max_examples=60, deadline=None)
@given(_UNRELATED)
def test_a_summary_of_words_the_fold_does_not_hold_is_refused(words):
    assert _refusal(_spread(words)).code == CODE_UNRELATED


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_FOLDED_WORDS), min_size=12, max_size=40))
def test_a_summary_in_the_folds_own_words_is_not_refused_for_sharing(words):
    refusal = _refusal(_spread(words))
    assert refusal is None or refusal.code not in {CODE_UNRELATED, CODE_INVENTED}


_PATHS = st.from_regex(r"/srv/[a-z]{4,8}/[a-z]{4,8}\.(py|log|json)", fullmatch=True)
_URLS = st.from_regex(r"https://[a-z]{5,9}\.example\.org/[a-z]{3,8}", fullmatch=True)
_IDS = st.from_regex(r"[A-Z]{3,5}-[1-9][0-9]{3,5}", fullmatch=True)


@settings(max_examples=80, deadline=None)
@given(st.one_of(_PATHS, _URLS, _IDS))
def test_any_identifier_the_fold_does_not_hold_is_invented(identifier):
    summary = FAITHFUL.replace("- src/export/upload.py", f"- src/export/upload.py\n- {identifier}")
    refusal = _refusal(summary)
    assert refusal is not None and refusal.code == CODE_INVENTED and identifier in refusal.invented


def test_a_rule_with_no_required_headings_has_no_sections_to_judge():
    # A custom prompt may require no line at all: the section checks have nothing to read (the preview
    # of such an agent's compression answered 500 when this raised).
    from context_engine.summary.faithfulness import sections

    assert sections("any summary text\nwith lines", ()) == []

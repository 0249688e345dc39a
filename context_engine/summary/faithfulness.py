"""Validation that reads a summary's content (issue 37 item 2): a model's answer that has the shape of a
summary (``validation``) is still refused when it

* repeats the prompt's template or instructions (``ECHO_SHINGLES`` runs of ``SHINGLE_WORDS`` words of the
  prompt that the folded messages do not hold);
* repeats itself (a model looping until its output limit: under ``MIN_DISTINCT`` of its runs of
  ``SHINGLE_WORDS`` words are distinct, from ``LOOP_MIN_SHINGLES`` runs up);
* leaves a required section empty, or fills it with a placeholder (``...``, ``TODO``, ``[summary here]``;
  ``None`` is an answer, not a placeholder: the default prompt asks for it);
* shares too little with what it summarizes: under ``MIN_SHARED`` of its content words occur in the folded
  messages (judged from ``MIN_JUDGED_WORDS`` content words up: a shorter summary says too little to tell);
* names identifiers (``identifiers``: paths, ids, URLs, numbers with units) that occur nowhere in what it
  summarizes: the folded messages, the earlier summary among them, and the saved files they name.
  These are invented. A quantity counts as found when its number is (the unit is wording).

Pure: the summary, the prompt and the source texts in, a ``Refusal`` or None out."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from context_engine.summary.identifiers import KIND_QUANTITY, Haystack, text_identifiers
from context_engine.summary.validation import line_start

SHINGLE_WORDS = 5
ECHO_SHINGLES = 3  # this many of the prompt's own word runs in a summary make it an echo
MIN_DISTINCT = 0.5
LOOP_MIN_SHINGLES = 40
MIN_SHARED = 0.3  # of the summary's content words, at least this share occur in what it folds
MIN_JUDGED_WORDS = 8  # fewer content words than this are too few to judge by the share
INVENTED_LISTED = 20

CODE_ECHO = "template_echo"
CODE_LOOP = "repetition"
CODE_EMPTY_SECTION = "empty_section"
CODE_PLACEHOLDER = "placeholder_section"
CODE_UNRELATED = "too_little_shared"
CODE_INVENTED = "invented_identifiers"
CODE_NOT_A_SUMMARY = "not_a_summary"  # the shape check (``validation``): markup, a refusal, cut off...
CODE_BREAKER_OPEN = "summaries_paused"  # no model call: too many refusals lately (``breaker``)
# A summary's kind, as the loss report, the card and the admin name it.
SUMMARY_MODEL = "model"
SUMMARY_EXTRACTIVE = "extractive"

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_TOKEN = re.compile(r"\w+", re.UNICODE)  # words and numbers: the runs a loop or an echo is read in
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_PLACEHOLDER = re.compile(
    r"(?:\.{2,}|…+|[-_*=~]+|tbd|tba|todo|xxx+|placeholder|lorem ipsum.*|\[[^\]]*\]|<[^<>]*>|\{[^{}]*\}"
    r"|\(?(?:empty|blank|to be (?:filled|completed|determined|added))\)?|(?:insert|add|write|your) .{0,60}here)",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^[\s>*_#-]*(?:\d+[.)]\s*)?")
# Words a summary uses about any conversation: they say nothing about whether it is about this one.
_COMMON = frozenset(
    """the and for with that this from have has had was were are been being not but you your our they them
    their there what when where which who how all any can will would should could into about also then than
    user users assistant asked asks requested wants wanted said says session conversation summary summarized
    none nothing yet stated next step steps progress decision decisions requirement requirements preference
    preferences artifact artifacts reference references intent remains remaining done found tool tools result
    results file files message messages called call calls provided discussed shared information used answer""".split()
)


@dataclass(frozen=True)
class Refusal:
    """Why a model's summary may not become memory: ``code`` (``CODE_*``), a sentence, and the
    identifiers it invented (bounded)."""

    code: str
    reason: str
    invented: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "reason": self.reason, "invented_identifiers": list(self.invented)}


def _stem(word: str) -> str:
    word = word.lower()
    if len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    return word[:6]


def content_words(text: str) -> set[str]:
    """The stems of ``text``'s words that carry content (three letters or more, not ``_COMMON``), and its
    CJK characters in pairs (a script without spaces)."""
    words = {_stem(w) for w in _WORD.findall(text) if len(w) >= 3 and not _CJK.search(w)}
    words -= {_stem(w) for w in _COMMON}
    cjk = "".join(_CJK.findall(text))
    return words | {cjk[i : i + 2] for i in range(len(cjk) - 1)}


def _runs(text: str) -> list[tuple[str, ...]]:
    words = [w.lower() for w in _TOKEN.findall(text)]
    return [tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)]


def _shingles(text: str) -> set[tuple[str, ...]]:
    return set(_runs(text))


class SummarySource:
    """What a summary of a fold may draw on: the folded messages as the history file holds them (an
    earlier summary among them), the saved files they name, the history file's path. Built once per
    fold; read by every rule."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.haystack = Haystack(texts)
        self.words = content_words(self.haystack.text)
        self.numbers = set(_NUMBER.findall(self.haystack.text))
        self._shingles: set[tuple[str, ...]] | None = None

    @property
    def shingles(self) -> set[tuple[str, ...]]:
        if self._shingles is None:
            self._shingles = _shingles(self.haystack.text)
        return self._shingles

    def invented(self, summary: str) -> list[str]:
        """The identifiers of ``summary`` found nowhere in the source."""
        found = []
        for value, kind in text_identifiers(summary).items():
            if (value, kind) in self.haystack:
                continue
            if kind == KIND_QUANTITY and set(_NUMBER.findall(value)) <= self.numbers:
                continue
            found.append(value)
        return found


def prompt_instructions(prompt: str) -> str:
    """The prompt's own words: all of it but the ``{messages}`` slot."""
    return prompt.replace("{messages}", "\n")


def content_refusal(
    text: str, *, prompt: str, required: Sequence[str], source: SummarySource
) -> Refusal | None:
    """Why the summary ``text`` (already shaped as one) may not become memory, or None (module
    docstring). ``required``: the headings whose sections must hold something."""
    echoed = (_shingles(text) & _shingles(prompt_instructions(prompt))) - source.shingles
    if len(echoed) >= ECHO_SHINGLES:
        return Refusal(CODE_ECHO, f"it repeats the prompt's instructions ({len(echoed)} phrases of them)")
    runs = _runs(text)
    if len(runs) >= LOOP_MIN_SHINGLES and len(set(runs)) < MIN_DISTINCT * len(runs):
        return Refusal(CODE_LOOP, f"it repeats itself ({len(set(runs))} distinct phrases in {len(runs)})")
    if section := _section_refusal(text, required):
        return section
    words = content_words(_without(text, required))
    shared = words & source.words
    if len(words) >= MIN_JUDGED_WORDS and len(shared) < MIN_SHARED * len(words):
        return Refusal(
            CODE_UNRELATED,
            f"it shares {len(shared)} of its {len(words)} content words with the folded messages",
        )
    invented = source.invented(text)
    if invented:
        return Refusal(
            CODE_INVENTED,
            f"it names {len(invented)} identifiers found nowhere in the folded messages",
            tuple(invented[:INVENTED_LISTED]),
        )
    return None


def _without(text: str, headings: Sequence[str]) -> str:
    for heading in headings:
        text = line_start(heading).sub(" ", text)
    return text


def sections(text: str, headings: Sequence[str]) -> list[tuple[str, str]]:
    """Each of ``headings`` (in order, as ``validation`` found them) with the text under it."""
    spans: list[tuple[str, int, int]] = []
    position = 0
    for heading in headings:
        match = line_start(heading).search(text, position)
        if match is None:
            return []
        spans.append((heading, match.start(), match.end()))
        position = match.end()
    if not spans:  # no required headings (a custom prompt's rule may name none)
        return []
    ends = [start for _, start, _ in spans[1:]] + [len(text)]
    return [(heading, text[end:stop]) for (heading, _, end), stop in zip(spans, ends, strict=True)]


def _section_refusal(text: str, headings: Sequence[str]) -> Refusal | None:
    for heading, body in sections(text, headings):
        lines = [_BULLET.sub("", line).strip(" \t*_:：") for line in body.splitlines()]
        lines = [line for line in lines if line]
        if not lines:
            return Refusal(CODE_EMPTY_SECTION, f"nothing under {heading!r}")
        if all(_PLACEHOLDER.fullmatch(line) for line in lines):
            return Refusal(CODE_PLACEHOLDER, f"a placeholder under {heading!r}: {lines[0][:60]!r}")
    return None

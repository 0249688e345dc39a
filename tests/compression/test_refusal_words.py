"""The compression card says why a model's summary was refused in the page's language, for every
refusal code the engine has (issue 37); an unknown code falls back to the engine's own sentence."""

from __future__ import annotations

from django.utils import translation

from compression.panels import loss_line_from, refusal_words
from context_engine.summary import faithfulness

CODES = [value for name, value in vars(faithfulness).items() if name.startswith("CODE_")]


def test_every_refusal_code_has_words_in_english_and_chinese():
    assert len(CODES) >= 8
    for language in ("en", "zh-hans"):
        with translation.override(language):
            words = {code: refusal_words(code) for code in CODES}
        assert all(words.values()), words
        assert len(set(words.values())) == len(CODES)  # one sentence per code
    with translation.override("zh-hans"):
        assert refusal_words(faithfulness.CODE_ECHO) == "它照抄了摘要提示词自身的说明"


def test_the_card_keeps_the_engines_detail_and_falls_back_to_it_for_an_unknown_code():
    report = {"total": 0, "summary_kind": "extractive"}
    known = loss_line_from(
        {**report, "refusal": {"code": faithfulness.CODE_ECHO, "reason": "it repeats (12)"}}
    )
    assert known is not None and known.extractive
    assert known.refusal == "it repeats the summary prompt's own instructions"
    assert known.refusal_detail == "it repeats (12)"
    unknown = loss_line_from({**report, "refusal": {"code": "new_rule", "reason": "a newer reason"}})
    assert unknown is not None and unknown.refusal == "a newer reason"

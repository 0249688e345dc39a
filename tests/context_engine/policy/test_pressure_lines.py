"""Where the hint line and a pressure level sit in tokens (``tokens_at_ratio``): the smallest request
size whose rounded pressure ratio reaches the level, so the admin's figures and the page agree."""

from __future__ import annotations

import pytest

from context_engine.policy.pressure import HINT_RATIO, hint_tokens, ratio, tokens_at_ratio


@pytest.mark.parametrize("trigger", [1, 7, 1000, 2048, 7372, 102_400, 1_000_000])
@pytest.mark.parametrize("level", [HINT_RATIO, 0.5, 1.0])
def test_the_line_is_the_first_size_at_the_level(trigger, level):
    line = tokens_at_ratio(trigger, level)
    assert ratio(line, trigger) >= level
    assert line == 0 or ratio(line - 1, trigger) < level


def test_the_hint_line_of_the_default_budget():
    assert hint_tokens(102_400) == 87_035  # 87,035 / 102,400 = 0.84995 rounds to 0.85


def test_no_trigger_has_no_line():
    assert hint_tokens(0) == 0

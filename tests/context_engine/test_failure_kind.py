"""Why a summary call failed, read from the error's structure (``events.failure_kind``): the code the
card and hint word as "rate limit", "timed out"... never the exception's name."""

from __future__ import annotations

import httpx
import openai
import pytest

from context_engine import events
from context_engine.errors import NotASummaryError, StoreError

REQUEST = httpx.Request("POST", "http://model.invalid/v1/chat/completions")


def _status(code: int) -> openai.APIStatusError:
    return openai.APIStatusError("failed", response=httpx.Response(code, request=REQUEST), body=None)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            openai.RateLimitError("slow down", response=httpx.Response(429, request=REQUEST), body=None),
            "rate_limit",
        ),
        (_status(429), "rate_limit"),
        (openai.APITimeoutError(request=REQUEST), "timeout"),
        (TimeoutError(), "timeout"),
        (openai.APIConnectionError(request=REQUEST), "unreachable"),
        (_status(503), "server_error"),
        (_status(401), "refused"),
        (NotASummaryError("no headings"), "not_a_summary"),
        (StoreError("disk full"), "file_error"),
        (ValueError("something else"), "other"),
    ],
)
def test_a_failure_is_classified_by_its_structure(error, kind):
    assert events.failure_kind(error) == kind

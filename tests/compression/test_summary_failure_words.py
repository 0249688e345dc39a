"""Issue 26, item 6: words, not exceptions. With the real OpenAI client against the local
OpenAI-protocol stub, a summary model that keeps failing (HTTP 429) is told as "The summary model failed
2 times since 12:31 (rate limit)..." on the card, never an exception's name; the hint stops promising an
automatic compression while it keeps failing, and says so again once a summary is applied."""

from __future__ import annotations

import pytest
from django.utils import timezone

from compression.models import CompressionRecord
from conversations.services import thread_create
from tests.compression._threads import say, state_fragment
from tests.context_engine.chats import as_summary

pytestmark = pytest.mark.django_db

LONG = "the quick brown fox jumps over the lazy dog " * 150  # over T = 1,024 tokens alone
RATE_LIMITED = {
    "error": {
        "message": "Rate limit reached for gpt-4o-mini",
        "type": "requests",
        "code": "rate_limit_exceeded",
    }
}
ATTEMPTS = 3  # the client's first try and its two retries


@pytest.fixture
def stub_agent(stub_agent_with):
    return stub_agent_with(summary_threshold=1, summary_keep_messages=2)


def test_a_failing_summary_model_is_told_in_words_and_the_hint_stops_promising(
    client, user, stub_agent, openai_stub, django_capture_on_commit_callbacks
):
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    openai_stub.reply("Noted. " + "I will read every chapter with care. " * 60)
    say(user, thread, "Read my chapters.", django_capture_on_commit_callbacks)
    for n in (1, 2):
        for _attempt in range(ATTEMPTS):
            openai_stub.error(429, RATE_LIMITED)
        openai_stub.reply(f"Chapter {n} read.")
        say(user, thread, f"Chapter {n}: {LONG}", django_capture_on_commit_callbacks)

    failed = CompressionRecord.objects.filter(conversation=thread, status="failed").order_by("created_at")
    assert [r.reason for r in failed] == ["rate_limit", "rate_limit"]
    since = timezone.localtime(failed[0].created_at).strftime("%H:%M")
    client.force_login(user)
    page = state_fragment(client, thread)
    assert (
        f"The summary model failed 2 times since {since} (rate limit). The next request will be sent "
        "compacted; try compressing later." in page
    )
    assert "RateLimitError" not in page and "Error:" not in page
    assert 'id="hint-failing"' in page and "compressed automatically" not in page

    # A summary that is applied ends the streak. This one could not bring the request under the trigger
    # (the latest message alone is above it): the hint does not promise an automatic compression either.
    openai_stub.reply(as_summary("## SESSION INTENT\nRead chapters 1 to 3.")).reply("Chapter 3 read.")
    say(user, thread, f"Chapter 3: {LONG}", django_capture_on_commit_callbacks)
    page = state_fragment(client, thread)
    assert "The summary model failed" not in page and 'id="hint-failing"' not in page
    applied = CompressionRecord.objects.filter(conversation=thread, status="completed").latest("created_at")
    assert applied.level == "summary" and applied.outcome == "could_not_reach_budget"
    assert 'id="hint-stuck"' in page and "compressed automatically" not in page
    assert "the latest message alone is" in page

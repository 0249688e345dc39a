"""Issue 39 item 6: pinning a folded message counts at once. The message comes back into the next
request, so the meter's figure (the thread row, GET state) grows by about its size without a run or
a reload, and the last compression's result stays (the page re-reads its panels on the pin event:
tests/e2e/test_pin_folded_page.py)."""

from __future__ import annotations

import pytest

from context_engine.tokens.messages import estimate_message
from conversations.models import Conversation
from tests.compression._threads import repository_for

pytestmark = pytest.mark.django_db


def test_pinning_a_folded_message_grows_the_next_request_at_once(
    client, summarized_thread, django_capture_on_commit_callbacks
):
    thread = summarized_thread
    state = client.get(f"/api/threads/{thread.thread_id}/state").json()["token_usage"]
    before, compression = state["next_llm_input_tokens"], state.get("compression")
    first = thread.messages.get(seq=1)
    profile = thread.agent.compression_config().profile
    folded = next(m for m in repository_for(thread).get_values()["messages"] if m.id == first.lc_message_id)
    size = estimate_message(folded, profile)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/threads/{thread.thread_id}/messages/{first.pk}/pin")

    assert response.status_code == 200, response.content
    after = client.get(f"/api/threads/{thread.thread_id}/state").json()["token_usage"]
    grown = after["next_llm_input_tokens"] - before
    assert size <= grown <= size * 2 + 8, (before, after["next_llm_input_tokens"], size)
    assert after.get("compression") == compression  # a pin is not a compression
    assert Conversation.objects.get(pk=thread.pk).context_tokens == after["next_llm_input_tokens"]


def test_pinning_a_message_the_model_still_reads_changes_no_figure(client, summarized_thread):
    thread = summarized_thread
    last = thread.messages.order_by("-seq").first()
    before = client.get(f"/api/threads/{thread.thread_id}/state").json()["token_usage"]
    assert client.post(f"/api/threads/{thread.thread_id}/messages/{last.pk}/pin").status_code == 200
    assert client.get(f"/api/threads/{thread.thread_id}/state").json()["token_usage"] == before

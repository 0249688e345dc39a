"""The preview of a manual compression through the API: what it shows, that it calls no model and
writes nothing, and that applying a stale preview folds nothing (409 ``stale_preview``)."""

from __future__ import annotations

import math

import pytest
from langchain_core.messages import HumanMessage

from compression.models import CompressionRecord
from context_engine.state import SUMMARY_EVENT_KEY
from context_engine.summary.history import effective_messages
from conversations.models import Message
from conversations.services import NewMessage, message_append, message_pin
from tests.compression._threads import repository_for, seed_state, transcript_for, workdir_files
from tests.context_engine.chats import conversation_messages
from tests.context_engine.fakes import ScriptedChatModel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_four")]
INSTRUCTION = "Keep every answer under 100 words; ticket OPS-4711."


@pytest.fixture
def summarizer(monkeypatch):
    model = ScriptedChatModel(summaries=["## SESSION INTENT\nRead documents 0-3 about compression."])
    monkeypatch.setattr("agent_platform.runtime.models.chat_model_for", lambda agent: model)
    return model


@pytest.fixture
def seeded(thread, user):
    messages = [HumanMessage(INSTRUCTION, id="pin"), *conversation_messages(5)]
    seed_state(thread, messages)
    rows = transcript_for(thread, messages)
    message_pin(thread_id=thread.thread_id, message_id=rows["pin"], user=user)
    return thread, rows


def _preview(client, thread):
    return client.post(f"/api/threads/{thread.thread_id}/compress/preview")


def _apply(client, thread, preview_id):
    return client.post(f"/api/threads/{thread.thread_id}/compress?wait=true&preview_id={preview_id}")


def test_preview_shows_what_would_be_folded_and_kept_without_calling_the_model(
    client, user, seeded, summarizer
):
    thread, rows = seeded
    client.force_login(user)
    files_before = workdir_files(thread)
    values_before = repository_for(thread).get_values()

    response = _preview(client, thread)

    assert response.status_code == 200, response.content
    body = response.json()
    seq = dict(Message.objects.filter(conversation=thread).values_list("lc_message_id", "seq"))
    assert body["status"] == "ready" and len(body["preview_id"]) == 32
    assert body["pinned"]["seqs"] == [seq["pin"]]
    assert body["kept_tail"]["count"] == 4 and body["kept_tail"]["first_seq"] == seq["h4"]
    assert body["folded"]["count"] == 16 and (body["folded"]["first_seq"], body["folded"]["last_seq"]) == (
        seq["h0"],
        seq["r3"],
    )
    assert body["estimated_after_tokens"] < body["before_tokens"]
    assert body["identifiers"]["total"] > 0
    assert summarizer.summary_prompts == []  # no model call
    assert workdir_files(thread) == files_before  # nothing written (compaction was staged only)
    assert repository_for(thread).get_values()["messages"] == values_before["messages"]
    assert not CompressionRecord.objects.exists()

    applied = _apply(client, thread, body["preview_id"])
    assert applied.status_code == 200, applied.content
    result = applied.json()
    assert result["compressed_messages"] == body["folded"]["count"] and result["pinned_messages"] == 1
    values = repository_for(thread).get_values()
    visible = effective_messages(values["messages"], values[SUMMARY_EVENT_KEY])
    assert visible[1].content == INSTRUCTION  # pinned: verbatim, right after the summary
    assert abs(body["estimated_after_tokens"] - result["after_tokens"]) / result["after_tokens"] < 0.25


def test_a_new_message_makes_the_preview_stale_and_nothing_is_folded(client, user, seeded, summarizer):
    thread, _rows = seeded
    client.force_login(user)
    preview_id = _preview(client, thread).json()["preview_id"]
    message_append(
        conversation=thread,
        message=NewMessage(role=Message.Role.USER, content="one more thing", lc_message_id="late"),
    )

    response = _apply(client, thread, preview_id)

    assert response.status_code == 409
    assert response.json()["code"] == "stale_preview"
    assert SUMMARY_EVENT_KEY not in repository_for(thread).get_values()
    assert summarizer.summary_prompts == [] and not CompressionRecord.objects.exists()


def test_a_pin_or_unpin_makes_the_preview_stale(client, user, seeded, summarizer):
    thread, rows = seeded
    client.force_login(user)
    preview_id = _preview(client, thread).json()["preview_id"]
    client.post(f"/api/threads/{thread.thread_id}/messages/{rows['h1']}/pin")
    assert _apply(client, thread, preview_id).json()["code"] == "stale_preview"
    fresh = _preview(client, thread).json()["preview_id"]
    assert fresh != preview_id
    assert _apply(client, thread, fresh).status_code == 200


def test_preview_of_a_short_thread_says_nothing_would_be_folded(client, user, thread, summarizer):
    seed_state(thread, conversation_messages(1))
    client.force_login(user)
    body = _preview(client, thread).json()
    assert body["status"] == "no_op" and body["reason"] == "insufficient_history"
    assert body["estimated_after_tokens"] == body["before_tokens"]


def test_preview_is_owner_only_and_needs_the_capability(client, user, other_user, seeded, summarizer):
    thread, _rows = seeded
    client.force_login(other_user)
    assert _preview(client, thread).status_code == 404
    client.force_login(user)
    thread.agent.capabilities = []
    thread.agent.save()
    assert _preview(client, thread).json()["code"] == "capability_missing"


def test_the_page_fragment_shows_the_preview_in_the_users_language(
    client, user, other_user, seeded, summarizer
):
    thread, _rows = seeded
    client.force_login(user)
    url = f"/threads/{thread.thread_id}/fragments/compress-preview"
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert "Folds 16 messages" in html and "pinned message word for word" in html
    assert 'data-preview-id="' in html and 'id="compress-apply"' in html
    # This agent has no summaries on record yet: the size after is shown as a range, not one number.
    assert 'id="compress-preview-range"' in html and "length is not known until it is written" in html
    zh = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "压缩" in zh and "摘要写出之前无法确定其长度" in zh
    client.force_login(other_user)
    assert client.get(url).status_code == 404


def test_a_summary_records_what_it_folded_and_the_preview_fits_the_agents_summary_sizes(
    client, user, seeded, summarizer, agent
):
    thread, _rows = seeded
    client.force_login(user)
    applied = _apply(client, thread, _preview(client, thread).json()["preview_id"]).json()
    assert applied["status"] == "completed" and applied["folded_tokens"] > applied["summary_tokens"]
    record = CompressionRecord.objects.get(conversation=thread)
    assert record.result["folded_tokens"] == applied["folded_tokens"]

    # With this agent's summaries on record (and only these), a preview estimates from them and says
    # how sure it is.
    record.delete()
    other = thread_create_seeded(user, agent)
    for n, (folded, size) in enumerate([(1000, 300), (2000, 420), (4000, 600), (8000, 850), (16000, 1200)]):
        CompressionRecord.objects.create(
            conversation=other,
            trigger=CompressionRecord.Trigger.MANUAL,
            level=CompressionRecord.Level.SUMMARY,
            status=CompressionRecord.Status.COMPLETED,
            result={"folded_tokens": folded, "summary_tokens": size, "n": n},
        )
    body = _preview(client, other).json()
    low, high = body["estimated_after_range"]
    assert low <= body["estimated_after_tokens"] <= high and body["estimate_unsure"] is False
    expected = round(math.exp(math.log(300) + 0.5 * math.log(body["folded"]["tokens"] / 1000)))
    assert abs(body["summary_estimate_tokens"] - expected) <= max(3, expected * 0.02)


def thread_create_seeded(user, agent):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=agent.slug)
    seed_state(thread, conversation_messages(5))
    return thread

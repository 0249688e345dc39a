"""Chat pages and fragments: login, owner-only, the 0.85 hint, busy buttons, receipts, files, i18n."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from agent_platform.workdir import workdir_for
from conversations.models import AgentRun, Conversation, Message
from tests.conversations.page_support import RECEIPT, detail_url, file_url, state_url, usage_at

pytestmark = pytest.mark.django_db

# --- access ------------------------------------------------------------------------------------


def test_every_page_requires_login(client, thread):
    urls = [
        reverse("conversations:thread-list"),
        detail_url(thread),
        state_url(thread),
        reverse("conversations:fragment-messages", kwargs={"thread_id": thread.thread_id}),
        file_url(thread, "outputs/x.txt"),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_another_users_thread_is_404_on_every_page(client, other_user, thread):
    client.force_login(other_user)
    kwargs = {"thread_id": thread.thread_id}
    for response in (
        client.get(detail_url(thread)),
        client.get(state_url(thread)),
        client.get(reverse("conversations:fragment-messages", kwargs=kwargs)),
        client.get(reverse("compression:fragment-compression", kwargs=kwargs) + "?status=started"),
        client.post(reverse("conversations:message-send", kwargs=kwargs), {"content": "hi"}),
        client.post(reverse("conversations:question-answer", kwargs=kwargs), {"answer": "x"}),
        client.post(reverse("conversations:thread-delete", kwargs=kwargs)),
    ):
        assert response.status_code == 404
    assert not Message.objects.exists()
    assert Conversation.objects.get(pk=thread.pk).status == Conversation.Status.ACTIVE


def test_thread_list_shows_only_my_threads_and_the_agent_picker(owner_client, thread, other_user, agent):
    from conversations.services import thread_create

    thread_create(user=other_user, agent_slug=agent.slug, title="Bob's secret")
    html = owner_client.get(reverse("conversations:thread-list")).content.decode()
    assert "Test thread" in html
    assert "Bob&#x27;s secret" not in html and "Bob's secret" not in html
    assert f'<option value="{agent.slug}">' in html


def test_new_thread_form_creates_through_the_service_and_redirects(owner_client, user, agent):
    response = owner_client.post(reverse("conversations:thread-new"), {"agent": agent.slug, "title": "Plan"})
    conversation = Conversation.objects.get(owner=user)
    assert response.status_code == 302
    assert response["Location"] == detail_url(conversation)
    assert conversation.title == "Plan" and conversation.agent == agent


def test_new_thread_with_an_unknown_agent_goes_back_with_an_error(owner_client):
    response = owner_client.post(reverse("conversations:thread-new"), {"agent": "nope"}, follow=True)
    assert response.status_code == 200
    assert not Conversation.objects.exists()
    assert "No such agent" in response.content.decode()


# --- the hint ----------------------------------------------------------------------------------


def test_hint_shows_at_exactly_0_85(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.85))
    html = owner_client.get(detail_url(thread)).content.decode()
    assert 'id="compression-hint"' in html
    assert 'id="compress-button"' in html
    assert "85.0%" in html


def test_hint_does_not_show_at_0_849(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.849))
    html = owner_client.get(detail_url(thread)).content.decode()
    assert 'id="compression-hint"' not in html
    assert 'id="compress-button"' not in html
    # the meter is there all the same
    assert 'id="meter-trigger"' in html


def test_state_fragment_has_the_same_hint_rule(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.849))
    assert 'id="compression-hint"' not in owner_client.get(state_url(thread)).content.decode()
    seed_token_usage(thread, usage_at(0.85))
    html = owner_client.get(state_url(thread)).content.decode()
    assert 'id="compression-hint"' in html
    # one response, both fragments the page swaps by id
    assert 'id="state-panel"' in html and 'id="run-status"' in html


def test_meter_shows_tokens_against_the_trigger_and_the_window(owner_client, thread, seed_token_usage):
    thread.agent.context_window = 128000  # the window of the agent's model, as configured now
    thread.agent.save()
    seed_token_usage(thread, usage_at(0.5, trigger=102400, window=128000))
    html = owner_client.get(detail_url(thread)).content.decode()
    assert re.search(r'id="meter-trigger" style="width: 50\.0%"', html)
    # 51200 of 128000 = 40%
    assert re.search(r'id="meter-window" style="width: 40\.0%"', html)
    assert "51.2K" in html and "102K" in html and "128K" in html


def test_without_a_measurement_the_panel_says_so(owner_client, thread):
    html = owner_client.get(detail_url(thread)).content.decode()
    assert "No measurement yet" in html
    assert 'id="compression-hint"' not in html


@pytest.mark.parametrize(
    ("status", "flag"),
    [
        (AgentRun.Status.RUNNING, "running"),
        (AgentRun.Status.QUEUED, "queued"),
        (AgentRun.Status.INTERRUPTED, "interrupted"),
    ],
)
def test_compress_button_is_disabled_while_the_thread_is_busy(
    owner_client, thread, status, flag, seed_token_usage
):
    seed_token_usage(thread, usage_at(0.9))
    AgentRun.objects.create(conversation=thread, status=status)
    html = owner_client.get(state_url(thread)).content.decode()
    assert re.search(r'id="compress-button"[^>]*disabled', html), flag
    assert f'data-{flag}="true"' in html
    assert 'data-busy="true"' in html


def test_compress_button_is_enabled_when_idle(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.9))
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.SUCCEEDED)
    html = owner_client.get(state_url(thread)).content.decode()
    assert re.search(r'id="compress-button"[^>]*>', html)
    assert not re.search(r'id="compress-button"[^>]*disabled', html)


def test_an_interrupted_run_shows_its_question_with_an_answer_form(owner_client, thread):
    AgentRun.objects.create(
        conversation=thread,
        status=AgentRun.Status.INTERRUPTED,
        events=[{"type": "interrupt", "question": "Which city?"}],
    )
    html = owner_client.get(detail_url(thread)).content.decode()
    assert "Which city?" in html
    assert 'id="answer-form"' in html


# --- transcript --------------------------------------------------------------------------------


def _add(thread, **fields) -> Message:
    seq = thread.messages.count() + 1
    return Message.objects.create(conversation=thread, seq=seq, **fields)


def test_transcript_shows_tool_calls_and_collapses_long_results(owner_client, thread):
    _add(thread, role="user", content="find the report")
    _add(
        thread,
        role="assistant",
        content="",
        tool_calls=[{"id": "c1", "name": "query_kb", "args": {"query": "report"}}],
    )
    _add(thread, role="tool", content="short result", tool_name="query_kb", tool_call_id="c1")
    _add(thread, role="tool", content="line\n" * 50, tool_name="query_kb", tool_call_id="c2")
    html = owner_client.get(detail_url(thread)).content.decode()
    assert "Calls query_kb" in html and "&quot;query&quot;: &quot;report&quot;" in html
    assert '<details class="collapsed">' in html  # the 50-line result
    assert "<pre>short result</pre>" in html  # the short one shown whole


def test_a_receipt_links_to_the_saved_file(owner_client, thread):
    _add(thread, role="tool", content=RECEIPT, tool_name="web_search", tool_call_id="c1")
    html = owner_client.get(detail_url(thread)).content.decode()
    href = file_url(thread, "outputs/large_tool_results/web_search-0123456789abcdef.txt")
    assert f'href="{href}"' in html


def test_a_saved_tool_result_carries_a_saved_for_the_model_marker_with_link_size_and_sha256(
    owner_client, thread
):
    import hashlib

    from context_engine.compaction.tool_results import tool_result_path

    big = "row " * 400
    digest = hashlib.sha256(big.encode()).hexdigest()
    path = tool_result_path("query_kb", digest)
    workdir_for(thread).write_text(path, big)  # what compaction wrote
    _add(thread, role="tool", content=big, tool_name="query_kb", tool_call_id="c1")
    _add(thread, role="tool", content="not saved " * 100, tool_name="query_kb", tool_call_id="c2")
    for url in (
        detail_url(thread),
        reverse("conversations:fragment-messages", kwargs={"thread_id": thread.thread_id}),
    ):
        html = owner_client.get(url).content.decode()
        assert html.count('class="saved-marker"') == 1, url
        assert "Saved for the model" in html
        assert f'href="{file_url(thread, path)}"' in html
        assert digest in html and "1.6\xa0KB" in html
    # the link opens the file page, which shows the same SHA-256
    assert digest in owner_client.get(file_url(thread, path)).content.decode()


def test_a_long_thread_opens_at_its_newest_messages(owner_client, thread, settings):
    from conversations.selectors import MESSAGE_PAGE_MAX

    Message.objects.bulk_create(
        Message(conversation=thread, seq=seq, role="user", content=f"message {seq}")
        for seq in range(1, MESSAGE_PAGE_MAX + 3)
    )
    html = owner_client.get(detail_url(thread)).content.decode()
    assert f'id="message-{MESSAGE_PAGE_MAX + 2}"' in html  # the newest is on the page
    assert 'id="message-1"' not in html and 'id="message-2"' not in html and 'id="message-3"' in html
    assert "2 earlier messages are not shown." in html
    settings.LANGUAGE_CODE = "zh-hans"
    assert "更早的 2 条消息未显示。" in owner_client.get(detail_url(thread)).content.decode()


def test_messages_fragment_returns_only_messages_after_the_given_seq(owner_client, thread):
    for text in ("one", "two", "three"):
        _add(thread, role="user", content=text)
    url = reverse("conversations:fragment-messages", kwargs={"thread_id": thread.thread_id})
    html = owner_client.get(url + "?after=1").content.decode()
    assert 'id="message-1"' not in html
    assert 'id="message-2"' in html and 'id="message-3"' in html


# --- commands ----------------------------------------------------------------------------------


def test_composer_post_queues_a_run_and_the_offline_agent_answers(
    owner_client, thread, django_capture_on_commit_callbacks
):
    url = reverse("conversations:message-send", kwargs={"thread_id": thread.thread_id})
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(url, {"content": "hello there"}, headers={"X-Requested-With": "fetch"})
    assert response.status_code == 202
    roles = list(thread.messages.order_by("seq").values_list("role", flat=True))
    assert roles[0] == "user" and "assistant" in roles  # runs execute eagerly on commit in test settings


def test_composer_without_javascript_redirects_back(owner_client, thread):
    url = reverse("conversations:message-send", kwargs={"thread_id": thread.thread_id})
    response = owner_client.post(url, {"content": "hello"})
    assert response.status_code == 302 and response["Location"] == detail_url(thread)


def test_empty_message_is_a_422_with_a_readable_reason(owner_client, thread):
    url = reverse("conversations:message-send", kwargs={"thread_id": thread.thread_id})
    response = owner_client.post(url, {"content": "   "}, headers={"X-Requested-With": "fetch"})
    assert response.status_code == 422
    assert response.content.decode() == "Write something first."


@pytest.mark.parametrize(
    "fields",
    [
        {"content": "x" * 100_001},
        {"content": "a\x00b"},
        {"content": "hi", "request_id": "r" * 101},
    ],
)
def test_over_long_or_nul_message_fields_are_a_422_not_a_500(owner_client, thread, fields):
    # The API's schema bounds these; the page goes straight to the service, which must bound them too.
    url = reverse("conversations:message-send", kwargs={"thread_id": thread.thread_id})
    response = owner_client.post(url, fields, headers={"X-Requested-With": "fetch"})
    assert response.status_code == 422
    assert "NUL" in response.content.decode() or "longer than" in response.content.decode()
    assert not thread.messages.exists() and not thread.runs.exists()


def test_new_thread_with_a_nul_in_the_title_goes_back_with_an_error(owner_client, agent):
    response = owner_client.post(
        reverse("conversations:thread-new"), {"agent": agent.slug, "title": "a\x00b"}, follow=True
    )
    assert response.status_code == 200
    assert not Conversation.objects.exists()
    assert "NUL character" in response.content.decode()


def test_answer_when_nothing_is_asked_is_a_409(owner_client, thread):
    url = reverse("conversations:question-answer", kwargs={"thread_id": thread.thread_id})
    response = owner_client.post(url, {"answer": "Paris"}, headers={"X-Requested-With": "fetch"})
    assert response.status_code == 409


def test_page_posts_need_the_csrf_token(client, user, thread):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    url = reverse("conversations:message-send", kwargs={"thread_id": thread.thread_id})
    assert strict.post(url, {"content": "hi"}).status_code == 403


def test_a_too_long_title_is_refused_as_in_the_api_not_cut_silently(owner_client, agent):
    response = owner_client.post(
        reverse("conversations:thread-new"), {"agent": agent.slug, "title": "t" * 250}, follow=True
    )
    assert response.status_code == 200
    assert not Conversation.objects.filter(agent=agent).exists()
    assert b"title" in response.content.lower()

"""Chat pages and fragments: login, owner-only, the 0.85 hint, busy buttons, receipts, files, i18n."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from agent_platform.workdir import workdir_for
from conversations.models import AgentRun, Conversation, Message
from conversations.pages import format_tokens, pressure_from_usage, receipt_parse
from tests.conversations.page_support import usage_at, write_token_usage

pytestmark = pytest.mark.django_db

RECEIPT = (
    "[Tool result saved]\n"
    "Tool: web_search\n"
    "Approx tokens: 5120\n"
    "SHA-256: " + "a" * 64 + "\n"
    "Full output path: outputs/large_tool_results/web_search-0123456789abcdef.txt\n"
    "\n"
    "Output preview:\n"
    "[HEAD]\nfirst lines\n"
    "[Truncated 9000 chars. Read the full output from the saved file.]"
)


@pytest.fixture
def seed_token_usage():
    """Seed a thread's ``token_usage`` through the state repository (the token-usage middleware's key)."""
    return write_token_usage


def _detail(thread) -> str:
    return reverse("conversations:thread-detail", kwargs={"thread_id": thread.thread_id})


def _state(thread) -> str:
    return reverse("conversations:fragment-state", kwargs={"thread_id": thread.thread_id})


def _file(thread, path: str) -> str:
    return reverse("conversations:workdir-file", kwargs={"thread_id": thread.thread_id, "path": path})


# --- access ------------------------------------------------------------------------------------


def test_every_page_requires_login(client, thread):
    urls = [
        reverse("conversations:thread-list"),
        _detail(thread),
        _state(thread),
        reverse("conversations:fragment-messages", kwargs={"thread_id": thread.thread_id}),
        _file(thread, "outputs/x.txt"),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_another_users_thread_is_404_on_every_page(client, other_user, thread):
    client.force_login(other_user)
    kwargs = {"thread_id": thread.thread_id}
    for response in (
        client.get(_detail(thread)),
        client.get(_state(thread)),
        client.get(reverse("conversations:fragment-messages", kwargs=kwargs)),
        client.get(reverse("conversations:fragment-compression", kwargs=kwargs) + "?status=started"),
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
    assert response["Location"] == _detail(conversation)
    assert conversation.title == "Plan" and conversation.agent == agent


def test_new_thread_with_an_unknown_agent_goes_back_with_an_error(owner_client):
    response = owner_client.post(reverse("conversations:thread-new"), {"agent": "nope"}, follow=True)
    assert response.status_code == 200
    assert not Conversation.objects.exists()
    assert "No such agent" in response.content.decode()


# --- the hint ----------------------------------------------------------------------------------


def test_hint_shows_at_exactly_0_85(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.85))
    html = owner_client.get(_detail(thread)).content.decode()
    assert 'id="compression-hint"' in html
    assert 'id="compress-button"' in html
    assert "85.0%" in html


def test_hint_does_not_show_at_0_849(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.849))
    html = owner_client.get(_detail(thread)).content.decode()
    assert 'id="compression-hint"' not in html
    assert 'id="compress-button"' not in html
    # the meter is there all the same
    assert 'id="meter-trigger"' in html


def test_state_fragment_has_the_same_hint_rule(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.849))
    assert 'id="compression-hint"' not in owner_client.get(_state(thread)).content.decode()
    seed_token_usage(thread, usage_at(0.85))
    html = owner_client.get(_state(thread)).content.decode()
    assert 'id="compression-hint"' in html
    # one response, both fragments the page swaps by id
    assert 'id="state-panel"' in html and 'id="run-status"' in html


def test_meter_shows_tokens_against_the_trigger_and_the_window(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.5, trigger=102400, window=128000))
    html = owner_client.get(_detail(thread)).content.decode()
    assert re.search(r'id="meter-trigger" style="width: 50\.0%"', html)
    # 51200 of 128000 = 40%
    assert re.search(r'id="meter-window" style="width: 40\.0%"', html)
    assert "51.2K" in html and "102K" in html and "128K" in html


def test_without_a_measurement_the_panel_says_so(owner_client, thread):
    html = owner_client.get(_detail(thread)).content.decode()
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
    html = owner_client.get(_state(thread)).content.decode()
    assert re.search(r'id="compress-button"[^>]*disabled', html), flag
    assert f'data-{flag}="true"' in html
    assert 'data-busy="true"' in html


def test_compress_button_is_enabled_when_idle(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.9))
    AgentRun.objects.create(conversation=thread, status=AgentRun.Status.SUCCEEDED)
    html = owner_client.get(_state(thread)).content.decode()
    assert re.search(r'id="compress-button"[^>]*>', html)
    assert not re.search(r'id="compress-button"[^>]*disabled', html)


def test_an_interrupted_run_shows_its_question_with_an_answer_form(owner_client, thread):
    AgentRun.objects.create(
        conversation=thread,
        status=AgentRun.Status.INTERRUPTED,
        events=[{"type": "interrupt", "question": "Which city?"}],
    )
    html = owner_client.get(_detail(thread)).content.decode()
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
    html = owner_client.get(_detail(thread)).content.decode()
    assert "Calls query_kb" in html and "&quot;query&quot;: &quot;report&quot;" in html
    assert '<details class="collapsed">' in html  # the 50-line result
    assert "<pre>short result</pre>" in html  # the short one shown whole


def test_a_receipt_links_to_the_saved_file(owner_client, thread):
    _add(thread, role="tool", content=RECEIPT, tool_name="web_search", tool_call_id="c1")
    html = owner_client.get(_detail(thread)).content.decode()
    href = _file(thread, "outputs/large_tool_results/web_search-0123456789abcdef.txt")
    assert f'href="{href}"' in html


def test_a_saved_tool_result_carries_a_saved_for_the_model_marker_with_link_size_and_sha256(
    owner_client, thread
):
    import hashlib

    from compression.engine.compaction import tool_result_path

    big = "row " * 400
    digest = hashlib.sha256(big.encode()).hexdigest()
    path = tool_result_path("query_kb", digest)
    workdir_for(thread).write_text(path, big)  # what compaction wrote
    _add(thread, role="tool", content=big, tool_name="query_kb", tool_call_id="c1")
    _add(thread, role="tool", content="not saved " * 100, tool_name="query_kb", tool_call_id="c2")
    for url in (
        _detail(thread),
        reverse("conversations:fragment-messages", kwargs={"thread_id": thread.thread_id}),
    ):
        html = owner_client.get(url).content.decode()
        assert html.count('class="saved-marker"') == 1, url
        assert "Saved for the model" in html
        assert f'href="{_file(thread, path)}"' in html
        assert digest in html and "1.6\xa0KB" in html
    # the link opens the file page, which shows the same SHA-256
    assert digest in owner_client.get(_file(thread, path)).content.decode()


def test_a_long_thread_opens_at_its_newest_messages(owner_client, thread, settings):
    from conversations.selectors import MESSAGE_PAGE_MAX

    Message.objects.bulk_create(
        Message(conversation=thread, seq=seq, role="user", content=f"message {seq}")
        for seq in range(1, MESSAGE_PAGE_MAX + 3)
    )
    html = owner_client.get(_detail(thread)).content.decode()
    assert f'id="message-{MESSAGE_PAGE_MAX + 2}"' in html  # the newest is on the page
    assert 'id="message-1"' not in html and 'id="message-2"' not in html and 'id="message-3"' in html
    assert "2 earlier messages are not shown." in html
    settings.LANGUAGE_CODE = "zh-hans"
    assert "更早的 2 条消息未显示。" in owner_client.get(_detail(thread)).content.decode()


def test_messages_fragment_returns_only_messages_after_the_given_seq(owner_client, thread):
    for text in ("one", "two", "three"):
        _add(thread, role="user", content=text)
    url = reverse("conversations:fragment-messages", kwargs={"thread_id": thread.thread_id})
    html = owner_client.get(url + "?after=1").content.decode()
    assert 'id="message-1"' not in html
    assert 'id="message-2"' in html and 'id="message-3"' in html


def test_compression_fragment_renders_an_event(owner_client, thread):
    url = reverse("conversations:fragment-compression", kwargs={"thread_id": thread.thread_id})
    html = owner_client.get(
        url, {"status": "completed", "level": "summary", "before_tokens": 90000, "after_tokens": 12000}
    ).content.decode()
    assert "Compression completed (summary): 90K → 12K tokens" in html
    html = owner_client.get(url, {"status": "failed", "error": "<b>boom</b>"}).content.decode()
    assert "Compression failed:" in html and "&lt;b&gt;boom&lt;/b&gt;" in html


@pytest.mark.parametrize("file_path", ["\n", "../../etc/passwd", "/etc/passwd"])
def test_compression_fragment_drops_a_file_path_outside_the_workdir(owner_client, thread, file_path):
    url = reverse("conversations:fragment-compression", kwargs={"thread_id": thread.thread_id})
    response = owner_client.get(url, {"status": "completed", "level": "summary", "file_path": file_path})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Compression completed (summary)" in html and "History saved to" not in html
    history = "outputs/conversation_history/s1.md"
    html = owner_client.get(url, {"status": "completed", "file_path": history}).content.decode()
    assert f'href="{_file(thread, history)}"' in html


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
    assert response.status_code == 302 and response["Location"] == _detail(thread)


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


# --- saved files -------------------------------------------------------------------------------


def test_owner_sees_a_saved_file_with_its_size_and_sha256_escaped_never_run(owner_client, thread):
    import hashlib

    text = "<script>full output</script> 中文"
    workdir_for(thread).write_text("outputs/large_tool_results/x.txt", text)
    response = owner_client.get(_file(thread, "outputs/large_tool_results/x.txt"))
    assert response.status_code == 200
    assert response["X-Content-Type-Options"] == "nosniff"
    html = response.content.decode()
    assert hashlib.sha256(text.encode()).hexdigest() in html
    assert "&lt;script&gt;full output&lt;/script&gt; 中文" in html and "<script>full output" not in html
    assert f"{len(text.encode())} bytes" in html
    assert 'href="?download=1"' in html


def test_a_saved_file_downloads_byte_for_byte_as_an_attachment(owner_client, thread):
    text = "<script>full output</script> 中文"
    workdir_for(thread).write_text("outputs/large_tool_results/x.txt", text)
    response = owner_client.get(_file(thread, "outputs/large_tool_results/x.txt") + "?download=1")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == 'attachment; filename="x.txt"'
    assert response.content == text.encode()
    raw = owner_client.get(_file(thread, "outputs/large_tool_results/x.txt") + "?raw=1")
    assert raw["Content-Type"] == "text/plain; charset=utf-8" and raw.content == text.encode()


def test_another_user_and_staff_get_404_for_a_saved_file(client, other_user, staff_user, thread):
    workdir_for(thread).write_text("outputs/secret.txt", "secret")
    for someone in (other_user, staff_user):
        client.force_login(someone)
        assert client.get(_file(thread, "outputs/secret.txt")).status_code == 404


@pytest.mark.parametrize(
    "path", ["../other/outputs/x.txt", "outputs/../../x.txt", "outputs/missing.txt", "outputs"]
)
def test_paths_outside_the_workdir_or_missing_are_404(owner_client, thread, path):
    workdir_for(thread).write_text("outputs/present.txt", "here")
    assert owner_client.get(f"/threads/{thread.thread_id}/files/{path}").status_code == 404


def test_traversal_is_404_even_where_the_target_file_exists(owner_client, thread, settings, tmp_path):
    settings.WORKDIR_ROOT = root = tmp_path
    (root / "other" / "outputs").mkdir(parents=True, exist_ok=True)
    (root / "other" / "outputs" / "x.txt").write_text("another thread's file")
    (root / "x.txt").write_text("a file beside the workdirs")
    workdir_for(thread).write_text("outputs/present.txt", "here")
    for path in ("../other/outputs/x.txt", "outputs/../../x.txt", "%2e%2e/other/outputs/x.txt"):
        response = owner_client.get(f"/threads/{thread.thread_id}/files/{path}")
        assert response.status_code == 404, path
        assert b"another thread" not in response.content and b"beside" not in response.content


def test_a_deleted_threads_files_are_gone(owner_client, user, thread):
    from conversations.services import thread_soft_delete

    workdir_for(thread).write_text("outputs/x.txt", "x")
    thread_soft_delete(thread_id=thread.thread_id, user=user)
    assert owner_client.get(_file(thread, "outputs/x.txt")).status_code == 404


# --- i18n --------------------------------------------------------------------------------------


def test_pages_render_in_simplified_chinese_after_set_language(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.9))
    response = owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": _detail(thread)})
    assert response.status_code == 302
    html = owner_client.get(_detail(thread)).content.decode()
    assert '<html lang="zh-hans">' in html
    assert "压缩上下文" in html  # the button
    assert "发送" in html  # the composer
    assert "Compress context" not in html


def test_english_is_the_default(owner_client, thread, seed_token_usage):
    seed_token_usage(thread, usage_at(0.9))
    html = owner_client.get(_detail(thread)).content.decode()
    assert '<html lang="en">' in html and "Compress context" in html


# --- staff pressure page -----------------------------------------------------------------------


def test_pressure_page_is_staff_only(client, user):
    client.force_login(user)
    response = client.get(reverse("admin-pressure"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_pressure_page_lists_threads_by_pressure_with_a_histogram_per_agent(client, staff_user, user, agent):
    from agent_platform.models import Agent
    from conversations.services import thread_create

    second = Agent.objects.create(name="Second agent", slug="second")
    ratios = {"low": 0.2, "hot": 0.93, "over": 1.4}
    for title, ratio in ratios.items():
        conversation = thread_create(user=user, agent_slug=agent.slug, title=title)
        Conversation.objects.filter(pk=conversation.pk).update(pressure_ratio=ratio, context_tokens=1000)
    other = thread_create(user=user, agent_slug=second.slug, title="other")
    Conversation.objects.filter(pk=other.pk).update(pressure_ratio=0.5)
    thread_create(user=user, agent_slug=agent.slug, title="never measured")

    staff_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(staff_user)
    html = client.get(reverse("admin-pressure")).content.decode()
    assert html.count('<figure class="pressure-chart">') == 2
    rows = re.findall(r"/admin/conversations/conversation/\d+/change/\">([^<]+)</a>", html)
    assert rows == ["over", "hot", "other", "low"]
    assert "1 not measured yet" in html

    filtered = client.get(reverse("admin-pressure"), {"agent": second.slug}).content.decode()
    assert re.findall(r"/change/\">([^<]+)</a>", filtered) == ["other"]


def test_pressure_page_lists_only_their_own_threads_to_staff_without_the_view_permission(
    client, staff_user, user, agent
):
    from conversations.services import thread_create

    for owner, title in ((user, "someone else's"), (staff_user, "my own")):
        conversation = thread_create(user=owner, agent_slug=agent.slug, title=title)
        Conversation.objects.filter(pk=conversation.pk).update(pressure_ratio=0.5)
    client.force_login(staff_user)
    html = client.get(reverse("admin-pressure")).content.decode()
    assert re.findall(r"/change/\">([^<]+)</a>", html) == ["my own"]
    assert "someone else" not in html


def test_pressure_page_with_a_filter_that_is_not_a_slug_lists_nothing(client, staff_user, thread):
    Conversation.objects.filter(pk=thread.pk).update(pressure_ratio=0.5)
    client.force_login(staff_user)
    response = client.get(reverse("admin-pressure"), {"agent": "a\x00b"})  # a 500 on PostgreSQL before
    assert response.status_code == 200
    assert re.findall(r"/change/\">([^<]+)</a>", response.content.decode()) == []


def test_pressure_bins_are_counted_by_the_database_with_the_trigger_and_above_in_the_last_bin(
    staff_user, user, agent
):
    from conversations.selectors import PRESSURE_BIN_COUNT, thread_pressure_overview
    from conversations.services import thread_create

    ratios = [0.0, 0.3, 0.849, 0.85, 0.9, 1.0, 3.2, -0.1]
    for ratio in ratios:
        conversation = thread_create(user=staff_user, agent_slug=agent.slug)
        Conversation.objects.filter(pk=conversation.pk).update(pressure_ratio=ratio)

    overview = thread_pressure_overview(user=staff_user, rows=2)
    [(histogram_agent, counts)] = overview.histograms
    assert histogram_agent == agent and len(counts) == PRESSURE_BIN_COUNT
    expected = [0] * PRESSURE_BIN_COUNT
    for index in (0, 3, 8, 8, 9, PRESSURE_BIN_COUNT - 1, PRESSURE_BIN_COUNT - 1, 0):
        expected[index] += 1
    assert counts == expected
    assert overview.thread_count == len(ratios) and [t.pressure_ratio for t in overview.threads] == [3.2, 1.0]


# --- pure projections --------------------------------------------------------------------------


def test_pressure_projection_boundary_and_fallbacks():
    assert pressure_from_usage({"summary_pressure_ratio": 0.85, "next_llm_input_tokens": 1}).suggest
    assert not pressure_from_usage({"summary_pressure_ratio": 0.849, "next_llm_input_tokens": 1}).suggest
    # no ratio recorded: computed from next/T, rounded like the middleware does
    computed = pressure_from_usage({"next_llm_input_tokens": 8704, "summary_trigger_tokens": 10240})
    assert computed.ratio == 0.85 and computed.suggest
    # next_llm_input_tokens falls back to llm_input_tokens
    assert pressure_from_usage({"llm_input_tokens": 10, "summary_trigger_tokens": 100}).tokens == 10
    assert not pressure_from_usage(None).measured
    assert (
        pressure_from_usage(
            {"summary_pressure_ratio": 2.0, "next_llm_input_tokens": 5, "summary_trigger_tokens": 2}
        ).trigger_percent
        == 100.0
    )


def test_token_formatting():
    assert [format_tokens(v) for v in (None, 950, 1000, 12345, 102400, 1_050_000)] == [
        "–",
        "950",
        "1K",
        "12.3K",
        "102K",
        "1.05M",
    ]


def test_receipt_parsing():
    receipt = receipt_parse(RECEIPT)
    assert receipt is not None
    assert receipt.tool == "web_search" and receipt.approx_tokens == "5120"
    assert receipt.path == "outputs/large_tool_results/web_search-0123456789abcdef.txt"
    assert receipt.preview.startswith("[HEAD]")
    assert receipt_parse("just text") is None
    assert receipt_parse("[Tool result saved]\nTool: x\n") is None  # no path, no link


def test_after_a_reload_the_page_shows_the_newest_compression_whatever_its_trigger(owner_client, thread):
    """A manual compression after a run's automatic one is what the status line shows on load."""
    from compression.models import CompressionRecord

    run = AgentRun.objects.create(conversation=thread, status="succeeded")
    run.events = [{"type": "compression", "status": "completed", "level": "compaction", "before_tokens": 9}]
    run.save()
    CompressionRecord.objects.create(
        conversation=thread,
        run=run,
        trigger="auto",
        level="compaction",
        status="completed",
        before_tokens=9000,
        after_tokens=8000,
    )
    CompressionRecord.objects.create(
        conversation=thread,
        trigger="manual",
        level="summary",
        status="completed",
        before_tokens=8000,
        after_tokens=1200,
        file_path="outputs/conversation_history/session_abc.md",
    )
    page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    status = page[page.index('id="compression-status"') :]
    status = status[: status.index("</div>")]
    assert "Compression completed (summary)" in status
    assert "session_abc.md" in status


def test_the_page_shows_a_compression_under_way_after_a_reload(owner_client, thread):
    from django.core.cache import cache

    from conversations.selectors import COMPRESSING_KEY

    cache.set(COMPRESSING_KEY.format(thread_id=thread.thread_id), "manual", 60)
    try:
        page = owner_client.get(f"/threads/{thread.thread_id}/").content.decode()
    finally:
        cache.delete(COMPRESSING_KEY.format(thread_id=thread.thread_id))
    assert 'id="compression-status" class="compression-status" data-status="started"' in page
    assert 'data-busy="true"' in page


def test_a_too_long_title_is_refused_as_in_the_api_not_cut_silently(owner_client, agent):
    response = owner_client.post(
        reverse("conversations:thread-new"), {"agent": agent.slug, "title": "t" * 250}, follow=True
    )
    assert response.status_code == 200
    assert not Conversation.objects.filter(agent=agent).exists()
    assert b"title" in response.content.lower()

"""Issue 24 through the API, with the real OpenAI client against the local OpenAI-protocol stub: only a
summary becomes memory (anything else is a 502 ``summary_failed`` with the thread untouched), and
nothing leaves the view except into a file the model can name (text verbatim, media saved whole)."""

from __future__ import annotations

import base64
import hashlib
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from agent_platform.runtime.offline import extractive_summary
from compression.models import CompressionRecord
from context_engine.compaction.media import media_path
from context_engine.state import SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY
from context_engine.summary.history import format_summary_prompt, summary_text
from tests.compression._threads import repository_for, seed_state, workdir_files
from tests.context_engine.chats import SUMMARY, conversation_messages
from tests.context_engine.summary.bad_summaries import BAD_SUMMARIES

pytestmark = pytest.mark.django_db

URL = "https://example.com/search?q=redis&lang=en&page=2"


@pytest.fixture
def stub_agent(stub_agent_with):
    return stub_agent_with()


@pytest.fixture
def stub_thread(user, stub_agent):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    seed_state(thread, conversation_messages(5))
    return thread


def _compress(client, user, thread):
    client.force_login(user)
    return client.post(f"/api/threads/{thread.thread_id}/compress?wait=true")


def _summary_request(stub) -> str:
    [request] = stub.requests
    return request["messages"][-1]["content"]


def _history(thread) -> str:
    from agent_platform.workdir import workdir_for

    [path] = [p for p in workdir_files(thread) if p.startswith("outputs/conversation_history/")]
    return workdir_for(thread).read_text(path)


@pytest.mark.parametrize("kind", list(BAD_SUMMARIES))
def test_an_answer_that_is_no_summary_becomes_the_labelled_extractive_summary(
    client, user, stub_thread, openai_stub, kind
):
    openai_stub.reply(BAD_SUMMARIES[kind])

    response = _compress(client, user, stub_thread)

    assert response.status_code == 200, response.content  # issue 37: never a thread without a summary
    report = response.json()["loss_report"]
    assert report["summary_kind"] == "extractive" and report["refusal"]["code"] == "not_a_summary"
    assert len(openai_stub.requests) == 1  # the summary was asked for, through the real client
    after = repository_for(stub_thread).get_values()
    memory = after[SUMMARY_EVENT_KEY]["summary_message"].content
    assert BAD_SUMMARIES[kind][:40] not in memory and "Question 0: what does document 0 say" in memory
    assert len(after[SUMMARY_CALLS_KEY]) == 1  # the provider billed the call: the spend guard counts it
    record = CompressionRecord.objects.get(
        conversation=stub_thread, status=CompressionRecord.Status.COMPLETED
    )
    assert record.loss_report["summary_kind"] == "extractive"
    assert len([p for p in workdir_files(stub_thread) if "conversation_history" in p]) == 1


def test_a_summary_under_the_five_headings_is_stored(client, user, stub_thread, openai_stub):
    openai_stub.reply(SUMMARY)
    response = _compress(client, user, stub_thread)
    assert response.status_code == 200, response.content
    event = repository_for(stub_thread).get_values()[SUMMARY_EVENT_KEY]
    assert SUMMARY in event["summary_message"].content


def test_a_custom_prompt_requires_what_the_admin_says_a_summary_contains(
    client, user, stub_agent, stub_thread, openai_stub
):
    stub_agent.summary_prompt = "Summarize as Goal / Decisions:\n{messages}"
    stub_agent.summary_required = "## Goal\nDecisions:"
    stub_agent.full_clean()
    stub_agent.save()
    assert stub_agent.compression_config().summary_required == ("## Goal", "Decisions:")
    openai_stub.reply("## Goal\nRead the documents.")  # no decisions: not the summary asked for
    refused = _compress(client, user, stub_thread)
    assert refused.status_code == 200 and refused.json()["loss_report"]["summary_kind"] == "extractive"

    openai_stub.reply("## Goal\nRead the documents.\nDecisions: keep the context small.")
    assert _compress(client, user, stub_thread).status_code == 200


def test_text_reaches_the_summarizer_and_the_history_file_verbatim(client, user, stub_agent, openai_stub):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    text = f"Compare {URL} with <b>A & B</b> \"quoted\" 'single' > 3"
    seed_state(thread, [HumanMessage(text, id="u0"), *conversation_messages(4)])
    openai_stub.reply(SUMMARY)

    assert _compress(client, user, thread).status_code == 200
    assert text in _summary_request(openai_stub) and "&amp;" not in _summary_request(openai_stub)
    assert text in _history(thread) and "&amp;" not in _history(thread)


def test_a_wrapped_upper_case_data_uri_is_saved_whole_and_never_reaches_the_summarizer(
    client, user, stub_agent, openai_stub
):
    from agent_platform.workdir import workdir_for
    from conversations.services import thread_create

    image = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    payload = base64.b64encode(image).decode()
    wrapped = "\n".join(textwrap.wrap(payload, 76))
    thread = thread_create(user=user, agent_slug=stub_agent.slug)
    seed_state(
        thread,
        [
            HumanMessage(f"Chart: DATA:IMAGE/PNG;BASE64,\n{wrapped}\n\nWhat does it show?", id="u0"),
            *conversation_messages(4),
        ],
    )
    openai_stub.reply(SUMMARY)

    assert _compress(client, user, thread).status_code == 200
    path = media_path("image/png", hashlib.sha256(image).hexdigest())
    assert workdir_for(thread).read_bytes(path) == image  # one file, the whole image
    assert [p for p in workdir_files(thread) if p.startswith("outputs/media/")] == [path]
    sent = _summary_request(openai_stub)
    assert path in sent and "What does it show?" in sent
    for line in wrapped.splitlines():
        assert line not in sent and line not in _history(thread)


_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=60
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_words, min_size=1, max_size=8))
def test_the_offline_model_answers_a_valid_summary_of_any_conversation(texts):
    messages = [HumanMessage(text) for text in texts]
    prompt = format_summary_prompt(messages)
    summary = extractive_summary(prompt)
    assert summary_text(summary) == summary.strip()

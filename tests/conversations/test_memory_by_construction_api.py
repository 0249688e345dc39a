"""Issue 37 through the HTTP API, with the real OpenAI client against the local OpenAI-protocol stub:

* items 1 and 2: a run whose summary model answers SmolLM2's failures (a refusal, the template echoed, an
  invented identifier, empty sections) answers the user all the same, on the folded messages' extractive
  summary, labelled with the refusal in the event, the record, the thread page's card and the admin;
* item 4: every summary call is in the thread's spend-guard ledger, a run that then fails included;
* item 5: a summary that is not applied leaves no history section (``search_history`` found it twice)."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from agent_platform.workdir import workdir_for
from compression.models import CompressionRecord
from context_engine.state import SUMMARY_CALLS_KEY, SUMMARY_EVENT_KEY
from context_engine.summary.reading import summary_body
from conversations.models import AgentRun
from tests.compression._threads import repository_for, state_fragment, workdir_files
from tests.context_engine.chats import as_summary, conversation_messages
from tests.context_engine.summary.bad_summaries import REFUSAL
from tests.context_engine.summary.smollm2_replies import SMOLLM2_REPLIES
from tests.conversations.test_safety_through_the_api import _agent, _post, _summary_calls

pytestmark = pytest.mark.django_db

# The four fault kinds of the issue, as a summary model answered them; the code each is refused with.
FAULTS = {
    "refusal": (REFUSAL, "not_a_summary"),
    "echoed_template": (SMOLLM2_REPLIES["template_echo"][0], "template_echo"),
    "invented_identifiers": (
        "## SESSION INTENT\nQuestion 0: what does document 0 say about compression?\n\n"
        "## USER REQUIREMENTS AND PREFERENCES\nNone.\n\n## PROGRESS AND DECISIONS\nNone.\n\n"
        "## ARTIFACTS AND REFERENCES\n- https://example.com/doc/0\n- /srv/compression/config.yaml\n\n"
        "## NEXT STEPS\nNone.",
        "invented_identifiers",
    ),
    "empty_sections": (SMOLLM2_REPLIES["empty_sections"][0], "empty_section"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_refused_summary_becomes_a_labelled_extractive_one_and_the_run_answers(
    client, admin_client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks, fault
):
    answer, code = FAULTS[fault]
    openai_stub.context_overflow().reply(answer).reply("Document 5 says the same.")
    agent = _agent(openai_stub, monkeypatch)

    thread, run = _post(
        client,
        user,
        agent,
        "And document 5?",
        django_capture_on_commit_callbacks,
        history=conversation_messages(5),
    )

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert len(_summary_calls(openai_stub)) == 1
    memory = summary_body(repository_for(thread).get_values()[SUMMARY_EVENT_KEY]["summary_message"].content)
    assert "Question 0: what does document 0 say about compression?" in memory  # the fold's own words
    assert "/srv/compression/config.yaml" not in memory and "I'm sorry" not in memory
    assert "What the user is trying to achieve" not in memory  # never the template
    record = CompressionRecord.objects.get(conversation=thread, status=CompressionRecord.Status.COMPLETED)
    assert record.loss_report["summary_kind"] == "extractive"
    assert record.loss_report["refusal"]["code"] == code
    if fault == "invented_identifiers":
        assert record.loss_report["refusal"]["invented_identifiers"] == ["/srv/compression/config.yaml"]
        assert record.loss_report["invented"] == 1
    card = state_fragment(client, thread)
    assert 'data-summary-kind="extractive"' in card and "Extractive summary" in card
    assert escape(record.loss_report["refusal"]["reason"]) in card
    admin_page = admin_client.get(
        f"/admin/compression/compressionrecord/{record.pk}/change/"
    ).content.decode()
    assert (
        "Extractive summary" in admin_page
        and "Extractive (the model&#x27;s summary was refused" in admin_page
    )


def test_a_faithful_summary_is_the_models_and_says_so(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    faithful = as_summary("## SESSION INTENT\nQuestion 0: what does document 0 say about compression?")
    openai_stub.context_overflow().reply(faithful).reply("Document 5 says the same.")
    agent = _agent(openai_stub, monkeypatch)
    thread, run = _post(
        client,
        user,
        agent,
        "And document 5?",
        django_capture_on_commit_callbacks,
        history=conversation_messages(5),
    )
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    record = CompressionRecord.objects.get(conversation=thread, status=CompressionRecord.Status.COMPLETED)
    assert record.loss_report["summary_kind"] == "model" and record.loss_report["refusal"] is None
    assert "Extractive summary" not in state_fragment(client, thread)


def test_every_summary_call_is_in_the_ledger_when_the_run_then_fails(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    # A refused summary, its repair try (refused too), then the model's own call fails: the run fails and
    # its state update with it; both summary calls were billed all the same.
    openai_stub.context_overflow().reply(REFUSAL).reply(REFUSAL)
    openai_stub.error(500, {"error": {"message": "upstream exploded", "type": "server_error"}})
    openai_stub.error(500, {"error": {"message": "upstream exploded", "type": "server_error"}})
    openai_stub.error(500, {"error": {"message": "upstream exploded", "type": "server_error"}})
    agent = _agent(openai_stub, monkeypatch, summary_repair_pass=True)

    thread, run = _post(
        client,
        user,
        agent,
        "And document 5?",
        django_capture_on_commit_callbacks,
        history=conversation_messages(5),
    )

    run.refresh_from_db()
    assert run.status == AgentRun.Status.FAILED
    assert len(_summary_calls(openai_stub)) == 2
    values = repository_for(thread).get_values()
    assert len(values[SUMMARY_CALLS_KEY]) == 2  # was 0: the failed run's update was lost
    assert SUMMARY_EVENT_KEY not in values  # the summary itself was never applied
    # ...and no history section names it: a later summary will not be found twice by search_history.
    history = [p for p in workdir_files(thread) if p.startswith("outputs/conversation_history/")]
    assert all(workdir_for(thread).read_text(path) == "" for path in history)


def test_the_ledger_holds_each_call_once_when_the_run_succeeds(
    client, user, openai_stub, monkeypatch, django_capture_on_commit_callbacks
):
    openai_stub.context_overflow().reply(REFUSAL).reply(REFUSAL).reply("Answer.")
    agent = _agent(openai_stub, monkeypatch, summary_repair_pass=True)
    thread, run = _post(
        client,
        user,
        agent,
        "And document 5?",
        django_capture_on_commit_callbacks,
        history=conversation_messages(5),
    )
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert len(_summary_calls(openai_stub)) == 2
    assert len(repository_for(thread).get_values()[SUMMARY_CALLS_KEY]) == 2

"""Agents explained: the description on the list and on an empty thread, the starter prompts configured
in the admin (owner only, empty threads only), and the offline model answering in the page's language."""

from __future__ import annotations

import pytest
from django.conf import settings

from agent_platform.selectors import MAX_STARTERS, agent_starters
from conversations.models import AgentRun, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def described(agent):
    agent.description = "Answers questions about the team handbook."
    agent.starter_prompts = (
        "Summarise the handbook\n\n  What changed this week?  \nList the files\nfour\nfive"
    )
    agent.save()
    return agent


def test_starters_are_the_non_empty_lines_at_most_four(described):
    assert agent_starters(described) == [
        "Summarise the handbook",
        "What changed this week?",
        "List the files",
        "four",
    ]
    assert len(agent_starters(described)) == MAX_STARTERS


def test_the_list_describes_each_enabled_agent(client, user, described):
    client.force_login(user)
    page = client.get("/").content.decode()
    assert "Answers questions about the team handbook." in page


def test_an_empty_thread_shows_the_description_and_the_starters_to_its_owner(client, user, thread, described):
    client.force_login(user)
    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert 'id="agent-intro" class="agent-intro">' in page  # not hidden
    assert "Answers questions about the team handbook." in page
    assert 'data-prompt="What changed this week?"' in page


def test_a_reader_sees_the_description_but_no_starters(client, other_user, thread, described):
    from django.contrib.auth.models import Permission

    other_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(other_user)
    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert "Answers questions about the team handbook." in page
    assert "data-prompt=" not in page


def test_a_thread_with_messages_hides_the_introduction(client, user, thread, described):
    Message.objects.create(conversation=thread, seq=1, role="user", content="hi", lc_message_id="u1")
    client.force_login(user)
    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert 'id="agent-intro" class="agent-intro" hidden>' in page


@pytest.mark.parametrize(
    ("language", "expected", "absent"),
    [("zh-hans", "离线模型", "Offline model"), ("en", "Offline model", "离线模型")],
)
def test_the_offline_model_answers_in_the_language_of_the_page(
    client, user, thread, language, expected, absent, django_capture_on_commit_callbacks
):
    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/threads/{thread.thread_id}/messages",
            {"content": "你好 hello"},
            headers={"x-requested-with": "fetch"},
        )
    assert response.status_code == 202, response.content
    run = AgentRun.objects.get(conversation=thread)
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert run.language == language
    reply = Message.objects.get(conversation=thread, role="assistant").content
    assert expected in reply and absent not in reply
    assert "你好 hello" in reply


def test_the_api_passes_the_language_of_the_request_too(
    client, bearer, thread, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages",
            {"content": "hello"},
            content_type="application/json",
            headers={**bearer, "Accept-Language": "zh-Hans"},
        )
    assert response.status_code == 202, response.content
    reply = Message.objects.get(conversation=thread, role="assistant").content
    assert reply.startswith("（离线模型")

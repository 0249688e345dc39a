"""The staff pressure page: staff-only, visible threads by pressure, histogram bins counted by the database."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from conversations.models import Conversation

pytestmark = pytest.mark.django_db


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

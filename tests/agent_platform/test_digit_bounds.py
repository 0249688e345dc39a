"""Issue 38: a number of five thousand digits in an admin field, a query string or a tool's argument
is a 400 (or simply no match), never a 500 from Python's 4,300-digit limit or a database overflow."""

from __future__ import annotations

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from agent_platform.knowledge.selectors import kb_get
from agent_platform.numbers import ROW_ID_MAX, whole_number

pytestmark = pytest.mark.django_db
HUGE = "9" * 5000
TOO_BIG_ROW = str(ROW_ID_MAX + 1)


@pytest.mark.parametrize("value", [HUGE, "0" * 4999 + "7" * 11, "²", "-1", "1e3"])
def test_retune_with_a_number_past_any_bound_answers_a_400_form_error(client, admin_user, agent, value):
    client.force_login(admin_user)
    response = client.get(reverse("agent-retune", args=[agent.pk]), {"summary_threshold": value})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_value" and "whole number" in body["message"]


@pytest.mark.parametrize("field", ["context_window", "summary_threshold", "summary_pinned_token_limit"])
def test_every_typed_number_of_the_agent_form_is_bounded(client, admin_user, agent, field):
    client.force_login(admin_user)
    response = client.get(reverse("agent-figures"), {"agent": agent.pk, field: HUGE})
    assert response.status_code == 400 and response.json()["code"] == "invalid_value"


@pytest.mark.parametrize("value", [HUGE, TOO_BIG_ROW])
def test_row_ids_past_any_bound_are_refused_or_not_found(client, admin_user, agent, value):
    client.force_login(admin_user)
    figures = client.get(reverse("agent-figures"), {"agent": value})
    assert figures.status_code == 400 and figures.json()["code"] == "invalid_value"
    models = client.get(reverse("agent-endpoint-models"), {"endpoint": value})
    assert models.status_code == 400 and models.json()["code"] == "invalid_value"
    endpoint = client.get(reverse("agent-figures"), {"agent": agent.pk, "endpoint": value})
    assert endpoint.status_code == 404 and endpoint.json()["code"] == "not_found"


def test_a_transcript_fragment_after_thousands_of_digits_is_the_whole_transcript(client, user, thread):
    client.force_login(user)
    for value in (HUGE, TOO_BIG_ROW):
        response = client.get(
            reverse("conversations:fragment-messages", args=[thread.thread_id]), {"after": value}
        )
        assert response.status_code == 200


def test_query_kb_names_a_knowledge_base_of_thousands_of_digits_as_no_match():
    assert kb_get(reference=HUGE) is None
    assert kb_get(reference=TOO_BIG_ROW) is None


@given(st.text(max_size=40) | st.integers(min_value=-(10**30), max_value=10**30).map(str))
def test_whole_number_is_a_bounded_int_or_none(raw):
    value = whole_number(raw, maximum=1000)
    assert value is None or (0 <= value <= 1000 and value == int(raw.strip()))

"""Every figure beside its field (issue 27, item 2): the resolved window and its source, the effective
trigger, the hint line and the pinned-token cap in force, from the functions the runtime uses, on the
agent as saved (the page) and as typed (the JSON view the form's script calls)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agent_platform.models import Agent, ModelEndpoint
from context_engine.policy.pressure import hint_tokens

pytestmark = pytest.mark.django_db

FIGURES_URL = reverse("agent-figures")


def _change_url(agent: Agent) -> str:
    return reverse("admin:agent_platform_agent_change", args=[agent.pk])


def test_the_change_page_shows_each_figure_beside_the_threshold(client, admin_user):
    agent = Agent.objects.create(name="Small", slug="small", model_name="gpt-4")  # an 8,192-token window
    client.force_login(admin_user)
    page = client.get(_change_url(agent)).content.decode()
    config = agent.compression_config()
    assert config.trigger_tokens == 7372 and config.pinned_cap == 1843
    assert "Context window: <strong>8,192</strong> tokens" in page
    assert "(known-models table, gpt-4)" in page
    assert "Effective trigger: <strong>7,372</strong> tokens" in page
    assert "capped at 90% of the 8192-token window" in page
    assert f"<strong>{hint_tokens(7372):,}</strong> tokens, where the thread page invites" in page
    # The cap in force, not the field: a quarter of the trigger is below the field's 2,000.
    assert "Pinned-message cap in force: <strong>1,843</strong> tokens" in page
    assert "(a quarter of the trigger; the field says 2,000)" in page
    # Beside the threshold: in the same form row.
    row = page[page.index('name="summary_threshold"') - 2000 : page.index('id="agent-budget"')]
    assert "form-row" not in row.split('name="summary_threshold"')[1]


def test_typed_values_give_the_figures_the_runtime_would_use(client, admin_user, agent):
    client.force_login(admin_user)
    body = client.get(FIGURES_URL, {"agent": agent.pk, "summary_threshold": "2"}).json()
    typed = Agent.objects.get(pk=agent.pk)
    typed.summary_threshold = 2
    config = typed.compression_config()
    figures = body["figures"]
    assert figures["trigger"] == config.trigger_tokens == 2048
    assert figures["pinned_cap"] == config.pinned_cap == 512 and figures["pinned_capped"] is True
    assert figures["hint"] == hint_tokens(2048)
    assert "Pinned-message cap in force: <strong>512</strong> tokens" in body["html"]
    agent.refresh_from_db()
    assert agent.summary_threshold == 100  # nothing saved


def test_the_window_source_follows_field_endpoint_and_table(client, admin_user):
    endpoint = ModelEndpoint.objects.create(
        name="Local", base_url="http://127.0.0.1:9/v1", default_model="house-model", context_window=16384
    )
    agent = Agent.objects.create(name="E", slug="e", endpoint=endpoint, model_name="")
    client.force_login(admin_user)

    def figures(**typed):
        return client.get(FIGURES_URL, {"agent": agent.pk, **typed}).json()["figures"]

    assert (figures()["window"], figures()["window_source"]) == (16384, "endpoint")
    assert (figures(context_window="20000")["window"], figures(context_window="20000")["window_source"]) == (
        20000,
        "field",
    )
    by_table = figures(model_name="qwen3-32b")
    assert (by_table["window"], by_table["window_source"]) == (131072, "table")
    unknown = client.get(FIGURES_URL, {"agent": agent.pk, "model_name": "mystery"}).json()
    assert unknown["figures"]["window_source"] == "none"
    assert "Context window unknown" in unknown["html"]
    offline = figures(endpoint="", model_name="")
    assert (offline["model_name"], offline["window_source"]) == ("offline-extractive", "table")


def test_a_new_agent_gets_figures_but_no_calibration(client, admin_user):
    client.force_login(admin_user)
    page = client.get(reverse("admin:agent_platform_agent_add")).content.decode()
    assert 'id="agent-budget"' in page and "Effective trigger: <strong>102,400</strong>" in page
    assert "Estimate calibration" not in page
    assert "What this threshold would do" not in page
    body = client.get(FIGURES_URL, {"summary_threshold": "8"}).json()
    assert body["figures"]["trigger"] == 8192


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ({"summary_threshold": "abc"}, 400, "invalid_value"),
        ({"summary_threshold": "0"}, 400, "invalid_value"),
        ({"summary_threshold": "-5"}, 400, "invalid_value"),
        ({"summary_threshold": "9" * 30}, 400, "invalid_value"),
        ({"context_window": "1e5"}, 400, "invalid_value"),
        ({"endpoint": "999999"}, 404, "not_found"),
        ({"agent": "999999"}, 404, "not_found"),
        ({"agent": "x"}, 400, "invalid_value"),
    ],
)
def test_bad_typed_values_are_json_errors_not_500s(client, admin_user, query, status, code):
    client.force_login(admin_user)
    client.raise_request_exception = False
    response = client.get(FIGURES_URL, query)
    assert response.status_code == status
    assert response.json()["code"] == code and response.json()["message"]


def test_staff_without_the_tune_permission_see_the_figures_read_only(client, django_user_model, agent):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("ops", password="pw-ops-123", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=["view_agent", "change_agent"]))
    client.force_login(user)
    page = client.get(_change_url(agent)).content.decode()
    assert 'name="summary_threshold"' not in page
    assert "Effective trigger: <strong>102,400</strong>" in page

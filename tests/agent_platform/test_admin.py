"""The admin permission matrix on compression fields, and clear form errors for bad config."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from agent_platform.models import Agent

pytestmark = pytest.mark.django_db


def _change_url(agent: Agent) -> str:
    return reverse("admin:agent_platform_agent_change", args=[agent.pk])


def _form_data(agent: Agent, **overrides) -> dict:
    data = {
        "name": agent.name,
        "slug": agent.slug,
        "description": agent.description,
        "system_prompt": agent.system_prompt,
        "is_enabled": "on",
        "endpoint": agent.endpoint_id or "",
        "model_name": agent.model_name,
        "temperature": agent.temperature,
        "context_window": "",
        "tools": agent.tools,
        "capabilities": agent.capabilities,
        "summary_threshold": agent.summary_threshold,
        "summary_keep_messages": agent.summary_keep_messages,
        "summary_prompt": agent.summary_prompt,
        "summary_tool_result_token_limit": agent.summary_tool_result_token_limit,
        "summary_pinned_token_limit": agent.summary_pinned_token_limit,
        "summary_max_calls_per_hour": agent.summary_max_calls_per_hour,
        "summary_max_input_tokens_per_hour": agent.summary_max_input_tokens_per_hour,
        "summary_index_percent": agent.summary_index_percent,
    }
    if agent.summary_repair_pass:
        data["summary_repair_pass"] = "on"
    data.update(overrides)
    return data


def _staff(django_user_model, *, tune: bool):
    user = django_user_model.objects.create_user("ops", password="pw-ops-123", is_staff=True)
    codenames = ["view_agent", "change_agent"] + (["tune_compression"] if tune else [])
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def test_superuser_can_change_compression_fields(client, admin_user, agent):
    client.force_login(admin_user)
    response = client.post(_change_url(agent), _form_data(agent, summary_threshold=64))
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.summary_threshold == 64


def test_staff_with_tune_permission_can_change_compression_fields(client, django_user_model, agent):
    client.force_login(_staff(django_user_model, tune=True))
    response = client.post(_change_url(agent), _form_data(agent, summary_keep_messages=3))
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.summary_keep_messages == 3


def test_staff_without_tune_permission_sees_compression_fields_read_only(client, django_user_model, agent):
    client.force_login(_staff(django_user_model, tune=False))
    page = client.get(_change_url(agent))
    assert page.status_code == 200
    assert 'name="summary_threshold"' not in page.content.decode()
    assert 'name="description"' in page.content.decode()

    response = client.post(
        _change_url(agent), _form_data(agent, summary_threshold=1, description="edited by ops")
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.description == "edited by ops"
    assert agent.summary_threshold == 100  # the read-only field ignored the posted value


def test_pin_cap_repair_pass_and_spend_guard_are_compression_fields(client, django_user_model, agent):
    client.force_login(_staff(django_user_model, tune=False))
    page = client.get(_change_url(agent)).content.decode()
    for name in (
        "summary_pinned_token_limit",
        "summary_repair_pass",
        "summary_max_calls_per_hour",
        "summary_max_input_tokens_per_hour",
    ):
        assert f'name="{name}"' not in page  # read-only without the tune permission
    client.post(_change_url(agent), _form_data(agent, summary_pinned_token_limit=5, summary_repair_pass="on"))
    agent.refresh_from_db()
    assert agent.summary_pinned_token_limit == 2000 and agent.summary_repair_pass is False


def test_a_tuner_sets_the_pin_cap_repair_pass_and_spend_guard(client, django_user_model, agent):
    client.force_login(_staff(django_user_model, tune=True))
    response = client.post(
        _change_url(agent),
        _form_data(
            agent,
            summary_pinned_token_limit=500,
            summary_repair_pass="on",
            summary_max_calls_per_hour=3,
            summary_max_input_tokens_per_hour=50000,
        ),
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    config = agent.compression_config()
    assert config.pinned_token_limit == 500 and config.repair_pass is True
    assert (config.spend.max_calls_per_hour, config.spend.max_input_tokens_per_hour) == (3, 50000)


def test_the_reference_index_budget_is_a_compression_field_a_tuner_sets(client, django_user_model, agent):
    assert agent.compression_config().index_budget == agent.effective_trigger // 10  # default: 10% of T
    client.force_login(_staff(django_user_model, tune=False))
    assert 'name="summary_index_percent"' not in client.get(_change_url(agent)).content.decode()
    client.post(_change_url(agent), _form_data(agent, summary_index_percent=0))
    agent.refresh_from_db()
    assert agent.summary_index_percent == 10  # read-only without the tune permission
    ops = django_user_model.objects.get(username="ops")
    ops.user_permissions.add(Permission.objects.get(codename="tune_compression"))
    client.force_login(ops)  # a fresh login: permissions are cached per user object
    response = client.post(_change_url(agent), _form_data(agent, summary_index_percent=0))
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.summary_index_percent == 0 and agent.compression_config().index_budget == 0
    over = client.post(_change_url(agent), _form_data(agent, summary_index_percent=51))
    assert over.status_code == 200 and "less than or equal to 50" in over.content.decode()


def test_non_staff_cannot_reach_the_admin(client, user, agent):
    client.force_login(user)
    response = client.get(_change_url(agent))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_invalid_prompt_is_a_form_error_not_a_500(client, admin_user, agent):
    client.force_login(admin_user)
    response = client.post(_change_url(agent), _form_data(agent, summary_prompt="no placeholder"))
    assert response.status_code == 200
    assert "must contain {messages}" in response.content.decode()
    agent.refresh_from_db()
    assert "{messages}" in agent.summary_prompt


def test_a_prompt_with_an_attribute_or_index_placeholder_is_a_form_error_not_a_500(client, admin_user, agent):
    client.force_login(admin_user)
    client.raise_request_exception = False
    for prompt in (
        "{messages.missing}",
        "{messages[key]}",
        "{messages.__class__}",
        "{messages:>99999999999}",
        "{messages!s}",
    ):
        response = client.post(_change_url(agent), _form_data(agent, summary_prompt=prompt))
        assert response.status_code == 200, prompt
        assert response.context["adminform"].form.errors["summary_prompt"], prompt
    agent.refresh_from_db()
    assert agent.summary_prompt.count("{messages}") == 1


def test_zero_threshold_is_a_form_error(client, admin_user, agent):
    client.force_login(admin_user)
    response = client.post(_change_url(agent), _form_data(agent, summary_threshold=0))
    assert response.status_code == 200
    assert "greater than 0" in response.content.decode()


def test_change_page_shows_the_effective_trigger(client, admin_user, agent):
    client.force_login(admin_user)
    page = client.get(_change_url(agent)).content.decode()
    assert "Effective trigger" in page
    assert "102,400" in page


def test_change_page_says_when_the_window_caps_the_trigger(client, admin_user, agent):
    agent.model_name = "gpt-4"
    agent.save()
    client.force_login(admin_user)
    page = client.get(_change_url(agent)).content.decode()
    assert "7,372" in page and "capped at 90% of the 8192-token window" in page


def test_agent_page_shows_the_model_calibration_read_only(client, admin_user, agent):
    from agent_platform.calibration.models import TokenCalibration
    from agent_platform.calibration.selectors import calibration_key

    client.force_login(admin_user)
    page = client.get(_change_url(agent)).content.decode()
    assert "Estimate calibration" in page and "no reported usage yet" in page
    TokenCalibration.objects.create(**calibration_key(agent=agent), factor=0.8125, observations=1234)
    page = client.get(_change_url(agent)).content.decode()
    assert "×0.812 from 1,234 reported requests" in page
    assert 'name="calibration_display"' not in page  # shown, never a form field
    # A posted value is ignored: only reported usage writes it.
    client.post(_change_url(agent), {**_form_data(agent), "calibration_display": "9"})
    assert TokenCalibration.objects.get().factor == 0.8125


def test_staff_who_may_change_agents_set_the_starter_prompts(client, django_user_model, agent):
    client.force_login(_staff(django_user_model, tune=False))
    page = client.get(_change_url(agent)).content.decode()
    assert 'name="starter_prompts"' in page and "One prompt per line" in page
    response = client.post(
        _change_url(agent), _form_data(agent, starter_prompts="Plan my week\nSummarise the handbook")
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.starter_prompts.splitlines() == ["Plan my week", "Summarise the handbook"]

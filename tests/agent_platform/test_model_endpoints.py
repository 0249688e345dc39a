"""Model endpoints: a key only ever goes to its own endpoint's URL, and only holders of
``manage_model_endpoints`` create or change endpoints (also by crafted POSTs)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.urls import reverse

from agent_platform.models import Agent, ModelEndpoint, key_env_error
from agent_platform.runtime.models import ModelConfigurationError, chat_model_for
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.django_db

ADD_URL = reverse("admin:agent_platform_modelendpoint_add")


def _change_url(endpoint: ModelEndpoint) -> str:
    return reverse("admin:agent_platform_modelendpoint_change", args=[endpoint.pk])


def _endpoint_form(**overrides) -> dict:
    data = {
        "name": "Provider",
        "base_url": "https://llm.example/v1",
        "api_key_env": "PROVIDER_API_KEY",
        "default_model": "",
        "context_window": "",
    }
    return {**data, **overrides}


def _staff(django_user_model, *codenames: str, username: str = "ops"):
    user = django_user_model.objects.create_user(username, password="pw-ops-123", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
def second_stub():
    stub = OpenAIStub().start()
    try:
        yield stub
    finally:
        stub.stop()


# --- the key-variable rule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "SECRET_KEY",  # Django's own
        "WEB_SEARCH_API_KEY",  # ends in _API_KEY, but it is a setting of this server
        "MODEL_KEY_ENV_ALLOWLIST",
        "DATABASE_URL",
        "REDIS_URL",
        "PATH",
        "AWS_SECRET_ACCESS_KEY",
        "openai_api_key",
        "OPENAI API KEY",
        "",
    ],
)
def test_a_key_variable_outside_the_allow_list_is_refused(name):
    assert key_env_error(name) is not None


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY"])
def test_names_ending_in_api_key_are_allowed_by_default(name):
    assert key_env_error(name) is None


def test_a_wider_allow_list_still_never_allows_a_setting(settings):
    settings.MODEL_KEY_ENV_ALLOWLIST = ["*"]
    assert key_env_error("VLLM_TOKEN") is None
    assert key_env_error("SECRET_KEY") is not None
    assert key_env_error("DATABASE_URL") is not None


def test_a_narrower_allow_list_refuses_other_api_key_names(settings):
    settings.MODEL_KEY_ENV_ALLOWLIST = ["OPENAI_API_KEY"]
    assert key_env_error("OPENAI_API_KEY") is None
    assert "MODEL_KEY_ENV_ALLOWLIST" in key_env_error("DEEPSEEK_API_KEY")


def test_an_env_name_outside_the_allow_list_is_a_form_error(client, admin_user):
    client.force_login(admin_user)
    for name in ("SECRET_KEY", "WEB_SEARCH_API_KEY", "HOME"):
        response = client.post(ADD_URL, _endpoint_form(api_key_env=name))
        assert response.status_code == 200, name
        assert response.context["adminform"].form.errors["api_key_env"], name
    assert not ModelEndpoint.objects.exists()


def test_a_holder_of_the_permission_creates_an_endpoint(client, django_user_model, settings):
    settings.MODEL_KEY_BINDINGS = "PROVIDER_API_KEY=https://llm.example"
    client.force_login(_staff(django_user_model, "manage_model_endpoints"))
    response = client.post(ADD_URL, _endpoint_form())
    assert response.status_code == 302
    assert ModelEndpoint.objects.get().api_key_env == "PROVIDER_API_KEY"


# --- who may manage endpoints ---------------------------------------------------------------------


def test_staff_without_the_permission_cannot_create_endpoints_even_by_a_crafted_post(
    client, django_user_model
):
    # Every permission of the app except the dedicated one: agents, tokens, knowledge bases, viewing.
    others = Permission.objects.filter(content_type__app_label="agent_platform").exclude(
        codename="manage_model_endpoints"
    )
    staff = _staff(django_user_model)
    staff.user_permissions.set(others)
    client.force_login(staff)
    assert client.get(ADD_URL).status_code == 403
    assert client.post(ADD_URL, _endpoint_form()).status_code == 403
    assert not ModelEndpoint.objects.exists()


def test_staff_without_the_permission_cannot_change_or_delete_an_endpoint(client, django_user_model):
    endpoint = ModelEndpoint.objects.create(name="Provider", base_url="https://llm.example/v1")
    client.force_login(_staff(django_user_model, "view_modelendpoint", "change_agent", "view_agent"))

    page = client.get(_change_url(endpoint))
    assert page.status_code == 200  # may look
    assert 'name="base_url"' not in page.content.decode()
    crafted = _endpoint_form(base_url="https://attacker.example/v1", api_key_env="OPENAI_API_KEY")
    assert client.post(_change_url(endpoint), crafted).status_code == 403
    delete_url = reverse("admin:agent_platform_modelendpoint_delete", args=[endpoint.pk])
    assert client.post(delete_url, {"post": "yes"}).status_code == 403

    endpoint.refresh_from_db()
    assert (endpoint.base_url, endpoint.api_key_env) == ("https://llm.example/v1", "")


def test_the_endpoint_model_has_no_permission_but_view_and_the_dedicated_one():
    codenames = set(
        Permission.objects.filter(content_type__model="modelendpoint").values_list("codename", flat=True)
    )
    assert codenames == {"view_modelendpoint", "manage_model_endpoints"}


def test_the_endpoint_page_lists_the_agents_that_use_it(client, admin_user):
    endpoint = ModelEndpoint.objects.create(name="Provider", base_url="https://llm.example/v1")
    Agent.objects.create(name="Writer", slug="writer", endpoint=endpoint, model_name="gpt-4o")
    Agent.objects.create(name="Offline", slug="offline")
    client.force_login(admin_user)
    page = client.get(_change_url(endpoint)).content.decode()
    assert "Writer" in page and "Offline" not in page
    listing = client.get(reverse("admin:agent_platform_modelendpoint_changelist"))
    assert listing.context["cl"].result_list[0].agent_total == 1


# --- a key never leaves for another host ----------------------------------------------------------


def test_a_key_is_only_sent_to_its_own_endpoint(monkeypatch, openai_stub, second_stub, settings):
    settings.MODEL_KEY_BINDINGS = f"PROVIDER_API_KEY={openai_stub.origin}"
    monkeypatch.setenv("PROVIDER_API_KEY", "sk-provider-secret")
    provider = ModelEndpoint.objects.create(
        name="Provider", base_url=openai_stub.base_url, api_key_env="PROVIDER_API_KEY"
    )
    other = ModelEndpoint.objects.create(name="Other host", base_url=second_stub.base_url)
    agent = Agent.objects.create(name="A", slug="a", endpoint=provider, model_name="gpt-4o")

    openai_stub.reply("hello")
    chat_model_for(agent).invoke("hi")
    agent.endpoint = other
    agent.save()
    second_stub.reply("hello")
    chat_model_for(Agent.objects.get(pk=agent.pk)).invoke("hi")

    assert openai_stub.authorizations == ["Bearer sk-provider-secret"]
    assert second_stub.authorizations == ["Bearer not-needed"]


def test_a_crafted_agent_post_cannot_set_a_url_or_a_key_variable(client, django_user_model, second_stub):
    from tests.agent_platform.test_admin import _form_data

    agent = Agent.objects.create(name="A", slug="a")
    client.force_login(_staff(django_user_model, "view_agent", "change_agent"))
    crafted = _form_data(
        agent,
        description="edited",
        base_url=second_stub.base_url,
        api_key_env="SECRET_KEY",
        provider="openai",
    )
    assert (
        client.post(reverse("admin:agent_platform_agent_change", args=[agent.pk]), crafted).status_code == 302
    )
    agent.refresh_from_db()
    assert agent.description == "edited" and agent.endpoint is None
    assert not hasattr(agent, "base_url") and not hasattr(agent, "api_key_env")


def test_a_row_written_around_the_admin_cannot_send_a_setting_as_a_key(monkeypatch, openai_stub):
    endpoint = ModelEndpoint.objects.create(
        name="Bad", base_url=openai_stub.base_url, api_key_env="SECRET_KEY"
    )
    monkeypatch.setenv("SECRET_KEY", "the-django-secret")
    agent = Agent(slug="a", endpoint=endpoint, model_name="gpt-4o")
    with pytest.raises(ModelConfigurationError, match="SECRET_KEY"):
        chat_model_for(agent)
    assert openai_stub.authorizations == []


def test_an_agent_without_a_model_name_uses_the_endpoint_default(openai_stub):
    endpoint = ModelEndpoint.objects.create(
        name="Local", base_url=openai_stub.base_url, default_model="my-model", context_window=32_000
    )
    agent = Agent(name="A", slug="a", endpoint=endpoint, model_name="")
    agent.full_clean()
    assert chat_model_for(agent).model_name == "my-model"
    assert agent.resolved_context_window == 32_000
    agent.endpoint = ModelEndpoint.objects.create(name="Bare", base_url=openai_stub.base_url)
    with pytest.raises(ValidationError) as excinfo:
        agent.full_clean()
    assert "model_name" in excinfo.value.message_dict


def test_the_estimator_profile_follows_the_endpoint_default_model(openai_stub):
    from agent_platform.runtime.middleware import compression_middleware_for, token_usage_middleware_for
    from context_engine.store import MemoryStore
    from context_engine.tokens.messages import profile_for_model

    endpoint = ModelEndpoint.objects.create(
        name="Qwen", base_url=openai_stub.base_url, default_model="qwen3-32b"
    )
    agent = Agent.objects.create(name="A", slug="a", endpoint=endpoint, model_name="")
    expected = profile_for_model("qwen3-32b")
    assert expected != profile_for_model("")  # the test means something only if the profiles differ
    assert compression_middleware_for(agent=agent, workdir=MemoryStore(), model=None).profile == expected
    assert token_usage_middleware_for(agent=agent).profile == expected
    assert agent.compression_config().model_name == "qwen3-32b"

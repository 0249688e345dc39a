"""Keys are bound to origins by the operator (``MODEL_KEY_BINDINGS``): an endpoint whose URL's origin
is not bound to its key variable is refused on save and never sent the key at run time, and a redirect
to another origin is not followed."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import reverse

from agent_platform.key_bindings import Origin, key_bindings, parse_bindings, url_origin
from agent_platform.models import Agent, ModelEndpoint
from agent_platform.runtime.models import ModelConfigurationError, chat_model_for
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.django_db

ADD_URL = reverse("admin:agent_platform_modelendpoint_add")
BINDINGS = "OPENAI_API_KEY=https://api.openai.com, DEEPSEEK_API_KEY=https://api.deepseek.com"


@pytest.fixture
def second_stub():
    stub = OpenAIStub().start()
    try:
        yield stub
    finally:
        stub.stop()


def _form(**overrides) -> dict:
    data = {"name": "OpenAI", "base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY"}
    return {**data, "default_model": "", "context_window": "", **overrides}


# --- the rule ------------------------------------------------------------------------------------


def test_bindings_parse_into_exact_origins():
    bindings = parse_bindings(BINDINGS + ",\nOPENAI_API_KEY=http://127.0.0.1:8001")
    assert bindings == {
        "OPENAI_API_KEY": {Origin("https", "api.openai.com", 443), Origin("http", "127.0.0.1", 8001)},
        "DEEPSEEK_API_KEY": {Origin("https", "api.deepseek.com", 443)},
    }
    assert url_origin("HTTPS://API.OpenAI.com:443/v1") == Origin("https", "api.openai.com", 443)


@pytest.mark.parametrize(
    "raw",
    [
        "OPENAI_API_KEY",  # no origin
        "openai_api_key=https://api.openai.com",  # not a variable name
        "OPENAI_API_KEY=https://api.openai.com/v1",  # a path: not an origin
        "OPENAI_API_KEY=ftp://api.openai.com",
        "OPENAI_API_KEY=https://user@api.openai.com",
        "OPENAI_API_KEY=https://api.openai.com:99999",
    ],
)
def test_a_malformed_binding_stops_the_server_at_its_checks(settings, raw):
    with pytest.raises(ValueError):
        parse_bindings(raw)
    settings.MODEL_KEY_BINDINGS = raw
    with pytest.raises(ImproperlyConfigured):
        key_bindings()
    with pytest.raises(SystemCheckError, match="MODEL_KEY_BINDINGS"):
        call_command("check")


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/v1",  # another host
        "http://api.openai.com/v1",  # another scheme
        "https://api.openai.com:8443/v1",  # another port
        "https://api.openai.com.evil.example/v1",
        "https://api.deepseek.com/v1",  # bound, but to another variable
    ],
)
def test_an_endpoint_whose_origin_is_not_bound_to_its_key_is_refused_on_save(
    client, admin_user, settings, url
):
    settings.MODEL_KEY_BINDINGS = BINDINGS
    client.force_login(admin_user)
    response = client.post(ADD_URL, _form(base_url=url))
    assert response.status_code == 200
    assert "MODEL_KEY_BINDINGS" in str(response.context["adminform"].form.errors["base_url"])
    assert not ModelEndpoint.objects.exists()
    with pytest.raises(ValidationError):
        ModelEndpoint(name="x", base_url=url, api_key_env="OPENAI_API_KEY").full_clean()


def test_a_bound_origin_and_a_keyless_endpoint_are_saved(client, admin_user, settings):
    settings.MODEL_KEY_BINDINGS = BINDINGS
    client.force_login(admin_user)
    assert client.post(ADD_URL, _form(base_url="https://api.openai.com:443/v1")).status_code == 302
    assert (
        client.post(
            ADD_URL, _form(name="vLLM", base_url="http://localhost:8001/v1", api_key_env="")
        ).status_code
        == 302
    )
    assert ModelEndpoint.objects.count() == 2


def test_with_no_bindings_no_endpoint_may_name_a_key(client, admin_user, settings):
    settings.MODEL_KEY_BINDINGS = ""
    client.force_login(admin_user)
    response = client.post(ADD_URL, _form())
    assert "bound to no origin" in str(response.context["adminform"].form.errors["base_url"])


def test_the_admin_shows_the_bindings_and_which_endpoints_get_their_key(client, admin_user, settings):
    settings.MODEL_KEY_BINDINGS = BINDINGS
    bound = ModelEndpoint.objects.create(
        name="OpenAI", base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"
    )
    ModelEndpoint.objects.create(
        name="Moved", base_url="https://elsewhere.example/v1", api_key_env="OPENAI_API_KEY"
    )
    client.force_login(admin_user)
    page = client.get(reverse("admin:agent_platform_modelendpoint_change", args=[bound.pk])).content.decode()
    assert "<code>DEEPSEEK_API_KEY</code> → https://api.deepseek.com" in page
    assert "<code>OPENAI_API_KEY</code> → https://api.openai.com" in page
    listing = client.get(reverse("admin:agent_platform_modelendpoint_changelist")).content.decode()
    cells = re.findall(r'class="field-key_bound"><img [^>]*alt="(\w+)"', listing)
    assert sorted(cells) == ["False", "True"]


# --- run time ------------------------------------------------------------------------------------


def test_a_url_changed_after_the_key_was_set_is_never_sent_the_key(monkeypatch, openai_stub, second_stub):
    monkeypatch.setenv("STUB_API_KEY", "sk-bound-secret")
    endpoint = ModelEndpoint(name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY")
    endpoint.full_clean()
    endpoint.save()
    agent = Agent.objects.create(name="A", slug="a", endpoint=endpoint, model_name="gpt-4o")
    openai_stub.reply("hello")
    assert chat_model_for(agent).invoke("hi").content == "hello"

    # Changed around the admin's validation (a crafted row, a data migration, a shell).
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=second_stub.base_url)
    second_stub.reply("stolen")
    with pytest.raises(ModelConfigurationError, match="STUB_API_KEY"):
        chat_model_for(Agent.objects.get(pk=agent.pk)).invoke("hi")
    assert openai_stub.authorizations == ["Bearer sk-bound-secret"]
    assert second_stub.authorizations == []


def test_a_binding_the_operator_withdrew_stops_the_key(monkeypatch, openai_stub, settings):
    monkeypatch.setenv("STUB_API_KEY", "sk-bound-secret")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    agent = Agent.objects.create(name="A", slug="a", endpoint=endpoint, model_name="gpt-4o")
    settings.MODEL_KEY_BINDINGS = "STUB_API_KEY=http://127.0.0.1:1"  # same host, another port
    with pytest.raises(ModelConfigurationError):
        chat_model_for(agent)
    assert openai_stub.authorizations == []


def test_a_redirect_to_another_origin_is_not_followed_with_the_key(monkeypatch, openai_stub, second_stub):
    monkeypatch.setenv("STUB_API_KEY", "sk-bound-secret")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    agent = Agent.objects.create(name="A", slug="a", endpoint=endpoint, model_name="gpt-4o")
    for _attempt in range(3):  # the client retries a failed connection twice
        openai_stub.redirect(f"{second_stub.base_url}/chat/completions")
    second_stub.reply("stolen").reply("stolen").reply("stolen")

    with pytest.raises(Exception, match="Connection error|refused to leave") as excinfo:
        chat_model_for(agent).invoke("hi")

    assert "stolen" not in str(excinfo.value)
    assert second_stub.authorizations == [] and second_stub.requests == []
    assert set(openai_stub.authorizations) == {"Bearer sk-bound-secret"}


def test_a_redirect_within_the_origin_is_followed(monkeypatch, openai_stub):
    monkeypatch.setenv("STUB_API_KEY", "sk-bound-secret")
    endpoint = ModelEndpoint.objects.create(
        name="stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY"
    )
    agent = Agent.objects.create(name="A", slug="a", endpoint=endpoint, model_name="gpt-4o")
    openai_stub.redirect(f"{openai_stub.base_url}/chat/completions").reply("same host")
    assert chat_model_for(agent).invoke("hi").content == "same host"

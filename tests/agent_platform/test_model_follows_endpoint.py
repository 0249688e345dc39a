"""The agent's model follows its endpoint (issue 27, item 1): no offline name pre-filled, the
endpoint's models asked from the admin through the client-building code (the key stays on the server),
a clear message when the endpoint cannot answer, and a name its known list lacks refused on save.
Against the local OpenAI-protocol stub."""

from __future__ import annotations

import socket

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from agent_platform.model_catalog import OFFLINE_MODEL_NAME
from agent_platform.models import Agent, ModelEndpoint
from tests.agent_platform.test_admin import _form_data

pytestmark = pytest.mark.django_db

ADD_URL = reverse("admin:agent_platform_agent_add")
MODELS_URL = reverse("agent-endpoint-models")
KEY = "sk-stub-secret-0123456789"


@pytest.fixture
def endpoint(openai_stub, monkeypatch):
    monkeypatch.setenv("STUB_API_KEY", KEY)
    openai_stub.models = ["gpt-4o-mini", "qwen3-32b"]
    return ModelEndpoint.objects.create(
        name="Stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY", default_model="gpt-4o-mini"
    )


def _new_agent_form(**overrides) -> dict:
    data = _form_data(Agent(name="New", slug="new"), **overrides)
    data.pop("summary_repair_pass", None)
    return data


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_the_add_form_does_not_prefill_the_offline_model(client, admin_user):
    client.force_login(admin_user)
    form = client.get(ADD_URL).context["adminform"].form
    assert form.initial["model_name"] == ""
    page = client.get(ADD_URL).content.decode()
    assert f'value="{OFFLINE_MODEL_NAME}"' not in page
    assert 'list="model-name-options"' in page and "static/js/admin-agent.js" in page.replace(
        "/static/", "static/"
    )


def test_the_endpoint_lists_its_models_and_the_key_never_reaches_the_browser(
    client, admin_user, endpoint, openai_stub
):
    client.force_login(admin_user)
    response = client.get(MODELS_URL, {"endpoint": endpoint.pk})
    assert response.status_code == 200
    body = response.json()
    assert body["models"] == ["gpt-4o-mini", "qwen3-32b"]
    assert body["default_model"] == "gpt-4o-mini"
    assert body["message"] == "Stub lists 2 models."
    assert openai_stub.authorizations[-1] == f"Bearer {KEY}"  # the endpoint's own key, to its own URL
    assert KEY not in response.content.decode()


def test_an_endpoint_that_cannot_answer_gets_a_clear_message_not_a_500(
    client, admin_user, endpoint, openai_stub
):
    client.force_login(admin_user)
    openai_stub.models_error = (500, {"error": {"message": "boom", "type": "server_error"}})
    response = client.get(MODELS_URL, {"endpoint": endpoint.pk, "refresh": "1"})
    assert response.status_code == 502
    body = response.json()
    assert body["code"] == "endpoint_unavailable"
    assert "answered HTTP 500" in body["message"] and "not checked" in body["message"]
    assert body["default_model"] == "gpt-4o-mini"

    unreachable = ModelEndpoint.objects.create(name="Gone", base_url=_closed_port_url())
    body = client.get(MODELS_URL, {"endpoint": unreachable.pk}).json()
    assert body["code"] == "endpoint_unavailable" and "could not be reached" in body["message"]


def test_an_endpoint_whose_key_is_not_set_says_so(client, admin_user, endpoint, monkeypatch):
    monkeypatch.delenv("STUB_API_KEY")
    client.force_login(admin_user)
    response = client.get(MODELS_URL, {"endpoint": endpoint.pk, "refresh": "1"})
    assert response.status_code == 502 and "STUB_API_KEY" in response.json()["message"]


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ({}, 400, "invalid_value"),
        ({"endpoint": "x"}, 400, "invalid_value"),
        ({"endpoint": "999999"}, 404, "not_found"),
    ],
)
def test_a_bad_endpoint_reference_is_a_json_error(client, admin_user, query, status, code):
    client.force_login(admin_user)
    response = client.get(MODELS_URL, query)
    assert response.status_code == status and response.json()["code"] == code


def test_saving_refuses_a_model_the_endpoint_does_not_list(client, admin_user, endpoint):
    client.force_login(admin_user)
    response = client.post(ADD_URL, _new_agent_form(endpoint=endpoint.pk, model_name="gpt-4o-typo"))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["model_name"]
    assert "does not list a model named gpt-4o-typo" in errors[0] and "qwen3-32b" in errors[0]
    assert not Agent.objects.filter(slug="new").exists()

    response = client.post(ADD_URL, _new_agent_form(endpoint=endpoint.pk, model_name="qwen3-32b"))
    assert response.status_code == 302
    assert Agent.objects.get(slug="new").resolved_model_name == "qwen3-32b"


def test_an_unknown_name_gets_its_own_error_and_no_other(client, admin_user, endpoint):
    """Issue 39: the refused name never reached the instance, whose default (the offline model's name)
    used to earn a second, unrelated error."""
    client.force_login(admin_user)
    response = client.post(ADD_URL, _new_agent_form(endpoint=endpoint.pk, model_name="gpt-4o-typo"))
    form = response.context["adminform"].form
    assert form.errors["model_name"] == [
        "The endpoint Stub does not list a model named gpt-4o-typo. It lists: gpt-4o-mini, qwen3-32b."
    ]
    assert OFFLINE_MODEL_NAME not in response.content.decode()
    assert set(form.errors) == {"model_name"}


def test_an_endpoint_serving_one_model_gives_it_when_none_is_named(client, admin_user, openai_stub):
    openai_stub.models = ["smollm2-135m"]
    single = ModelEndpoint.objects.create(name="Single", base_url=openai_stub.base_url, default_model="")
    client.force_login(admin_user)
    listed = client.get(MODELS_URL, {"endpoint": single.pk}).json()
    assert (listed["default_model"], listed["models"]) == ("", ["smollm2-135m"])
    response = client.post(ADD_URL, _new_agent_form(endpoint=single.pk, model_name="", context_window=8192))
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Agent.objects.get(slug="new").model_name == "smollm2-135m"

    openai_stub.models = ["one", "two"]
    two = ModelEndpoint.objects.create(name="Two", base_url=openai_stub.base_url, default_model="")
    response = client.post(
        ADD_URL, _new_agent_form(slug="other", endpoint=two.pk, model_name="", context_window=8192)
    )
    assert response.context["adminform"].form.errors["model_name"] == [
        "Name a model: this endpoint has no default model."
    ]


def test_an_empty_name_takes_the_endpoint_default_which_is_checked_too(
    client, admin_user, endpoint, openai_stub
):
    client.force_login(admin_user)
    assert client.post(ADD_URL, _new_agent_form(endpoint=endpoint.pk, model_name="")).status_code == 302
    assert Agent.objects.get(slug="new").resolved_model_name == "gpt-4o-mini"

    endpoint.default_model = "retired-model"
    endpoint.save()
    response = client.post(ADD_URL, _new_agent_form(slug="other", endpoint=endpoint.pk, model_name=""))
    assert (
        "does not list a model named retired-model"
        in response.context["adminform"].form.errors["model_name"][0]
    )


def test_when_the_list_is_not_known_the_name_is_not_refused(client, admin_user, openai_stub):
    openai_stub.models_error = (404, {"error": {"message": "no such route", "type": "not_found"}})
    endpoint = ModelEndpoint.objects.create(name="Quiet", base_url=openai_stub.base_url, default_model="m")
    client.force_login(admin_user)
    response = client.post(
        ADD_URL, _new_agent_form(endpoint=endpoint.pk, model_name="anything-goes", context_window=32768)
    )
    assert response.status_code == 302
    assert Agent.objects.get(slug="new").model_name == "anything-goes"


def test_the_offline_model_name_is_refused_with_an_endpoint(client, admin_user, endpoint):
    client.force_login(admin_user)
    response = client.post(ADD_URL, _new_agent_form(endpoint=endpoint.pk, model_name=OFFLINE_MODEL_NAME))
    assert "built-in offline model" in response.context["adminform"].form.errors["model_name"][0]


def test_an_unchanged_model_is_not_asked_for_again(client, admin_user, endpoint, openai_stub):
    agent = Agent.objects.create(name="A", slug="a", endpoint=endpoint, model_name="qwen3-32b")
    openai_stub.models = ["something-else"]
    client.force_login(admin_user)
    url = reverse("admin:agent_platform_agent_change", args=[agent.pk])
    requests_before = len(openai_stub.authorizations)
    response = client.post(url, _form_data(agent, description="only the description"))
    assert response.status_code == 302
    assert len(openai_stub.authorizations) == requests_before


@pytest.mark.parametrize(
    ("codenames", "status"),
    [((), 403), (("view_conversation",), 403), (("add_agent",), 200), (("manage_model_endpoints",), 200)],
)
def test_who_may_ask_an_endpoint_for_its_models(client, django_user_model, endpoint, codenames, status):
    user = django_user_model.objects.create_user("ops", password="pw-ops-123", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    response = client.get(MODELS_URL, {"endpoint": endpoint.pk})
    assert response.status_code == status
    if status != 200:
        assert response.json()["code"] == "forbidden"


def test_only_get_is_answered(client, admin_user, endpoint):
    client.force_login(admin_user)
    response = client.post(MODELS_URL + f"?endpoint={endpoint.pk}")
    assert response.status_code == 405 and response.json()["code"] == "method_not_allowed"


def test_a_new_agent_starts_with_every_tool_and_the_compression_capability_ticked(client, admin_user):
    client.force_login(admin_user)
    form = client.get(ADD_URL).context["adminform"].form
    assert form["tools"].value() == Agent._meta.get_field("tools").get_default()
    assert form["capabilities"].value() == ["context_compression"]
    assert str(form["tools"]).count("checked") == len(form["tools"].value())

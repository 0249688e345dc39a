"""The data migration that turns today's per-agent URL and key variable into model endpoints."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.services

BEFORE = [("agent_platform", "0002_knowledge")]
AFTER = [("agent_platform", "0003_model_endpoints")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_agents_get_endpoints_from_their_url_and_key_variable(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example/v1")
    old = _migrate(BEFORE)
    Agent = old.get_model("agent_platform", "Agent")
    make = Agent.objects.create
    make(name="Offline", slug="offline", provider="offline", model_name="offline-extractive")
    make(
        name="A",
        slug="a",
        provider="openai",
        model_name="qwen3",
        base_url="http://vllm:8001/v1",
        api_key_env="VLLM_API_KEY",
    )
    make(
        name="B",
        slug="b",
        provider="openai",
        model_name="qwen3",
        base_url="http://vllm:8001/v1",
        api_key_env="VLLM_API_KEY",
    )
    make(name="Default URL", slug="c", provider="openai", model_name="gpt-4o", api_key_env="OPENAI_API_KEY")
    make(
        name="Exfiltrating",
        slug="d",
        provider="openai",
        model_name="gpt-4o",
        base_url="https://attacker.example/v1",
        api_key_env="SECRET_KEY",
    )
    try:
        new = _migrate(AFTER)
        Agent = new.get_model("agent_platform", "Agent")
        by_slug = {a.slug: a for a in Agent.objects.select_related("endpoint")}
        assert by_slug["offline"].endpoint is None
        assert by_slug["a"].endpoint_id == by_slug["b"].endpoint_id
        vllm = by_slug["a"].endpoint
        assert (vllm.name, vllm.base_url, vllm.api_key_env) == (
            "vllm:8001",
            "http://vllm:8001/v1",
            "VLLM_API_KEY",
        )
        assert by_slug["c"].endpoint.base_url == "https://gateway.example/v1"
        assert by_slug["c"].endpoint.api_key_env == "OPENAI_API_KEY"
        refused = by_slug["d"].endpoint
        assert (refused.base_url, refused.api_key_env) == ("https://attacker.example/v1", "")
        assert new.get_model("agent_platform", "ModelEndpoint").objects.count() == 3
    finally:
        _migrate(BEFORE)
        # Leave the schema as the other tests expect it: every app at its latest migration (later
        # migrations of this app exist too, so AFTER alone would leave their columns out).
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

"""The runtime builds the two compression middlewares from an ``Agent`` and wires them into its stack."""

from __future__ import annotations

import pytest

from context_engine.middleware import CompressionMiddleware, TokenUsageMiddleware
from context_engine.store import MemoryStore
from tests.context_engine.fakes import ScriptedChatModel


@pytest.mark.django_db
def test_factories_build_both_middlewares_from_the_agent_and_the_runtime_wires_them(tmp_path, settings):
    from agent_platform.models import Agent
    from agent_platform.runtime.graph import agent_middleware
    from agent_platform.runtime.middleware import compression_middleware_for, token_usage_middleware_for
    from agent_platform.runtime.stopping import ToolBudgetMiddleware
    from context_engine.tokens.messages import profile_for_model

    agent = Agent.objects.create(
        name="Researcher",
        slug="researcher",
        model_name="qwen-plus",
        summary_threshold=96,
        summary_keep_messages=7,
        summary_prompt="Mine: {messages}",
        context_window=200_000,
    )
    store, model = MemoryStore(), ScriptedChatModel()
    compression = compression_middleware_for(agent=agent, workdir=store, model=model)
    assert isinstance(compression, CompressionMiddleware)  # yuxi 1
    assert compression.config.trigger_tokens == 96 * 1024 and compression.config.keep_messages == 7
    assert (
        compression.config.tool_result_token_limit == 300
        and compression.config.summary_prompt == "Mine: {messages}"
    )
    assert compression.store is store and compression.summary_model is model
    assert compression.profile is profile_for_model("qwen-plus")
    usage = token_usage_middleware_for(agent=agent)
    assert isinstance(usage, TokenUsageMiddleware) and usage.config.trigger_tokens == 96 * 1024
    stack = agent_middleware(agent=agent, model=model)
    assert [type(m) for m in stack] == [
        CompressionMiddleware,
        TokenUsageMiddleware,
        ToolBudgetMiddleware,
    ]

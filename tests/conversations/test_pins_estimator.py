"""Pinning measures pinned messages with the estimator compression uses: the agent's resolved model
(its own name, else its endpoint's default), so the cap checked when pinning is the cap compression
keeps."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from agent_platform.models import ModelEndpoint
from context_engine.tokens.messages import estimate_message, profile_for_model
from conversations.services import message_pin, thread_create
from tests.compression._threads import seed_state, transcript_for

pytestmark = pytest.mark.django_db
RULE = "上下文压缩必须保留所有的文件路径、工单号和网址，一个都不能少。" * 12


def test_an_agent_on_its_endpoints_default_model_pins_with_that_models_estimator(user, agent):
    endpoint = ModelEndpoint.objects.create(
        name="DashScope", base_url="http://127.0.0.1:9/v1", default_model="qwen-plus"
    )
    agent.endpoint, agent.model_name = endpoint, ""
    agent.save()
    thread = thread_create(user=user, agent_slug=agent.slug)
    messages = [HumanMessage(RULE, id="rule")]
    seed_state(thread, messages)
    rows = transcript_for(thread, messages)

    state = message_pin(thread_id=thread.thread_id, message_id=rows["rule"], user=user)

    compressing = profile_for_model(agent.resolved_model_name)
    assert compressing.name != profile_for_model(agent.model_name).name  # the two estimators differ here
    assert state.pinned_tokens == estimate_message(HumanMessage(RULE, id="rule"), compressing)

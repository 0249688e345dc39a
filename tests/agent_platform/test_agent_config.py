"""Validation of the Agent's compression settings and the effective trigger."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agent_platform.models import Agent

pytestmark = pytest.mark.django_db


def _agent(**fields) -> Agent:
    return Agent(name="A", slug="a", **fields)


def test_default_agent_is_valid_and_triggers_at_threshold_times_1024():
    agent = _agent()
    agent.full_clean()
    assert agent.effective_trigger == 100 * 1024


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("summary_threshold", 0),
        ("summary_keep_messages", 0),
        ("summary_prompt", "Summarize this please."),
        ("summary_prompt", "Summarize {messages} for {user}."),
        ("summary_prompt", "Bad brace { {messages}"),
        ("summary_prompt", "{messages} and {messages.missing}"),
        ("summary_prompt", "{messages} and {messages[key]}"),
        ("summary_prompt", "{messages:>99999999999}"),  # a MemoryError (500) when formatted
        ("summary_prompt", "{messages.__class__}"),
        ("summary_prompt", "{messages!r}"),
        ("summary_prompt", "{messages[0]}"),
        ("summary_prompt", "{messages:{messages}}"),
        ("summary_prompt", "{messages} twice {messages}"),
        ("summary_prompt", "{0} {messages}"),
        ("summary_tool_result_token_limit", -1),
        ("tools", ["query_kb", "rm_rf"]),
        ("capabilities", ["mind_reading"]),
        ("temperature", 3.0),
        ("context_window", 1),
    ],
)
def test_invalid_compression_config_is_rejected_on_its_field(field, value):
    agent = _agent(**{field: value})
    with pytest.raises(ValidationError) as excinfo:
        agent.full_clean()
    assert field in excinfo.value.message_dict


def test_prompt_with_doubled_braces_is_accepted():
    _agent(summary_prompt='Return JSON like {{"a": 1}} for {messages}').full_clean()


def test_zero_tool_result_limit_is_valid():
    _agent(summary_tool_result_token_limit=0).full_clean()


def test_unknown_model_needs_an_explicit_context_window():
    agent = _agent(model_name="my-private-model")
    with pytest.raises(ValidationError) as excinfo:
        agent.full_clean()
    assert "context_window" in excinfo.value.message_dict
    agent.context_window = 8192
    agent.full_clean()


def test_trigger_is_capped_at_ninety_percent_of_the_window():
    agent = _agent(model_name="gpt-4", summary_threshold=100)
    assert agent.resolved_context_window == 8192
    assert agent.effective_trigger == int(8192 * 0.9)


def test_trigger_below_the_window_is_not_capped():
    agent = _agent(model_name="gpt-4o", summary_threshold=96)
    assert agent.effective_trigger == 96 * 1024


def test_compression_config_carries_the_admin_values(settings):
    settings.COMPRESSION_TOOL_ARG_MAX_LENGTH = 1234
    config = _agent(summary_keep_messages=4, summary_tool_result_token_limit=0).compression_config()
    assert config.keep_messages == 4
    assert config.tool_result_token_limit == 0
    assert config.tool_arg_max_length == 1234
    assert config.trigger_tokens == 100 * 1024


@pytest.mark.parametrize(
    ("model", "window", "profile"),
    [
        ("gpt-4o", 128_000, "o200k"),
        ("openai:gpt-4o-mini", 128_000, "o200k"),
        ("gpt-4.5-preview", 128_000, "o200k"),
        ("gpt-4", 8_192, "cl100k"),
        ("Qwen/Qwen2.5-7B-Instruct", 32_768, "qwen"),
        ("deepseek-chat", 65_536, "qwen"),
    ],
)
def test_the_window_table_and_the_estimator_profiles_read_model_names_alike(model, window, profile):
    from agent_platform.model_catalog import context_window_for
    from context_engine.tokens.messages import profile_for_model

    assert context_window_for(model) == window
    assert profile_for_model(model).name == profile

"""Issue 24, invariant 7: the known-models window table reads model names as the estimator does, so an
Ollama tag (``qwen2.5:7b``) or a provider prefix finds its family's window."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_platform.model_catalog import KNOWN_CONTEXT_WINDOWS, context_window_for


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("qwen2.5:7b", 32_768),
        ("llama3.1:8b-instruct-q4_K_M", 131_072),
        ("deepseek-r1:14b", 131_072),
        ("ollama:qwen3:30b-a3b", 131_072),
        ("openai:gpt-4o", 128_000),
        ("llama3:8b", 8_192),
    ],
)
def test_ollama_tags_resolve_to_the_familys_window(name, window):
    assert context_window_for(name) == window


@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from(sorted(KNOWN_CONTEXT_WINDOWS)),
    provider=st.none() | st.sampled_from(["openai", "ollama", "dashscope", "my-gateway"]),
    tag=st.none() | st.sampled_from(["latest", "7b", "8b-instruct-q4_K_M", "14b", "0.5b", "fp16", "q4_0"]),
)
def test_a_provider_prefix_or_a_tag_never_changes_the_window(model, provider, tag):
    name = f"{provider}:{model}" if provider else model
    name = f"{name}:{tag}" if tag else name
    assert context_window_for(name) == context_window_for(model) == KNOWN_CONTEXT_WINDOWS[model]

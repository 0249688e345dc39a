"""Issue 24, invariant 7: a model name resolves to its family's profile whatever surrounds it: a
provider prefix (``openai:gpt-4o``), an organisation (``Qwen/Qwen2.5-7B``), an Ollama tag
(``qwen2.5:7b``, ``llama3.1:8b-instruct-q4_K_M``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.tokens.messages import model_key, profile_for_model


@pytest.mark.parametrize(
    ("name", "key", "profile"),
    [
        ("qwen2.5:7b", "qwen2.5", "qwen"),
        ("llama3.1:8b-instruct-q4_K_M", "llama3.1", "conservative"),
        ("deepseek-r1:14b", "deepseek-r1", "qwen"),
        ("qwen3:30b-a3b", "qwen3", "qwen"),
        ("mistral:latest", "mistral", "conservative"),
        ("ollama:qwen2.5:7b", "qwen2.5", "qwen"),
        ("ollama/qwen2.5:7b", "qwen2.5", "qwen"),
        ("hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M", "qwen2.5-7b-instruct-gguf", "qwen"),
        ("gpt-oss:20b", "gpt-oss", "o200k"),
        # Provider prefixes keep working as before.
        ("openai:gpt-4o", "gpt-4o", "o200k"),
        ("some-gateway:o3-mini", "o3-mini", "o200k"),
        ("dashscope:qwen3-235b-a22b", "qwen3-235b-a22b", "qwen"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct", "qwen"),
    ],
)
def test_ollama_tags_and_provider_prefixes_resolve_to_the_family(name, key, profile):
    assert model_key(name) == key
    assert profile_for_model(name).name == profile


def test_the_ollama_tag_no_longer_becomes_the_model():
    # ":" was read as a provider separator only: "qwen2.5:7b" looked up "7b", the conservative profile.
    assert model_key("qwen2.5:7b") != "7b"
    assert profile_for_model("qwen2.5:7b") is profile_for_model("qwen2.5")


MODELS = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1-mini",
    "gpt-5",
    "o3-mini",
    "gpt-4-turbo",
    "gpt-3.5-turbo",
    "qwen2.5",
    "qwen3",
    "qwen-max",
    "qwq",
    "deepseek-r1",
    "deepseek-chat",
    "llama3.1",
    "mistral",
    "claude-sonnet-4-5",
    "gemma3",
]
PROVIDERS = st.one_of(
    st.sampled_from(
        ["openai", "ollama", "dashscope", "azure_openai", "groq", "together", "openrouter", "vllm"]
    ),
    st.from_regex(r"[a-z][a-z0-9_.-]{0,12}", fullmatch=True),
)
SIZES = st.builds(
    "{}{}b".format, st.integers(min_value=0, max_value=405), st.sampled_from(["", ".5", ".6", ".8"])
)
VARIANTS = st.sampled_from(
    [
        "",
        "-instruct",
        "-chat",
        "-text",
        "-instruct-q4_K_M",
        "-instruct-q8_0",
        "-fp16",
        "-it-qat",
        "-a3b",
        "-base",
    ]
)
TAGS = st.one_of(
    st.builds("{}{}".format, SIZES, VARIANTS),
    st.sampled_from(["latest", "instruct", "q4_0", "fp16", "v0.3", "mini", "medium", "e2b", "text"]),
)


@settings(max_examples=400, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    provider=st.none() | PROVIDERS,
    organisation=st.none() | st.sampled_from(["Qwen", "meta-llama", "hf.co/bartowski", "library"]),
    tag=st.none() | TAGS,
    upper=st.booleans(),
)
def test_a_provider_prefix_an_organisation_or_a_tag_never_changes_the_family(
    model, provider, organisation, tag, upper
):
    name = model.upper() if upper else model
    if organisation:
        name = f"{organisation}/{name}"
    if provider:
        name = f"{provider}:{name}"
    if tag:
        name = f"{name}:{tag}"
    assert model_key(name) == model
    assert profile_for_model(name) is profile_for_model(model)

"""Cached prompt tokens in provider usage (issue 40): each provider's fields read the same way, and
the figures never bill more than the prompt."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from context_engine.tokens.prefix import request_fingerprint, shared_prefix
from context_engine.tokens.usage import cache_tokens, provider_cache_tokens, with_provider_cache
from tests.support.openai_stub import cached_tokens


def test_each_providers_fields():
    assert provider_cache_tokens({"prompt_tokens_details": {"cached_tokens": 1_152}}) == (1_152, 0)
    assert provider_cache_tokens({"prompt_cache_hit_tokens": 2_048, "prompt_cache_miss_tokens": 10}) == (
        2_048,
        0,
    )
    assert provider_cache_tokens({"cache_read_input_tokens": 700, "cache_creation_input_tokens": 90}) == (
        700,
        90,
    )
    assert provider_cache_tokens({"prompt_tokens": 5}) == (0, 0)
    assert provider_cache_tokens(None) == (0, 0)


def test_anthropic_native_counts_are_added_back_into_the_prompt():
    # Anthropic's native input_tokens leaves out cache reads and writes; OpenAI's shape includes them.
    usage = {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}
    merged = with_provider_cache(
        usage, {"cache_read_input_tokens": 1_000, "cache_creation_input_tokens": 300}
    )
    assert merged["input_tokens"] == 1_320 and merged["total_tokens"] == 1_325
    assert cache_tokens(merged) == (1_000, 300)
    # A proxy that already includes them: nothing added.
    included = with_provider_cache({"input_tokens": 2_000}, {"cache_read_input_tokens": 1_000})
    assert included["input_tokens"] == 2_000 and cache_tokens(included) == (1_000, 0)
    assert with_provider_cache(usage, {}) == usage


def test_service_tier_keys_count():
    usage = {"input_tokens": 3_000, "input_token_details": {"flex_cache_read": 1_024, "flex": 1_976}}
    assert cache_tokens(usage) == (1_024, 0)


@given(
    prompt=st.integers(0, 10_000),
    read=st.integers(-5, 20_000),
    write=st.integers(-5, 20_000),
)
def test_cached_figures_never_exceed_the_prompt(prompt, read, write):
    usage = {"input_tokens": prompt, "input_token_details": {"cache_read": read, "cache_creation": write}}
    got_read, got_write = cache_tokens(usage)
    assert 0 <= got_read and 0 <= got_write and got_read + got_write <= prompt


@given(st.text(min_size=1, max_size=300), st.text(max_size=300), st.integers(1, 50_000))
def test_the_stub_caches_whole_blocks_of_the_shared_prefix_from_1024(prefix, rest, prompt):
    text = prefix + rest
    cached = cached_tokens(prompt_tokens=prompt, prompt_text=text, previous_text=prefix)
    assert cached == 0 or (cached >= 1_024 and cached % 128 == 0)
    assert cached <= prompt * len(prefix) // len(text)  # never more than the shared prefix
    if prompt * len(prefix) // len(text) >= 1_024 + 128:
        assert cached > prompt * len(prefix) // len(text) - 128
    assert cached_tokens(prompt_tokens=prompt, prompt_text=text, previous_text=None) == 0


def test_prefix_reuse_counts_the_leading_messages_a_request_repeats():
    first = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    grown = [*first, HumanMessage("c", id="3")]
    changed = [HumanMessage("a", id="1"), AIMessage("B", id="2"), HumanMessage("c", id="3")]
    head = ["system", []]
    before = request_fingerprint(head, first)
    assert shared_prefix(request_fingerprint(head, grown), before) == 3  # head + both messages
    assert shared_prefix(request_fingerprint(head, changed), before) == 2
    assert shared_prefix(request_fingerprint(["other system", []], grown), before) == 0
    assert shared_prefix(request_fingerprint(head, grown), None) == 0

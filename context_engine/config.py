"""The compression settings of one agent, as plain values the engine and middleware read, and the one
context-pressure budget (SPEC §3): the effective trigger T."""

from __future__ import annotations

from dataclasses import dataclass, field

from context_engine.formats import DEFAULT_SUMMARY_PROMPT
from context_engine.tokens.profiles import TokenProfile, profile_for_model

DEFAULT_TOOL_ARG_MAX_LENGTH = 2000
DEFAULT_TOOL_RESULT_TOKEN_LIMIT = 300
DEFAULT_KEEP_MESSAGES = 10
DEFAULT_THRESHOLD_K = 100
# The agent capability that allows manual and bulk compression (admin checkbox, services, command).
COMPRESSION_CAPABILITY = "context_compression"
DEFAULT_PINNED_TOKEN_LIMIT = 2000
DEFAULT_SUMMARY_CALLS_PER_HOUR = 10
DEFAULT_INDEX_PERCENT = 10  # the reference index after a summary: at most this share of T, in percent
MAX_INDEX_PERCENT = 50  # the admin's ceiling: the index never takes the room the summary exists to free
PINNED_SHARE_OF_TRIGGER = 0.25  # pinned messages never take more than this share of T, whatever the field
# Any tool result fits (issue 37): the shares of T that tool results the model has not answered yet keep
# whole (``CompressionConfig.fresh_result_cap``), and how far inside one a read_file page stays.
FRESH_RESULT_SHARE = 0.25
FRESH_BATCH_SHARE = 0.5
MIN_SHARE_TOKENS = 64
READ_PAGE_MARGIN = 0.9
TOKENS_PER_K = 1024
DEFAULT_BREAKER_REFUSALS = 3
DEFAULT_BREAKER_WINDOW_SECONDS = 3600
DEFAULT_BREAKER_COOLDOWN_SECONDS = 1800
WINDOW_CAP_RATIO = 0.9
# Compaction, when it runs, goes down to this share of T (the low-water mark, issue 40), so the prompt
# prefix a provider caches changes once for several turns rather than at every one.
DEFAULT_LOW_WATER_PERCENT = 50
MAX_LOW_WATER_PERCENT = 95


@dataclass(frozen=True)
class SpendLimits:
    """The spend guard's limits on summary calls (``summary.spend_guard``), per thread and hour."""

    max_calls_per_hour: int = 0  # 0: no limit
    max_input_tokens_per_hour: int = 0  # 0: no limit

    @property
    def active(self) -> bool:
        return self.max_calls_per_hour > 0 or self.max_input_tokens_per_hour > 0


@dataclass(frozen=True)
class BreakerLimits:
    """The summary circuit breaker (``summary.breaker``): after ``refusals`` refused model summaries within
    ``window_seconds``, no model summary is asked for ``cooldown_seconds`` after the latest (0: never)."""

    refusals: int = DEFAULT_BREAKER_REFUSALS
    window_seconds: int = DEFAULT_BREAKER_WINDOW_SECONDS
    cooldown_seconds: int = DEFAULT_BREAKER_COOLDOWN_SECONDS


def effective_trigger(*, summary_threshold_k: int, context_window: int | None) -> int:
    """T = threshold × 1024, capped at 90% of the model's window when the admin's number exceeds it."""
    trigger = summary_threshold_k * TOKENS_PER_K
    if context_window and trigger > context_window * WINDOW_CAP_RATIO:
        return int(context_window * WINDOW_CAP_RATIO)
    return trigger


def trigger_capped(*, summary_threshold_k: int, context_window: int | None) -> bool:
    """Did the window's cap lower T below the admin's number (``effective_trigger``)?"""
    trigger = effective_trigger(summary_threshold_k=summary_threshold_k, context_window=context_window)
    return trigger < summary_threshold_k * TOKENS_PER_K


@dataclass(frozen=True)
class CompressionConfig:
    trigger_tokens: int  # T (SPEC §3), already capped by the context window
    keep_messages: int = DEFAULT_KEEP_MESSAGES
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT
    # With a custom prompt: the lines a valid summary must contain, in order (empty: the defaults of
    # ``summary.validation``); the default prompt always requires its five headings.
    summary_required: tuple[str, ...] = ()
    tool_result_token_limit: int = DEFAULT_TOOL_RESULT_TOKEN_LIMIT  # 0: offload every tool result, no preview
    tool_arg_max_length: int = DEFAULT_TOOL_ARG_MAX_LENGTH
    context_window: int | None = None
    model_name: str | None = None  # picks the estimator profile
    pinned_token_limit: int = DEFAULT_PINNED_TOKEN_LIMIT  # cap on the tokens of pinned messages
    repair_pass: bool = False  # one more summary call when the first lost identifiers
    spend: SpendLimits = field(default_factory=SpendLimits)  # the spend guard on summary calls
    index_percent: int = DEFAULT_INDEX_PERCENT  # reference index budget, % of T; 0 turns the index off
    breaker: BreakerLimits = field(default_factory=BreakerLimits)  # refused summaries pause the model's
    low_water_percent: int = DEFAULT_LOW_WATER_PERCENT  # compaction goes down to this % of T

    @property
    def profile(self) -> TokenProfile:
        """The token estimator's profile for this agent's model (``tokens.profiles``)."""
        return profile_for_model(self.model_name)

    @property
    def pinned_cap(self) -> int:
        """The pinned-token cap in force: the agent's field, never above a quarter of ``T``."""
        return min(self.pinned_token_limit, int(self.trigger_tokens * PINNED_SHARE_OF_TRIGGER))

    @property
    def fresh_result_cap(self) -> int:
        """The share rule (any tool result fits): a tool result the model has not answered yet stays
        whole up to a quarter of ``T``, and the fresh batch up to half of ``T`` together
        (``fresh_batch_cap``), by our raw estimate. Half of ``T`` is the verbatim tail a summary keeps
        (``policy.trigger.tail_cap``), so whatever else the request holds, a summary makes room for the
        batch within the window (``T`` is at most 90% of it); a result past its share is saved and sent
        as a receipt in the same turn (``compaction.tool_results``)."""
        return max(int(self.trigger_tokens * FRESH_RESULT_SHARE), MIN_SHARE_TOKENS)

    @property
    def fresh_batch_cap(self) -> int:
        return max(int(self.trigger_tokens * FRESH_BATCH_SHARE), MIN_SHARE_TOKENS)

    @property
    def read_page_tokens(self) -> int:
        """The most tokens one ``read_file`` page takes, footer included: inside a fresh result's share,
        so a page read back stays whole and a saved file never comes back as a receipt of itself."""
        return max(int(self.fresh_result_cap * READ_PAGE_MARGIN), MIN_SHARE_TOKENS // 2)

    @property
    def low_water_tokens(self) -> int:
        """The low-water mark: what a compaction event compacts the request down to (when it can),
        ``low_water_percent`` of ``T``, always below ``T``."""
        percent = min(max(self.low_water_percent, 0), MAX_LOW_WATER_PERCENT)
        return self.trigger_tokens * percent // 100

    @property
    def index_budget(self) -> int:
        """The reference index's token budget: ``index_percent`` of ``T`` (0: no index)."""
        return max(self.trigger_tokens * max(self.index_percent, 0) // 100, 0)

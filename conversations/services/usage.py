"""Usage accounting (writes): each model call's provider-reported tokens, and their cost.

Replies are recorded by the run executor as it appends them; summary and repair calls by the
compression records (``compression.services.records``), from the ``summary_usage`` a compression
reports, whose ``repair`` part (``context_engine.summary.call``) is the repair call's own usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_engine.state import REPAIR_USAGE_KEY
from context_engine.tokens.usage import CACHE_READ_KEY, CACHE_WRITE_KEY, INPUT_DETAILS_KEY, cache_tokens
from conversations.models import AgentRun, Conversation, Message, UsageRecord

RUN_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and value > 0 else 0


def _record(
    *,
    kind: str,
    conversation: Conversation,
    usage: Mapping[str, Any],
    calls: int,
    message: Message | None = None,
) -> UsageRecord:
    agent = conversation.agent
    endpoint = agent.endpoint
    input_tokens, output_tokens = _tokens(usage, "input_tokens"), _tokens(usage, "output_tokens")
    cache_read, cache_write = cache_tokens(usage)
    return UsageRecord.objects.create(
        kind=kind,
        owner_id=conversation.owner_id,
        agent=agent,
        endpoint=endpoint,
        model_name=agent.resolved_model_name,
        conversation=conversation,
        message=message,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        calls=calls,
        cost=endpoint.cost(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        if endpoint
        else None,
    )


def usage_record_reply(*, run: AgentRun, message: Message, usage: Mapping[str, Any] | None) -> None:
    """A reply's reported usage: its own record, and the run's running totals (``AgentRun.usage``).
    A provider that reports nothing leaves no record (no guessed figures)."""
    if not usage:
        return
    _record(kind=UsageRecord.Kind.REPLY, conversation=run.conversation, usage=usage, calls=1, message=message)
    totals = dict(run.usage or {})
    for key in RUN_USAGE_KEYS:
        totals[key] = int(totals.get(key, 0)) + _tokens(usage, key)
    cache_read, cache_write = cache_tokens(usage)
    totals["cache_read_tokens"] = int(totals.get("cache_read_tokens", 0)) + cache_read
    totals["cache_write_tokens"] = int(totals.get("cache_write_tokens", 0)) + cache_write
    totals["model_calls"] = int(totals.get("model_calls", 0)) + 1
    run.usage = totals
    AgentRun.objects.filter(pk=run.pk).update(usage=totals)


def usage_record_summary(*, conversation: Conversation, summary_usage: Mapping[str, Any] | None) -> None:
    """A compression's summary calls: one ``summary`` record and, when a repair call was made, one
    ``repair`` record for its part (taken out of the summary's, so nothing is counted twice)."""
    if not summary_usage:
        return
    repair = summary_usage.get(REPAIR_USAGE_KEY)
    repair = repair if isinstance(repair, Mapping) else {}
    calls = _tokens(summary_usage, "calls") or 1
    repair_calls = _tokens(repair, "calls") or (1 if repair else 0)
    first: dict[str, Any] = {
        key: max(_tokens(summary_usage, key) - _tokens(repair, key), 0) for key in RUN_USAGE_KEYS
    }
    (read, write), (repair_read, repair_write) = cache_tokens(summary_usage), cache_tokens(repair)
    first[INPUT_DETAILS_KEY] = {
        CACHE_READ_KEY: max(read - repair_read, 0),
        CACHE_WRITE_KEY: max(write - repair_write, 0),
    }
    _record(
        kind=UsageRecord.Kind.SUMMARY,
        conversation=conversation,
        usage=first,
        calls=max(calls - repair_calls, 1),
    )
    if repair:
        _record(kind=UsageRecord.Kind.REPAIR, conversation=conversation, usage=repair, calls=repair_calls)

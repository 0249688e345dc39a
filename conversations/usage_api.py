"""Usage API: ``GET /api/usage``, the caller's own model usage (replies, summaries, repairs) and cost."""

from __future__ import annotations

from datetime import date

from django.http import HttpRequest
from ninja import Router, Schema

from agent_platform.api_errors import error_responses
from conversations.usage_selectors import usage_range, usage_report

router = Router(tags=["usage"])


class UsageFiguresOut(Schema):
    reply_input_tokens: int
    reply_output_tokens: int
    replies: int
    summary_input_tokens: int
    summary_output_tokens: int
    summary_calls: int
    repair_input_tokens: int
    repair_output_tokens: int
    repair_calls: int
    reply_cache_read_tokens: int  # of the input tokens: read from the provider's prompt cache
    reply_cache_write_tokens: int  # of the input tokens: written to the provider's prompt cache
    summary_cache_read_tokens: int
    summary_cache_write_tokens: int
    repair_cache_read_tokens: int
    repair_cache_write_tokens: int
    cached_share: float | None  # cache reads over all input tokens; null when there were none
    reply_tokens: int
    summary_tokens: int
    cost: str | None  # decimal, in the endpoints' currency; null when none of the calls was priced
    unpriced_calls: int


class UsageDayOut(UsageFiguresOut):
    day: date


class UsageOut(Schema):
    since: date
    until: date
    total: UsageFiguresOut
    days: list[UsageDayOut]


@router.get("", response={200: UsageOut, **error_responses(400)})
def usage(request: HttpRequest, since: str | None = None, until: str | None = None):
    """Your own usage from ``since`` to ``until`` (YYYY-MM-DD, both included; default the last 30 days),
    per day and in total. Only days with usage are listed."""
    start, end = usage_range(since=since, until=until)
    report = usage_report(since=start, until=end, group="day", owner_id=request.user.pk)
    return {
        "since": start,
        "until": end,
        "total": report.total.as_dict(),
        "days": [{"day": row.key, **row.as_dict()} for row in report.rows],
    }

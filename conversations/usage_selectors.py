"""Usage accounting (reads): tokens and cost by day, agent or user, over a date range, summed by the
database from ``UsageRecord`` rows. Replies, summary calls and repair calls are kept apart, so what
compression itself costs is its own column."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.translation import gettext as _

from agent_platform.errors import ApplicationError
from conversations.models import UsageRecord

GROUPS = {"day": "day", "agent": "agent__name", "user": "owner__username"}
MAX_RANGE_DAYS = 366
DEFAULT_RANGE_DAYS = 30
KINDS = (UsageRecord.Kind.REPLY, UsageRecord.Kind.SUMMARY, UsageRecord.Kind.REPAIR)


@dataclass
class UsageRow:
    """Summed usage of one group (a day, an agent or a user), or of the whole range."""

    key: str = ""
    reply_input_tokens: int = 0
    reply_output_tokens: int = 0
    replies: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    summary_calls: int = 0
    repair_input_tokens: int = 0
    repair_output_tokens: int = 0
    repair_calls: int = 0
    # Of the input tokens above, those the providers served from their prompt caches, and wrote to them.
    reply_cache_read_tokens: int = 0
    reply_cache_write_tokens: int = 0
    summary_cache_read_tokens: int = 0
    summary_cache_write_tokens: int = 0
    repair_cache_read_tokens: int = 0
    repair_cache_write_tokens: int = 0
    cost: Decimal | None = None  # None: none of these calls was priced
    unpriced_calls: int = 0  # calls made at an endpoint with no prices (not in ``cost``)

    @property
    def summary_tokens(self) -> int:
        """Everything compression's model calls spent: summaries and their repairs, in and out."""
        return (
            self.summary_input_tokens
            + self.summary_output_tokens
            + self.repair_input_tokens
            + self.repair_output_tokens
        )

    @property
    def reply_tokens(self) -> int:
        return self.reply_input_tokens + self.reply_output_tokens

    @property
    def cached_share(self) -> float | None:
        """The share of all input tokens (replies, summaries, repairs) read from a prompt cache;
        None when there were none."""
        prompt = self.reply_input_tokens + self.summary_input_tokens + self.repair_input_tokens
        read = self.reply_cache_read_tokens + self.summary_cache_read_tokens + self.repair_cache_read_tokens
        return round(read / prompt, 4) if prompt else None

    def as_dict(self) -> dict[str, Any]:
        body = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "key"}
        body["cost"] = None if self.cost is None else str(self.cost)
        return {
            **body,
            "summary_tokens": self.summary_tokens,
            "reply_tokens": self.reply_tokens,
            "cached_share": self.cached_share,
        }


@dataclass
class UsageReport:
    since: date
    until: date
    group: str
    rows: list[UsageRow] = field(default_factory=list)
    total: UsageRow = field(default_factory=UsageRow)


class InvalidUsageRange(ApplicationError):
    status = 400
    code = "invalid_range"


def usage_range(*, since: str | None, until: str | None) -> tuple[date, date]:
    """The date range a request names (``YYYY-MM-DD``, both included; default: the last 30 days to
    today), or ``InvalidUsageRange`` (400) saying what is wrong with it."""
    today = timezone.localdate()
    try:
        end = date.fromisoformat(until) if until else today
        start = date.fromisoformat(since) if since else end - timedelta(days=DEFAULT_RANGE_DAYS - 1)
    except ValueError as exc:
        raise InvalidUsageRange(_("Dates are written YYYY-MM-DD, e.g. 2026-01-31.")) from exc
    if start > end:
        raise InvalidUsageRange(_("'since' is after 'until'."))
    if (end - start).days + 1 > MAX_RANGE_DAYS:
        raise InvalidUsageRange(_("A range covers at most %(days)s days.") % {"days": MAX_RANGE_DAYS})
    return start, end


def _sums() -> dict[str, Any]:
    sums: dict[str, Any] = {}
    for kind, prefix in zip(KINDS, ("reply", "summary", "repair"), strict=True):
        where = Q(kind=kind)
        sums[f"{prefix}_input_tokens"] = Sum("input_tokens", filter=where, default=0)
        sums[f"{prefix}_output_tokens"] = Sum("output_tokens", filter=where, default=0)
        sums[f"{prefix}_cache_read_tokens"] = Sum("cache_read_tokens", filter=where, default=0)
        sums[f"{prefix}_cache_write_tokens"] = Sum("cache_write_tokens", filter=where, default=0)
        sums["replies" if prefix == "reply" else f"{prefix}_calls"] = Sum("calls", filter=where, default=0)
    sums["priced_cost"] = Sum("cost")  # (an alias named like the field would shadow it)
    sums["unpriced_calls"] = Count("id", filter=Q(cost__isnull=True))
    return sums


def _row(key: str, values: dict[str, Any]) -> UsageRow:
    figures = {name: values[name] for name in _sums()}
    return UsageRow(key=key, cost=figures.pop("priced_cost"), **figures)


def usage_report(*, since: date, until: date, group: str = "day", owner_id: int | None = None) -> UsageReport:
    """Usage from ``since`` to ``until`` (whole days, both included, in the server's time zone), one row
    per ``group`` (``day``, ``agent`` or ``user``) and the total; only ``owner_id``'s when given."""
    start = timezone.make_aware(datetime.combine(since, time.min))
    end = timezone.make_aware(datetime.combine(until + timedelta(days=1), time.min))
    records: QuerySet[UsageRecord] = UsageRecord.objects.filter(created_at__gte=start, created_at__lt=end)
    if owner_id is not None:
        records = records.filter(owner_id=owner_id)
    grouped = records.annotate(day=TruncDate("created_at")) if group == "day" else records
    key = GROUPS[group]
    rows = [
        _row(str(values["group_key"] or "—"), values)
        for values in grouped.values(group_key=F(key)).annotate(**_sums()).order_by("group_key")
    ]
    return UsageReport(
        since=since, until=until, group=group, rows=rows, total=_row("", records.aggregate(**_sums()))
    )


def usage_of_message(message_id: int) -> UsageRecord | None:
    return UsageRecord.objects.filter(message_id=message_id).first()


def usage_of_thread(conversation_id: int) -> UsageRow:
    """Everything one thread's model calls used and cost (replies, summaries, repairs), summed."""
    return _row("", UsageRecord.objects.filter(conversation_id=conversation_id).aggregate(**_sums()))

"""Reads of threads, transcripts and runs. A thread the caller may not see (``conversations.access``)
does not exist for them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.core.validators import slug_re
from django.db.models import Case, Count, Exists, F, FloatField, Func, OuterRef, Q, QuerySet, Value, When
from django.db.models.functions import Floor, Greatest, Least
from django.utils import timezone

from agent_platform.models import Agent
from agent_platform.runtime.graph import state_repository_for
from agent_platform.workdir import workdir_for
from context_engine.errors import StoreError
from context_engine.formats import LARGE_TOOL_RESULTS_DIR, MEDIA_DIR
from context_engine.policy.pressure import hint_tokens
from context_engine.state import PINNED_IDS_KEY, SUMMARY_EVENT_KEY, TOKEN_USAGE_KEY
from conversations.access import threads_visible_to
from conversations.branching import ForkStep, Interval, branches_replay
from conversations.errors import ThreadNotFound
from conversations.models import AgentRun, Conversation, Message, MessageFork, MessagePin
from conversations.signals import thread_maintenance_check

MESSAGE_PAGE_MAX = 500
# A thread's "compression under way" marker in the shared cache (set by ``services.pressure``).
COMPRESSING_KEY = "compression:under-way:{thread_id}"
PRESSURE_BIN_WIDTH = 0.1
PRESSURE_BIN_COUNT = 11  # [0, 0.1) … [0.9, 1.0), then everything at or above the trigger


def thread_list(*, user: AbstractBaseUser) -> QuerySet[Conversation]:
    """The caller's own active threads, newest activity first (the list page's scopes and search:
    ``conversations.search``)."""
    return Conversation.objects.filter(owner=user, status=Conversation.Status.ACTIVE).select_related("agent")


def bin_cutoff() -> datetime:
    """Threads deleted before this moment have left the bin."""
    return timezone.now() - timedelta(days=settings.THREAD_BIN_RETENTION_DAYS)


def threads_in_bin(*, user: AbstractBaseUser) -> QuerySet[Conversation]:
    """The caller's deleted threads still within the retention period, most recently deleted first."""
    return (
        Conversation.objects.filter(
            owner=user, status=Conversation.Status.DELETED, deleted_at__gte=bin_cutoff()
        )
        .select_related("agent")
        .order_by("-deleted_at")
    )


def thread_get(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> Conversation:
    """An active thread the caller may see, else ``ThreadNotFound`` (missing, deleted and not visible
    look the same)."""
    try:
        return threads_visible_to(user).select_related("agent").get(thread_id=thread_id)
    except (Conversation.DoesNotExist, ValueError) as exc:
        raise ThreadNotFound() from exc


def thread_get_owned(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> Conversation:
    """The caller's own active thread, else ``ThreadNotFound``: for reads that belong to a write (the
    preview of a compression), which stays the owner's alone."""
    try:
        return thread_list(user=user).get(thread_id=thread_id)
    except (Conversation.DoesNotExist, ValueError) as exc:
        raise ThreadNotFound() from exc


def thread_agent_id(*, thread_id: uuid.UUID | str) -> int | None:
    """The agent of a thread (call after ``conversations.access.thread_visible``: it does not check access)."""
    return Conversation.objects.filter(thread_id=thread_id).values_list("agent_id", flat=True).first()


def thread_branches(*, conversation: Conversation) -> list[tuple[Interval, ...]]:
    """Every branch the thread had current, by number, the current one last (``conversations.branching``)."""
    steps = [
        ForkStep(kind, start, end, restored)
        for kind, start, end, restored in MessageFork.objects.filter(conversation=conversation)
        .order_by("id")
        .values_list("kind", "hidden_from_seq", "hidden_to_seq", "restored_branch")
    ]
    return branches_replay(steps)


def branch_filter(branch: Sequence[Interval]) -> Q:
    """The rows of one branch, as a filter on ``seq``."""
    rows = Q(pk__in=[])
    for start, end in branch:
        rows |= Q(seq__gte=start) if end is None else Q(seq__gte=start, seq__lt=end)
    return rows


def branch_messages(*, conversation: Conversation, branch: Sequence[Interval]) -> QuerySet[Message]:
    return conversation.messages.filter(branch_filter(branch))


def visible_messages(*, conversation: Conversation) -> QuerySet[Message]:
    """The thread's current branch: its transcript without the rows of its other branches (edits,
    regenerations and continues: ``MessageFork``); those stay in the table as earlier versions."""
    branches = thread_branches(conversation=conversation)
    if len(branches) == 1:
        return conversation.messages.all()
    return branch_messages(conversation=conversation, branch=branches[-1])


def messages_with_pins(messages: QuerySet[Message]) -> QuerySet[Message]:
    """Each message annotated with ``is_pinned`` (the page's pin control)."""
    return messages.annotate(is_pinned=Exists(MessagePin.objects.filter(message=OuterRef("pk"))))


def message_list(
    *, conversation: Conversation, after_seq: int = 0, limit: int = MESSAGE_PAGE_MAX
) -> QuerySet[Message]:
    limit = max(1, min(limit, MESSAGE_PAGE_MAX))
    return (
        messages_with_pins(visible_messages(conversation=conversation).filter(seq__gt=after_seq))
        .select_related("run", "usage")
        .prefetch_related("attachments__conversation")
        .order_by("seq")[:limit]
    )


def message_list_all(*, conversation: Conversation) -> list[Message]:
    """Every message of the thread with its pin flag and attachments, by ``seq`` (an export reads all)."""
    return list(
        messages_with_pins(conversation.messages.all()).prefetch_related("attachments").order_by("seq")
    )


def message_list_latest(
    *, conversation: Conversation, limit: int = MESSAGE_PAGE_MAX, before_seq: int | None = None
) -> list[Message]:
    """The newest ``limit`` messages (before ``before_seq``, when given), oldest first: a long thread's
    page opens at its end and loads its earlier messages a page at a time."""
    visible = visible_messages(conversation=conversation)
    if before_seq is not None:
        visible = visible.filter(seq__lt=before_seq)
    newest = (
        messages_with_pins(visible)
        .select_related("run", "usage")
        .prefetch_related("attachments__conversation")
        .order_by("-seq")
    )
    latest = list(newest[: max(1, min(limit, MESSAGE_PAGE_MAX))])
    latest.reverse()
    return latest


def messages_earlier_count(*, conversation: Conversation, before_seq: int) -> int:
    """How many messages of the current branch come before ``before_seq`` (replaced versions are not
    "earlier messages": they are browsed as versions of the rows that replaced them)."""
    return visible_messages(conversation=conversation).filter(seq__lt=before_seq).count()


def run_latest(*, conversation: Conversation) -> AgentRun | None:
    """The thread's latest turn. A queued message removed before its run started was never a turn: the
    run before it stays the latest (else a reply that finished normally would read "Stopped")."""
    never_started = Q(status=AgentRun.Status.CANCELLED, started_at__isnull=True)
    return conversation.runs.exclude(never_started).order_by("-created_at", "-id").first()


def run_running(*, conversation: Conversation) -> AgentRun | None:
    return conversation.runs.filter(status=AgentRun.Status.RUNNING).first()


def runs_active_count(*, user: AbstractBaseUser) -> int:
    """How many runs of ``user``'s threads are queued or running (the send throttle's "at once")."""
    return AgentRun.objects.filter(conversation__owner=user, status__in=AgentRun.ACTIVE_STATUSES).count()


def run_queue_head(*, conversation_id: int) -> AgentRun | None:
    """The thread's running run if one is, else its oldest queued run (None: neither), in one query:
    what a claim and a dispatch decide on. Only ``pk`` and ``status`` are loaded."""
    running_first = Case(When(status=AgentRun.Status.RUNNING, then=0), default=1)
    return (
        AgentRun.objects.filter(
            conversation_id=conversation_id, status__in=(AgentRun.Status.RUNNING, AgentRun.Status.QUEUED)
        )
        .order_by(running_first, "created_at", "id")
        .only("pk", "status")
        .first()
    )


def interrupt_question(run: AgentRun | None) -> str | None:
    """The question an ``interrupted`` run is waiting on (recorded by the executor), else None."""
    if run is None or run.status != AgentRun.Status.INTERRUPTED:
        return None
    for event in reversed(run.events or []):
        if isinstance(event, dict) and event.get("type") == "interrupt":
            return event.get("question")
    return None


def thread_in_maintenance(*, conversation: Conversation) -> bool:
    """Whether thread maintenance holds the thread (a queued or running compression job): intake and
    compression both refuse meanwhile. Asked of the apps that do maintenance, through a hook."""
    responses = thread_maintenance_check.send(sender=Conversation, conversation=conversation)
    return any(held for _receiver, held in responses)


def thread_busy_flags(*, conversation: Conversation) -> dict[str, object]:
    """``running``, ``queued``, ``interrupted`` (the latest run waits on the user), its question, the
    latest run, ``maintenance`` (a compression job holds it), and ``busy``: the one rule for "not idle"
    (no message may start a compression, no compression may start beside a run or another job)."""
    statuses = set(
        conversation.runs.filter(status__in=AgentRun.ACTIVE_STATUSES).values_list("status", flat=True)
    )
    latest = run_latest(conversation=conversation)
    interrupted = latest is not None and latest.status == AgentRun.Status.INTERRUPTED
    running, queued = AgentRun.Status.RUNNING in statuses, AgentRun.Status.QUEUED in statuses
    maintenance = thread_in_maintenance(conversation=conversation)
    return {
        "running": running,
        "queued": queued,
        "interrupted": interrupted,
        "interrupt_question": interrupt_question(latest) if interrupted else None,
        "latest_run": latest,
        "maintenance": maintenance,
        "busy": running or queued or interrupted or maintenance,
    }


def thread_saved_results(*, conversation: Conversation) -> frozenset[str]:
    """Paths of the files compaction saved in the thread's workdir: tool results and inline media (two
    directory listings)."""
    workdir = workdir_for(conversation)
    paths: set[str] = set()
    for directory in (LARGE_TOOL_RESULTS_DIR, MEDIA_DIR):
        try:
            paths.update(workdir.list_dir(directory))
        except StoreError:
            pass  # not written yet
    return frozenset(paths)


def thread_values(*, conversation: Conversation) -> dict:
    """The thread's checkpoint values (one read; pass them on to the selectors below)."""
    return state_repository_for(conversation).get_values()


def thread_token_usage(*, conversation: Conversation, values: dict | None = None) -> dict | None:
    """The thread's ``token_usage`` as last written to its checkpoint by the token-usage middleware:
    from ``values``, else from the copy on the thread's row (``conversation_pressure_update``) without
    opening the checkpoint; only a row measured before that copy existed reads the checkpoint."""
    if values is None:
        if conversation.usage_updated_at is None:
            return None  # never measured: no run nor compression wrote token_usage yet
        if isinstance(conversation.token_usage, dict):
            return conversation.token_usage
        values = thread_values(conversation=conversation)
    usage = values.get(TOKEN_USAGE_KEY)
    return usage if isinstance(usage, dict) else None


def thread_state_messages(*, conversation: Conversation) -> list:
    """The checkpoint's ``messages`` (what the agent has seen, compression never removes any)."""
    return list(thread_values(conversation=conversation).get("messages") or [])


def pinned_message_ids(*, conversation: Conversation) -> list[str]:
    """The checkpoint ids of the thread's pinned messages on its current branch, in transcript order
    (a pin on a replaced version stays with it and does not bind the fork)."""
    pinned = MessagePin.objects.checkpoint_ids(conversation_id=conversation.pk)
    if not pinned:  # most threads, at every run's start: one query, not a read of the whole transcript
        return []
    visible = set(
        visible_messages(conversation=conversation)
        .filter(lc_message_id__in=pinned)
        .values_list("lc_message_id", flat=True)
    )
    return [i for i in pinned if i in visible]


def thread_folded_last_seq(*, conversation: Conversation, values: dict) -> int | None:
    """The transcript seq of the last message the current summary folded (None without a summary):
    what the memory panel needs beyond the checkpoint ``values``."""
    messages = list(values.get("messages") or [])
    event = values.get(SUMMARY_EVENT_KEY)
    cutoff = event.get("cutoff_index") if isinstance(event, dict) else None
    folded_last_seq = None
    if isinstance(cutoff, int) and cutoff > 0:
        # The last folded message that is in the transcript (a few state-only messages may follow it).
        ids = [m.id for m in messages[max(0, cutoff - 50) : cutoff] if getattr(m, "id", None)]
        folded_last_seq = (
            conversation.messages.filter(lc_message_id__in=ids)
            .order_by("-seq")
            .values_list("seq", flat=True)
            .first()
        )
    return folded_last_seq


def thread_kept_pinned_seqs(*, conversation: Conversation, values: dict) -> list[int]:
    """The transcript seqs of the messages before the summary's cutoff that the model still reads word
    for word after it (pinned ones): the memory panel names them and does not count them as folded."""
    event = values.get(SUMMARY_EVENT_KEY)
    kept = event.get(PINNED_IDS_KEY) if isinstance(event, dict) else None
    if not kept or not isinstance(kept, list):
        return []
    return list(
        conversation.messages.filter(lc_message_id__in=kept).order_by("seq").values_list("seq", flat=True)
    )


def thread_state(*, conversation: Conversation, values: dict | None = None) -> dict[str, object]:
    """Token usage (the checkpoint's, from the thread's row unless ``values`` are given) plus busy flags,
    for GET state and the page's meter."""
    flags = thread_busy_flags(conversation=conversation)
    return {
        "thread_id": conversation.thread_id,
        "token_usage": thread_token_usage(conversation=conversation, values=values),
        # A compression job's row is the durable fact (queued ones included); the cache marker also
        # covers the admin's and the automatic paths.
        "compressing": bool(flags["maintenance"]) or thread_compressing(thread_id=conversation.thread_id),
        "running": flags["running"],
        "queued": flags["queued"],
        "interrupted": flags["interrupted"],
        "interrupt": {"question": flags["interrupt_question"]} if flags["interrupted"] else None,
        "latest_run": flags["latest_run"],
    }


def thread_compressing(*, thread_id: object) -> bool:
    """Whether a manual or bulk compression of this thread is under way (any process)."""
    return cache.get(COMPRESSING_KEY.format(thread_id=thread_id)) is not None


def pressure_bin_expression() -> Func:
    """The pressure bin of a thread, computed by the database: bins of ``PRESSURE_BIN_WIDTH`` from 0,
    the last one holding the trigger and above (the ratios are stored rounded to 4 decimals; the small
    epsilon keeps 0.3 in bin 3 despite binary floating point)."""
    raw = Floor(F("pressure_ratio") / Value(PRESSURE_BIN_WIDTH) + Value(1e-6), output_field=FloatField())
    return Greatest(Value(0.0), Least(Value(float(PRESSURE_BIN_COUNT - 1)), raw), output_field=FloatField())


@dataclass(frozen=True)
class PressureOverview:
    histograms: list[tuple[Agent, list[int]]]  # per agent (by name): thread counts per pressure bin
    threads: list[Conversation]  # measured threads, highest pressure first, at most ``rows``
    thread_count: int  # measured threads
    unmeasured_count: int
    agents: list[Agent]


def thread_pressure_overview(*, user: AbstractBaseUser, agent_slug: str = "", rows: int) -> PressureOverview:
    """The threads ``user`` may see by context pressure, for the staff page: per-agent histograms binned
    by the database (no thread is loaded for them) and the ``rows`` most pressed threads."""
    threads = threads_visible_to(user)
    if agent_slug:
        # Not a slug (e.g. a NUL byte, which PostgreSQL rejects in a query): no agent has it.
        slug_ok = slug_re.fullmatch(agent_slug) is not None
        threads = threads.filter(agent__slug=agent_slug) if slug_ok else threads.none()
    measured = threads.filter(pressure_ratio__isnull=False)
    binned = (
        measured.annotate(pressure_bin=pressure_bin_expression())
        .values("agent_id", "pressure_bin")
        .annotate(count=Count("id"))
        .order_by()
    )
    counts: dict[int, list[int]] = {}
    for row in binned:
        bins = counts.setdefault(row["agent_id"], [0] * PRESSURE_BIN_COUNT)
        bins[int(row["pressure_bin"])] += row["count"]
    agents = list(Agent.objects.order_by("name"))
    return PressureOverview(
        histograms=[(agent, counts[agent.pk]) for agent in agents if agent.pk in counts],
        threads=list(
            measured.select_related("agent", "owner").order_by("-pressure_ratio", "-last_activity_at")[:rows]
        ),
        thread_count=sum(map(sum, counts.values())),
        unmeasured_count=threads.filter(pressure_ratio__isnull=True).count(),
        agents=agents,
    )


RETUNE_BANDS = ("under_hint", "hint_to_trigger", "over_trigger")


@dataclass(frozen=True)
class RetuneCounts:
    """An agent's active threads by band (``RETUNE_BANDS``) under two triggers: today's and a typed one."""

    today: dict[str, int]
    typed: dict[str, int]
    unmeasured: int  # threads with no stored figure yet (never ran a model call)

    @property
    def measured(self) -> int:
        return sum(self.today.values())


def agent_retune_counts(*, agent_id: int, trigger_today: int, trigger_typed: int) -> RetuneCounts:
    """How many of the agent's active threads sit under the hint, between the hint and the trigger,
    and at or over the trigger, today and with ``trigger_typed``: one aggregate query over the stored
    copies of each thread's next request (``Conversation.context_tokens``), no checkpoint opened. The
    lines are the page's hint (``hint_tokens``) and the runtime's trigger (``>= T``)."""
    bounds = {"today": trigger_today, "typed": trigger_typed}
    counts: dict[str, Count] = {"unmeasured": Count("id", filter=Q(context_tokens__isnull=True))}
    for name, trigger in bounds.items():
        hint = hint_tokens(trigger)
        counts[f"{name}_under_hint"] = Count("id", filter=Q(context_tokens__lt=hint))
        counts[f"{name}_hint_to_trigger"] = Count(
            "id", filter=Q(context_tokens__gte=hint, context_tokens__lt=trigger)
        )
        counts[f"{name}_over_trigger"] = Count("id", filter=Q(context_tokens__gte=trigger))
    row = Conversation.objects.filter(agent_id=agent_id, status=Conversation.Status.ACTIVE).aggregate(
        **counts
    )
    return RetuneCounts(
        today={band: row[f"today_{band}"] for band in RETUNE_BANDS},
        typed={band: row[f"typed_{band}"] for band in RETUNE_BANDS},
        unmeasured=row["unmeasured"],
    )

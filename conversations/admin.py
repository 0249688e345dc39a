"""Admin views of threads, their read-only transcripts, and runs. The compression actions on threads
are added by ``compression.admin``."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agent_platform.admin_base import AuditAdmin
from context_engine.events import COMPLETED
from context_engine.events import EVENT_TYPE as COMPRESSION
from conversations import usage_admin  # noqa: F401  (registers the usage records list)
from conversations.models import AgentRun, Conversation, Message, MessageFork


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ("seq", "role", "tool_name", "content", "tool_calls", "version_of", "created_at")
    readonly_fields = fields
    ordering = ("seq",)


class MessageForkInline(ReadOnlyInline):
    """Edits and regenerations: which transcript rows left the current branch, from which checkpoint."""

    model = MessageFork
    fields = (
        "kind",
        "message",
        "run",
        "hidden_from_seq",
        "hidden_to_seq",
        "checkpoint_id",
        "created_by",
        "created_at",
    )
    readonly_fields = fields


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("__str__", "owner", "agent", "status", "pressure_ratio", "last_activity_at")
    list_filter = ("status", "agent", "summary_active")
    search_fields = ("title", "thread_id", "owner__username")
    readonly_fields = (
        "thread_id",
        "owner",
        "agent",
        "created_at",
        "updated_at",
        "last_activity_at",
        "context_tokens",
        "trigger_tokens",
        "pressure_ratio",
        "summary_active",
        "usage_updated_at",
    )
    fields = ("title", "status", *readonly_fields)
    inlines = [MessageInline, MessageForkInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(AgentRun)
class AgentRunAdmin(AuditAdmin):
    list_display = ("id", "thread", "agent", "kind", "status", "compressions", "started_at", "finished_at")
    list_filter = ("conversation__agent", "status", "kind", ("created_at", admin.DateFieldListFilter))
    list_select_related = ("conversation__agent", "conversation__owner")
    search_fields = ("conversation__thread_id", "conversation__title", "error", "error_detail")
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [*super().get_readonly_fields(request, obj), "thread", "agent", "compressions"]

    def get_fields(self, request: HttpRequest, obj=None):
        fields = [f for f in super().get_fields(request, obj) if f not in ("thread", "agent", "compressions")]
        return ["thread", "agent", "compressions", *fields]

    @admin.display(description=_("Thread"), ordering="conversation__title")
    def thread(self, run: AgentRun) -> str:
        return thread_label(run.conversation)

    @admin.display(description=_("Agent"), ordering="conversation__agent__name")
    def agent(self, run: AgentRun) -> str:
        return run.conversation.agent.name

    @admin.display(description=_("Compression in the run: tokens before → after (saved)"))
    def compressions(self, run: AgentRun) -> str:
        done = [
            e
            for e in run.events or []
            if isinstance(e, dict)
            and e.get("type") == COMPRESSION
            and e.get("status") == COMPLETED
            and isinstance(e.get("before_tokens"), int)
            and isinstance(e.get("after_tokens"), int)
        ]
        if not done:
            return "–"
        saved = sum(max(e["before_tokens"] - e["after_tokens"], 0) for e in done)
        text = gettext("%(before)s → %(after)s (%(saved)s saved)") % {
            "before": f"{done[0]['before_tokens']:,}",
            "after": f"{done[-1]['after_tokens']:,}",
            "saved": f"{saved:,}",
        }
        if len(done) > 1:
            text += " " + ngettext("in %(count)d compression", "in %(count)d compressions", len(done)) % {
                "count": len(done)
            }
        return text


def thread_label(conversation: Conversation) -> str:
    """A thread as the admin's lists name it: its title, else whose it is and when it started (never
    the bare UUID)."""
    if conversation.title:
        return conversation.title
    return gettext("Untitled thread of %(owner)s, %(date)s") % {
        "owner": conversation.owner.get_username(),
        "date": date_format(localtime(conversation.created_at), "SHORT_DATETIME_FORMAT"),
    }

"""Threads, their append-only transcript, and the runs that execute agents on them."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from conversations.attachments import text_path


class Conversation(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", _("Active")
        DELETED = "deleted", _("Deleted")

    thread_id = models.UUIDField(verbose_name=_("thread ID"), default=uuid.uuid4, unique=True, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("owner"),
        on_delete=models.CASCADE,
        related_name="conversations",
    )
    agent = models.ForeignKey(
        "agent_platform.Agent",
        verbose_name=_("agent"),
        on_delete=models.PROTECT,
        related_name="conversations",
    )
    title = models.CharField(verbose_name=_("title"), max_length=200, blank=True)
    status = models.CharField(
        verbose_name=_("status"), max_length=10, choices=Status.choices, default=Status.ACTIVE, db_index=True
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)
    last_activity_at = models.DateTimeField(
        verbose_name=_("last activity at"), auto_now_add=True, db_index=True
    )
    # The sidebar's own marks (the owner's): pinned threads first, archived ones out of the lists, and
    # when a thread went to the bin (restorable for THREAD_BIN_RETENTION_DAYS).
    pinned_at = models.DateTimeField(verbose_name=_("pinned at"), null=True, blank=True)
    archived_at = models.DateTimeField(verbose_name=_("archived at"), null=True, blank=True)
    deleted_at = models.DateTimeField(verbose_name=_("deleted at"), null=True, blank=True)

    # The last token_usage figures, copied here so bulk selection never opens a checkpoint.
    context_tokens = models.PositiveIntegerField(verbose_name=_("context tokens"), null=True, blank=True)
    trigger_tokens = models.PositiveIntegerField(verbose_name=_("trigger tokens"), null=True, blank=True)
    pressure_ratio = models.FloatField(verbose_name=_("pressure ratio"), null=True, blank=True, db_index=True)
    summary_active = models.BooleanField(verbose_name=_("summary active"), default=False)
    usage_updated_at = models.DateTimeField(verbose_name=_("usage updated at"), null=True, blank=True)
    # The whole token_usage of the checkpoint as of usage_updated_at, so GET state never opens one
    # (null with a usage_updated_at: copied before this column existed, read the checkpoint).
    token_usage = models.JSONField(verbose_name=_("token usage"), null=True, blank=True, editable=False)
    # A thread forked from another's branch (``services.branches.branch_fork``): the message it was
    # copied up to, and the fork request's idempotency key (``operation_key``), per owner.
    forked_from = models.ForeignKey(
        "conversations.Message",
        verbose_name=_("forked from"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    fork_request_id = models.CharField(  # noqa: DJ001
        verbose_name=_("fork request ID"), max_length=100, null=True, blank=True, editable=False
    )

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-last_activity_at"]
        indexes = [models.Index(fields=["owner", "status", "-last_activity_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "fork_request_id"],
                condition=models.Q(fork_request_id__isnull=False),
                name="unique_fork_request_id_per_owner",
            )
        ]

    def __str__(self) -> str:
        return self.title or str(self.thread_id)


class AgentRun(models.Model):
    class Kind(models.TextChoices):
        CHAT = "chat", _("Chat")
        RESUME = "resume", _("Resume")

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        INTERRUPTED = "interrupted", _("Interrupted (waiting on the user)")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="runs"
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=Kind.choices, default=Kind.CHAT)
    status = models.CharField(
        verbose_name=_("status"), max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    input_message = models.ForeignKey(
        "conversations.Message",
        verbose_name=_("input message"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    resume_value = models.JSONField(verbose_name=_("resume value"), null=True, blank=True)
    # NULL, not "", so the per-thread uniqueness only binds runs that carry a client request id.
    request_id = models.CharField(verbose_name=_("request ID"), max_length=100, null=True, blank=True)  # noqa: DJ001
    # What the thread's users read (no endpoint, environment variable or exception class); the
    # exception as raised is ``error_detail``, for the admin (and the log has its traceback).
    error = models.TextField(verbose_name=_("error"), blank=True)
    error_detail = models.TextField(verbose_name=_("error detail"), blank=True)
    events = models.JSONField(
        verbose_name=_("events"), default=list, blank=True
    )  # compression events seen during the run
    usage = models.JSONField(
        verbose_name=_("usage"), default=dict, blank=True
    )  # provider-reported usage for this run
    # Crash recovery: who claimed the run, when it last showed progress, and how often it was claimed.
    worker = models.CharField(verbose_name=_("worker"), max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(verbose_name=_("heartbeat at"), null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(verbose_name=_("attempts"), default=0)
    # Stop: set by the user, read by the executor between streamed chunks (cooperative cancellation).
    cancel_requested_at = models.DateTimeField(verbose_name=_("cancel requested at"), null=True, blank=True)
    # The page's language when the message was sent: the offline model answers in it.
    language = models.CharField(verbose_name=_("language"), max_length=16, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(verbose_name=_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("agent run")
        verbose_name_plural = _("agent runs")
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "request_id"],
                condition=models.Q(request_id__isnull=False),
                name="unique_run_request_id_per_conversation",
            )
        ]
        indexes = [models.Index(fields=["conversation", "status"])]

    def __str__(self) -> str:
        return f"{self.kind} run {self.pk} ({self.status})"


class Message(models.Model):
    """One transcript entry. Append-only: compression never rewrites or deletes these rows."""

    # Not a column: its place on the branch a page or the API shows (1..n), set by the branch selectors.
    number: int

    class Role(models.TextChoices):
        USER = "user", _("User")
        ASSISTANT = "assistant", _("Assistant")
        TOOL = "tool", _("Tool")
        SYSTEM = "system", _("System")

    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="messages"
    )
    seq = models.PositiveIntegerField(verbose_name=_("seq"))
    role = models.CharField(verbose_name=_("role"), max_length=10, choices=Role.choices)
    content = models.TextField(verbose_name=_("content"), blank=True)
    tool_calls = models.JSONField(verbose_name=_("tool calls"), default=list, blank=True)
    tool_call_id = models.CharField(verbose_name=_("tool call ID"), max_length=200, blank=True)
    tool_name = models.CharField(verbose_name=_("tool name"), max_length=200, blank=True)
    lc_message_id = models.CharField(verbose_name=_("LangChain message id"), max_length=200, blank=True)
    run = models.ForeignKey(
        AgentRun,
        verbose_name=_("run"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
    )
    # A reply cut short by Stop: the text streamed until then, kept as it was.
    interrupted = models.BooleanField(verbose_name=_("interrupted"), default=False)
    # An edited user message is a new row; this names the first version of it (``MessageFork``).
    version_of = models.ForeignKey(
        "self",
        verbose_name=_("version of"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="later_versions",
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["conversation", "seq"]
        constraints = [models.UniqueConstraint(fields=["conversation", "seq"], name="unique_message_seq")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.role}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not self._state.adding:
            raise ValueError("The transcript is append-only: messages are never rewritten.")
        super().save(*args, **kwargs)


class MessageFork(models.Model):
    """An edit or a regeneration: the thread's model view was forked from the checkpoint before
    ``message``, and the transcript rows with ``hidden_from_seq <= seq < hidden_to_seq`` left the
    thread's current branch. Nothing is rewritten: those rows stay, as earlier versions.

    A continue (``CONTINUE``) makes an earlier branch current again: ``restored_branch`` numbers it
    (``conversations.branching``), ``checkpoint_id`` is the checkpoint whose view it copied, and it
    has no run. ``hidden_to_seq`` is, for every kind, the transcript's next seq when it was made."""

    class Kind(models.TextChoices):
        EDIT = "edit", _("Edit")
        REGENERATE = "regenerate", _("Regenerate")
        CONTINUE = "continue", _("Continue an earlier branch")

    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="forks"
    )
    kind = models.CharField(verbose_name=_("kind"), max_length=12, choices=Kind.choices)
    message = models.ForeignKey(
        Message, verbose_name=_("message"), on_delete=models.CASCADE, related_name="forks"
    )
    run = models.OneToOneField(
        AgentRun, verbose_name=_("run"), null=True, blank=True, on_delete=models.CASCADE, related_name="fork"
    )
    restored_branch = models.PositiveIntegerField(verbose_name=_("restored branch"), null=True, blank=True)
    # A continue's idempotency key (``operation_key``); edits and regenerations keep theirs on the run.
    request_id = models.CharField(verbose_name=_("request ID"), max_length=100, null=True, blank=True)  # noqa: DJ001
    hidden_from_seq = models.PositiveIntegerField(verbose_name=_("hidden from seq"))
    hidden_to_seq = models.PositiveIntegerField(verbose_name=_("hidden to seq"))
    checkpoint_id = models.CharField(verbose_name=_("forked from checkpoint"), max_length=100)
    # The thread's latest checkpoint just before this fork: the model's view of the branch it left, so
    # a continue back to that branch finds it in one read ("" for forks made before it was recorded).
    left_checkpoint_id = models.CharField(verbose_name=_("checkpoint left"), max_length=100, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("message fork")
        verbose_name_plural = _("message forks")
        ordering = ["conversation", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "request_id"],
                condition=models.Q(request_id__isnull=False),
                name="unique_fork_request_id_per_conversation",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} at #{self.message.seq}"


class Attachment(models.Model):
    """A file a user attached to a message, saved whole in the thread's workdir under ``uploads/``."""

    class Kind(models.TextChoices):
        TEXT = "text", _("Text")
        PDF = "pdf", _("PDF")
        IMAGE = "image", _("Image")

    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="attachments"
    )
    message = models.ForeignKey(
        Message, verbose_name=_("message"), on_delete=models.CASCADE, related_name="attachments"
    )
    name = models.CharField(_("name"), max_length=255)  # as the user named it, for display only
    path = models.CharField(_("path"), max_length=400)  # virtual workdir path: uploads/<sha256[:12]>-<name>
    mime_type = models.CharField(_("type"), max_length=100)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    size = models.PositiveBigIntegerField(_("size"))
    sha256 = models.CharField(_("SHA-256"), max_length=64)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["message_id", "id"]
        verbose_name = _("attachment")
        verbose_name_plural = _("attachments")

    def __str__(self) -> str:
        return self.name

    @property
    def extracted_text_path(self) -> str:
        """Where the model reads this attachment's text (a PDF's extracted text is a file beside it)."""
        return text_path(self.path, self.kind)


class MessagePinQuerySet(models.QuerySet):
    def checkpoint_ids(self, *, conversation_id: int) -> list[str]:
        """The checkpoint ids of a thread's pinned messages, in transcript order."""
        return list(
            self.filter(conversation_id=conversation_id)
            .order_by("message__seq")
            .values_list("message__lc_message_id", flat=True)
        )


class MessagePin(models.Model):
    """A user's pin on a transcript message: compression keeps it (and its tool-call partners)
    verbatim in the model's view, never folded into a summary nor compacted."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="pins")
    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="pin")
    pinned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    tokens = models.PositiveIntegerField(default=0)  # estimate of the pinned group when pinned
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MessagePinQuerySet.as_manager()

    class Meta:
        ordering = ["conversation", "message__seq"]

    def __str__(self) -> str:
        return f"pin on #{self.message.seq}"


class UsageRecord(models.Model):
    """One model call's usage as its provider reported it: an agent's reply, a summary call or a
    summary's repair call. Written once (by the run executor for replies, by the compression records
    for summaries), with the cost at the endpoint's prices of that moment; never rewritten."""

    class Kind(models.TextChoices):
        REPLY = "reply", _("Reply")
        SUMMARY = "summary", _("Summary")
        REPAIR = "repair", _("Summary repair")

    kind = models.CharField(verbose_name=_("kind"), max_length=10, choices=Kind.choices, db_index=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("owner"), on_delete=models.CASCADE, related_name="+"
    )
    # The figures outlive the thread and the configuration they came from.
    agent = models.ForeignKey(
        "agent_platform.Agent",
        verbose_name=_("agent"),
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    endpoint = models.ForeignKey(
        "agent_platform.ModelEndpoint",
        verbose_name=_("endpoint"),
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    model_name = models.CharField(verbose_name=_("model"), max_length=200, blank=True)
    conversation = models.ForeignKey(
        Conversation,
        verbose_name=_("conversation"),
        null=True,
        on_delete=models.SET_NULL,
        related_name="usage_records",
    )
    message = models.OneToOneField(
        Message, verbose_name=_("message"), null=True, on_delete=models.SET_NULL, related_name="usage"
    )
    input_tokens = models.PositiveIntegerField(verbose_name=_("input tokens"), default=0)
    output_tokens = models.PositiveIntegerField(verbose_name=_("output tokens"), default=0)
    # Of ``input_tokens``: those the provider served from its prompt cache, and those it wrote to it.
    cache_read_tokens = models.PositiveIntegerField(verbose_name=_("cached input tokens"), default=0)
    cache_write_tokens = models.PositiveIntegerField(verbose_name=_("cache write tokens"), default=0)
    calls = models.PositiveIntegerField(verbose_name=_("calls"), default=1)
    cost = models.DecimalField(verbose_name=_("cost"), max_digits=14, decimal_places=6, null=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("usage record")
        verbose_name_plural = _("usage records")
        ordering = ["-created_at", "-id"]
        default_permissions = ("view",)
        indexes = [
            models.Index(fields=["owner", "created_at"]),
            models.Index(fields=["agent", "created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.input_tokens}+{self.output_tokens}"

    @property
    def cached_share(self) -> float | None:
        """The share of the prompt tokens read from the provider's cache (None: no prompt tokens)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None


class ThreadShare(models.Model):
    """One user the owner lets read the thread (read-only; ``conversations.access``)."""

    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="shares"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("shared with"),
        on_delete=models.CASCADE,
        related_name="threads_shared_with",
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("thread share")
        verbose_name_plural = _("thread shares")
        constraints = [models.UniqueConstraint(fields=["conversation", "user"], name="thread_share_unique")]

    def __str__(self) -> str:
        return f"{self.conversation} → {self.user}"


class ThreadLink(models.Model):
    """The thread's read-only link: whoever holds ``token`` reads the transcript. Revoking deletes the
    row, so the old URL names nothing; a new link gets a new token."""

    conversation = models.OneToOneField(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="link"
    )
    token = models.CharField(verbose_name=_("token"), max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("thread link")
        verbose_name_plural = _("thread links")

    def __str__(self) -> str:
        return str(self.conversation)  # never the token: it is the credential

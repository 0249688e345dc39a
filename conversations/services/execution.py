"""Executing one run: claim it, stream the agent graph, relay events, record the transcript and outcome."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from django.db.models import F
from django.utils import timezone
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command, StateSnapshot

from agent_platform.observability.log_context import log_context
from agent_platform.observability.metrics import run_observed
from agent_platform.runtime.graph import agent_graph_for, thread_config
from agent_platform.runtime.model_http import ModelCallStopped
from agent_platform.runtime.public_errors import NOT_DELIVERED, run_error_detail, run_error_public
from agent_platform.runtime.run_scope import run_ledger_save, run_scope_for
from agent_platform.runtime.state_repository import AgentStateRepository
from agent_platform.runtime.stopping import STOP_CHECK_CONFIG_KEY, ToolStopped
from context_engine.errors import Stopped, StoppedAfterSummary
from context_engine.events import stopped_event
from context_engine.state import PINNED_IDS_CONFIG_KEY, TOKEN_USAGE_KEY, merge_token_usage
from context_engine.text import clean_text
from context_engine.tokens.messages import with_estimate
from conversations import events, run_signals
from conversations.models import AgentRun, Conversation
from conversations.selectors import pinned_message_ids, run_queue_head
from conversations.services.attachments import message_model_content
from conversations.services.closing import (
    EARLIER_ATTEMPT_STOPPED,
    ERROR_MAX_CHARS,
    cancelled_tool_answers,
    dangling_tool_answers,
    unrecorded_tail,
)
from conversations.services.db_retry import connection_refresh, is_transient, retry_pauses
from conversations.services.leases import Lease, run_is_orphaned, run_lease, run_reclaim, worker_name
from conversations.services.pressure import conversation_pressure_update
from conversations.services.run_reading import interrupt_question, message_text, transcript_entry
from conversations.services.stop_checks import RunStopChecks
from conversations.services.streaming import ReplyStream
from conversations.services.threads import conversation_lock, failure_notice_append, message_append
from conversations.services.usage import usage_record_reply
from conversations.signals import run_compression_event, run_usage_reported

logger = logging.getLogger(__name__)


def run_claim(*, run_id: int, conversation_id: int | None = None) -> bool:
    """Move the run from ``queued`` to ``running`` if it is its thread's next run and none is running.

    Under the thread's row lock, so two workers never run one thread at once; the conditional UPDATE
    makes a duplicate delivery of the same run a no-op. ``conversation_id``: the run's thread, when the
    caller has read the run already (its status is decided under the lock either way).
    """
    if conversation_id is None:
        run = AgentRun.objects.filter(pk=run_id).only("conversation_id", "status").first()
        if run is None or run.status != AgentRun.Status.QUEUED:
            return False
        conversation_id = run.conversation_id
    return _claim(run_id=run_id, conversation_id=conversation_id) is not None


def _claim(*, run_id: int, conversation_id: int) -> dict[str, Any] | None:
    """``run_claim``'s part under the lock: the fields it wrote (``attempts`` went up by one), or None."""
    with conversation_lock(conversation_id=conversation_id):
        head = run_queue_head(conversation_id=conversation_id)
        if head is None or head.pk != run_id or head.status != AgentRun.Status.QUEUED:
            return None
        now = timezone.now()
        claimed = {
            "status": AgentRun.Status.RUNNING,
            "started_at": now,
            "heartbeat_at": now,
            "worker": worker_name(),
        }
        updated = AgentRun.objects.filter(pk=run_id, status=AgentRun.Status.QUEUED).update(
            **claimed, attempts=F("attempts") + 1
        )
        return claimed if updated else None


def run_perform(*, run_id: int) -> int | None:
    """Claim a queued run and execute it to its end; returns its thread's id (None: no such run).
    Idempotent through status. Starting the thread's next run is ``dispatch.run_execute``'s part.

    A run still ``running`` under a lost worker (the task redelivered after its process died) is
    reclaimed first: re-queued and executed here, or failed if it was already claimed twice.
    """
    run = (
        AgentRun.objects.filter(pk=run_id)
        .select_related("conversation__agent__endpoint", "input_message")
        .first()
    )
    if run is None:
        return None
    if run_is_orphaned(run):
        run_reclaim(run=run)
    # The row as read is the run's from here, with what the claim wrote: a queued run changes only
    # through a claim (or a Stop, which cancels it and fails the claim).
    claimed = _claim(run_id=run_id, conversation_id=run.conversation_id)
    if claimed is not None:
        for field, value in claimed.items():
            setattr(run, field, value)
        run.attempts += 1
        events.broadcast(run.conversation.thread_id, events.RUN_STATUS, run_id=run.pk, status=run.status)
        relay = _RunRelay(run)
        with (
            log_context(thread_id=run.conversation.thread_id, run_id=run.pk),
            run_lease(run_id=run.pk, worker=run.worker) as lease,
        ):
            relay.stop_checks.lease_lost = relay.lease = lease
            try:
                relay.execute_retrying()
            except LeaseLost:
                logger.warning("Run %s was taken back from this worker; it stops here", run_id)
            except Exception as exc:  # noqa: BLE001 - any failure becomes the run's recorded error
                logger.exception("Run %s failed", run_id)
                if is_transient(exc):
                    connection_refresh()  # what follows records the failure: on a connection that works
                relay.bill_summary_calls()
                detail = run_error_detail(exc)
                relay.answer_dangling_tool_calls(reason=f"the turn failed ({detail})")
                # The thread's users read plain words; the admin keeps the exception (and the log its trace).
                error = run_error_public(exc) if relay.reconcile() else NOT_DELIVERED
                _finish(run, AgentRun.Status.FAILED, error=error, error_detail=detail)
            finally:
                relay.reply.flush()  # no timer of this run's reply outlives it
                run_signals.run_signals_clear(run_id=run_id)
    return run.conversation_id


def _finish(
    run: AgentRun, status: str, *, error: str = "", error_detail: str = "", question: str | None = None
) -> None:
    now = timezone.now()
    error, error_detail = clean_text(error)[:ERROR_MAX_CHARS], clean_text(error_detail)
    # Only while this worker still holds the run: recovered or cancelled meanwhile, its new owner reports it.
    updated = AgentRun.objects.filter(pk=run.pk, status=AgentRun.Status.RUNNING, worker=run.worker).update(
        status=status,
        error=error,
        error_detail=error_detail,
        finished_at=now,
        events=run.events,
        usage=run.usage,
    )
    if not updated:
        return
    run.status, run.error, run.finished_at = status, error, now
    logger.info("Run %s ended %s", run.pk, status)
    run_observed(status=status, seconds=(now - run.started_at).total_seconds() if run.started_at else None)
    if status == AgentRun.Status.FAILED:
        failure_notice_append(run=run, error=error)
    Conversation.objects.filter(pk=run.conversation_id).update(last_activity_at=now)
    payload: dict[str, Any] = {"run_id": run.pk, "status": status}
    if error:
        payload["error"] = error
    if question is not None:
        payload["question"] = question
    events.broadcast(run.conversation.thread_id, events.RUN_STATUS, **payload)


class LeaseLost(Exception):
    """This worker no longer holds the run (recovery took it back): it stops, its new holder goes on."""


class _RunRelay:
    """One run's stream: tokens, custom events and new messages go to the group and the transcript."""

    def __init__(self, run: AgentRun) -> None:
        self.run = run
        self.conversation = run.conversation
        self.thread_id = self.conversation.thread_id
        self.seen: set[str] = set()
        self.token_usage: dict[str, Any] | None = None
        self.recorded_usage: dict[str, Any] | None = None  # the token_usage last copied to the row
        self.repository: AgentStateRepository | None = None
        self.reply = ReplyStream(run_id=run.pk, thread_id=self.thread_id)
        self.stop_checks = RunStopChecks(run)
        self.open_compression: dict[str, Any] | None = None  # a compression started, not yet ended
        self.open_calls: set[str] = set()  # the last reply's tool calls this run has no answer to yet
        self.kept_summary: StoppedAfterSummary | None = None  # a summary made before Stop, to keep
        self.scope = run_scope_for(self.conversation)  # this run's workdir and spend-guard ledger
        self.started_on: str | None = None  # the checkpoint's version when the first attempt read it
        self.recorded: list[BaseMessage] = []  # this run's replies and tool results, as transcribed
        self.answered_interrupt = False  # the input message was the answer to ask_user
        self.lease: Lease | None = None  # renewed by each transcript write, too (``_on_message``)

    def execute_retrying(self) -> None:
        """``execute``; after a transient database error (a killed connection) tried again on a fresh
        connection, with back-off, at most ``RUN_DB_RETRIES`` times (``db_retry``). A retry goes on from
        the checkpoint as the failed attempt left it: what it already wrote is not given again."""
        pauses = retry_pauses()
        while True:
            try:
                self.execute()
                return
            except Exception as exc:
                pause = next(pauses, None) if is_transient(exc) else None
                if pause is None:
                    raise
                logger.warning(
                    "Run %s lost its database connection (%s); again in %.1f s", self.run.pk, exc, pause
                )
                connection_refresh()
                time.sleep(pause)
                self.reply.reset()

    def execute(self) -> None:
        # Shared by the agent's runs in this language: this run's values travel in its config.
        graph = agent_graph_for(self.conversation.agent, language=self.run.language)
        # Pins are read once per run: a pin or unpin during a run applies from the next one.
        config = thread_config(
            self.conversation,
            scope=self.scope,
            **{PINNED_IDS_CONFIG_KEY: pinned_message_ids(conversation=self.conversation)},
        )
        repository = self.repository = AgentStateRepository(graph, self.thread_id)
        payload = self._prepared_input(repository)
        cancelled = self.stop_checks.flag()  # the row read at the claim said whether Stop came first
        config = {
            **config,
            "callbacks": [run_signals.StopOnCancel(self.run.pk, stopped=self.stop_checks.flag)],
        }
        # A tool that waits (search, sub-agent) watches too: Stop ends it, not its return.
        config["configurable"][STOP_CHECK_CONFIG_KEY] = self.stop_checks.in_tool
        stream = graph.stream(payload, config, stream_mode=["messages", "custom", "updates"])
        cancelled, interrupted = self._relay(stream, cancelled=cancelled)
        if self.stop_checks.lease_lost.is_set():
            # Another worker took the run: its state is theirs to write, this one only lets go.
            logger.warning("Run %s lost its lease; leaving it to its new worker", self.run.pk)
            return
        if cancelled:
            self._end_cancelled(repository)
        else:
            self._end(repository, interrupted=interrupted)

    def _prepared_input(self, repository: AgentStateRepository) -> Any:
        """The run's graph input, from the checkpoint as this run finds it: tool calls an earlier attempt
        left unanswered are answered first (then the checkpoint is read again)."""
        snapshot = repository.snapshot()
        version = AgentStateRepository.version_of(snapshot)
        # A retry finding the checkpoint moved since the first attempt read it: that attempt's graph
        # took the input (and maybe more); the graph goes on from where it stopped.
        resumed = (self.started_on is not None and version != self.started_on) or self._taken_over(snapshot)
        self.started_on = self.started_on if self.started_on is not None else version
        if not snapshot.interrupts and self.answer_dangling_tool_calls(
            reason=EARLIER_ATTEMPT_STOPPED, snapshot=snapshot, retrying=True
        ):
            snapshot = repository.snapshot()
        self.seen = {m.id for m in snapshot.values.get("messages", []) if m.id}
        self.token_usage = snapshot.values.get(TOKEN_USAGE_KEY)
        return None if resumed else self._input(pending_interrupt=bool(snapshot.interrupts))

    def _taken_over(self, snapshot: StateSnapshot) -> bool:
        """A run claimed again after its worker was lost, whose checkpoint already took its input: the
        graph goes on from where the lost worker left it, never doing again what it did."""
        if self.run.attempts <= 1:
            return False
        if self.run.kind == AgentRun.Kind.RESUME:
            return not snapshot.interrupts  # the answer was given already
        message = self.run.input_message
        held = {m.id for m in snapshot.values.get("messages", [])}
        return message is not None and message.lc_message_id in held

    def reconcile(self) -> bool:
        """After the run failed: what the transcript shows of it (the user's message, the replies and
        tool results recorded) written again into the checkpoint (same ids: nothing doubles), since a
        step whose stream broke may have left them only as pending writes, which the next input drops.
        Whether the two agree (False: the database refused even this; the failure then says the
        message was not delivered)."""
        if self.repository is None:
            try:
                graph = agent_graph_for(self.conversation.agent, language=self.run.language)
            except Exception:  # noqa: BLE001 - e.g. the model is not set up: no step ran, nothing to repair
                return True  # the checkpoint was never written by this run; its failure says why
            self.repository = AgentStateRepository(graph, self.thread_id)
        try:
            if self.repository.snapshot().interrupts:  # it waits on the user: the graph's own state
                return True
            writes: list[BaseMessage] = list(self.recorded)
            message = self.run.input_message
            if self.run.kind != AgentRun.Kind.RESUME and message is not None and not self.answered_interrupt:
                writes.insert(0, self._human(message))
            if writes:
                last = "tools" if isinstance(writes[-1], ToolMessage) else "model"
                self.repository.update({"messages": writes}, as_node=last)
            return True
        except Exception:  # noqa: BLE001 - the failure being recorded matters more than this repair
            logger.exception(
                "Could not bring the checkpoint of run %s in line with its transcript", self.run.pk
            )
            return False

    def _relay(self, stream: Any, *, cancelled: bool) -> tuple[bool, Any]:
        """Relay the stream until it ends or Stop is seen: (cancelled, the interrupt an update carried).
        The stream is closed either way; a run already cancelled at the claim never starts it."""
        interrupted: Any = None
        try:
            for mode, chunk in () if cancelled else stream:
                interrupted = self._on_chunk(mode, chunk) or interrupted
                if self.stop_checks.by_executor():  # between steps (a long tool), or a lost cache flag
                    cancelled = True
                    break
        except StoppedAfterSummary as kept:
            self.kept_summary, cancelled = kept, True
        except (run_signals.RunCancelled, ToolStopped, Stopped, ModelCallStopped):
            cancelled = True
        finally:
            stream.close()
        return cancelled, interrupted

    def _on_chunk(self, mode: str, chunk: Any) -> Any:
        """One item of the stream to its handler; returns the interrupt an update carries, else None."""
        if mode == "messages":
            self._on_token(*chunk)
        elif mode == "custom":
            self._on_custom(chunk)
        elif mode == "updates":
            return self._on_updates(chunk)
        return None

    def bill_summary_calls(self) -> None:
        """Enter this run's summary calls in the thread's ledger when its own state updates did not
        (``run_ledger_save``), before the run ends: a provider bills a call whatever became of the run."""
        if self.repository is None:  # failed before the graph was built: no call was made
            return
        try:
            run_ledger_save(self.scope, self.repository, now=timezone.now())
        except Exception:  # noqa: BLE001 - the run's own end matters more than this count
            logger.exception("Could not enter the summary calls of run %s in its ledger", self.run.pk)

    def _end_cancelled(self, repository: AgentStateRepository) -> None:
        if self.kept_summary is not None:  # paid for before Stop, and valid: the next turn starts from it
            repository.update(self.kept_summary.update, as_node="model")
            self._on_custom(self.kept_summary.event)
        self.bill_summary_calls()
        if self.open_compression is not None:  # its end was lost with the stream that Stop closed
            self._on_custom({"type": events.COMPRESSION, **stopped_event(**self.open_compression)})
        self._close_cancelled(repository)
        self._record_pressure()
        _finish(self.run, AgentRun.Status.CANCELLED)

    def _end(self, repository: AgentStateRepository, *, interrupted: Any) -> None:
        self.bill_summary_calls()
        if interrupted is None and self.open_calls:  # only a tool call can wait on the user (ask_user)
            interrupted = repository.snapshot().interrupts or None
        self._record_pressure()
        if interrupted:
            question = interrupt_question(interrupted)
            self.run.events = [*self.run.events, {"type": "interrupt", "question": question}]
            _finish(self.run, AgentRun.Status.INTERRUPTED, question=question)
        else:
            _finish(self.run, AgentRun.Status.SUCCEEDED)

    def answer_dangling_tool_calls(
        self, *, reason: str, snapshot: StateSnapshot | None = None, retrying: bool = False
    ) -> bool:
        """Answer the tool calls the last model turn left without results (a tool that raised, a worker
        that died), so the thread's next model call is valid. Returns whether it wrote anything.
        ``snapshot``: the checkpoint just read, if the caller has it (a run's start: not read twice).
        ``retrying``: a lost connection is raised, for the step to be tried again (a run's start)."""
        if self.repository is None:  # failed before the graph was built: nothing was checkpointed
            return False
        try:
            snapshot = snapshot or self.repository.snapshot()
            if snapshot.interrupts:  # ask_user waits: its call is answered by the user's reply
                return False
            messages = snapshot.values.get("messages", [])
            unrecorded = unrecorded_tail(messages, conversation_id=self.conversation.pk, seen=self.seen)
            if unrecorded:
                # Perhaps only a pending write of a step whose stream broke: written again (same ids,
                # nothing doubles) it stays what the model sees, whatever input comes next.
                last = "tools" if isinstance(unrecorded[-1], ToolMessage) else "model"
                self.repository.update({"messages": unrecorded}, as_node=last)
            answers = dangling_tool_answers(messages, reason=reason)
            if answers:
                self.repository.update({"messages": answers}, as_node="tools")
            # Through the message path, as Stop's closing messages: what the model sees is in the transcript.
            for message in [*unrecorded, *answers]:
                self._on_message(message)
            return bool(answers or unrecorded)
        except Exception as exc:  # noqa: BLE001 - the failure being recorded matters more than this repair
            if retrying and is_transient(exc):
                raise
            logger.exception("Could not answer the dangling tool calls of thread %s", self.thread_id)
            return False

    def _input(self, *, pending_interrupt: bool) -> Any:
        if self.run.kind == AgentRun.Kind.RESUME:
            return Command(resume=self.run.resume_value)
        message = self.run.input_message
        if message is None:
            raise ValueError("The run has no input message.")
        if pending_interrupt:  # the thread waits on ask_user: this message is the answer
            self.answered_interrupt = True
            return Command(resume=message.content)
        self.seen.add(message.lc_message_id)
        return {"messages": [self._human(message)]}

    def _human(self, message: Any) -> HumanMessage:
        """The user's message as the state holds it, carrying its estimate (SPEC 4: estimated once)."""
        content = message_model_content(message=message, vision=self.run.conversation.agent.sees_images)
        profile = self.run.conversation.agent.compression_config().profile
        return with_estimate(HumanMessage(content=content, id=message.lc_message_id), profile)

    def _close_cancelled(self, repository: AgentStateRepository) -> None:
        """Leave transcript and checkpoint consistent after Stop.

        Messages the graph committed but the stream had not yet delivered are recorded; every tool
        call without a result gets one saying the user stopped it (the model never sees a dangling
        call); the partial reply is kept in both, the transcript row marked ``interrupted``.
        """
        messages = repository.get_values().get("messages", [])
        # A step that finished while the stream was being closed may be only a pending write of the
        # checkpoint: written again (same ids, so nothing doubles) it is what the model sees next time.
        finished = [m for m in messages if isinstance(m, (AIMessage, ToolMessage)) and m.id not in self.seen]
        for message in finished:
            self._on_message(message)
        closing: list[BaseMessage] = list(cancelled_tool_answers(messages))
        self.reply.flush()
        partial = self.reply.text
        if partial:
            closing.append(AIMessage(content=partial, id=f"interrupted-{uuid.uuid4()}"))
        if not finished and not closing:
            return
        repository.update({"messages": [*finished, *closing]})
        for message in closing:
            self._on_message(message, interrupted=message.id.startswith("interrupted-"))

    def _on_token(self, message: BaseMessage, metadata: dict[str, Any]) -> None:
        # Only the agent's own model node: tool output and sub-agents' models are not the reply.
        if not isinstance(message, AIMessageChunk) or metadata.get("langgraph_node") != "model":
            return
        if "|" in str(metadata.get("langgraph_checkpoint_ns", "")):
            return
        if text := message_text(message):
            self.reply.add(text)

    def _on_custom(self, chunk: Any) -> None:
        if not isinstance(chunk, dict) or chunk.get("type") != events.COMPRESSION:
            return
        event = events.json_safe(chunk)
        kind = event.pop("type")
        started = event.get("status") == "started"
        self.open_compression = (
            {"level": event.get("level"), "before_tokens": event.get("before_tokens")} if started else None
        )
        self.run.events = [*self.run.events, {"type": kind, **event}]
        AgentRun.objects.filter(pk=self.run.pk).update(events=self.run.events)
        run_compression_event.send(sender=AgentRun, run=self.run, event=event)
        # The pages get the failure in plain words (``error``); its detail stays with the run and record.
        events.broadcast(self.thread_id, kind, **{k: v for k, v in event.items() if k != "error_detail"})

    def _on_updates(self, chunk: dict[str, Any]) -> Any:
        interrupted = None
        for node, update in chunk.items():
            if node == "__interrupt__":
                interrupted = update
                continue
            for part in update if isinstance(update, (list, tuple)) else [update]:
                if not isinstance(part, dict):
                    continue
                for message in part.get("messages") or []:
                    self._on_message(message)
                if isinstance(part.get(TOKEN_USAGE_KEY), dict):
                    self._on_reading(part[TOKEN_USAGE_KEY])
                    # Updates are deltas for the channel's reducer: merge them as the checkpoint does.
                    self.token_usage = merge_token_usage(self.token_usage, part[TOKEN_USAGE_KEY])
                    self._record_pressure()  # GET state reads the row: it follows the run
                    events.broadcast(self.thread_id, events.STATE, token_usage=self.token_usage)
        return interrupted

    def _on_reading(self, update: dict[str, Any]) -> None:
        """A model call's prompt tokens as its provider reported them, with our estimate of it."""
        estimated = update.get("estimated_input_tokens")
        reported = (update.get("last_call_usage") or {}).get("input_tokens")
        if isinstance(estimated, int) and isinstance(reported, int) and reported > 0:
            run_usage_reported.send(sender=AgentRun, run=self.run, estimated=estimated, reported=reported)

    def _on_message(self, message: BaseMessage, *, interrupted: bool = False) -> None:
        if not isinstance(message, (AIMessage, ToolMessage)) or not message.id or message.id in self.seen:
            return  # same id again: a compaction replaced a message in place, not a new one
        if isinstance(message, AIMessage):
            self.open_calls = {call.get("id") or "" for call in message.tool_calls}
            if not interrupted:  # this model call's reply is complete: the next one streams afresh
                self.reply.reset()
        else:
            self.open_calls.discard(message.tool_call_id)
        entry = transcript_entry(message, run=self.run, interrupted=interrupted)
        with conversation_lock(conversation_id=self.conversation.pk):
            # The lease renewed in the write's own transaction; a run taken back meanwhile writes nothing.
            held = AgentRun.objects.filter(
                pk=self.run.pk, status=AgentRun.Status.RUNNING, worker=self.run.worker
            )
            if not held.update(heartbeat_at=timezone.now()):
                raise LeaseLost()
            row = message_append(conversation=self.conversation, message=entry)
            if isinstance(message, AIMessage):
                usage_record_reply(run=self.run, message=row, usage=message.usage_metadata)
        if self.lease is not None:  # committed with the write: the renewer's next UPDATE is due from it
            self.lease.renewed()
        self.seen.add(message.id)  # once recorded: a write that failed is made again by the retry
        self.recorded.append(message)

    def _record_pressure(self) -> None:
        if self.token_usage == self.recorded_usage:
            return  # already on the row (the end of a run after its last reading)
        conversation_pressure_update(conversation_id=self.conversation.pk, token_usage=self.token_usage)
        self.recorded_usage = self.token_usage

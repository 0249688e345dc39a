"""Undo of the latest summary, under the thread's row lock (same idle rule as a compression)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from agent_platform.calibration.selectors import calibration_for
from agent_platform.runtime.graph import state_repository_for
from compression.errors import NothingToUndo
from compression.selectors import meter_tokens
from compression.services.forced import require_idle
from compression.services.records import record_undo
from context_engine import errors as context_errors
from context_engine.events import LEVEL_UNDO, compression_event
from context_engine.manual.apply import undo_update
from context_engine.policy.pressure import refreshed_usage, usage_overhead
from context_engine.state import SUMMARY_EVENT_KEY, TOKEN_USAGE_KEY, merge_token_usage
from conversations import events
from conversations.services.pressure import conversation_pressure_update
from conversations.services.threads import thread_lock


def thread_compress_undo(*, thread_id: uuid.UUID | str, user: AbstractBaseUser) -> dict[str, Any]:
    """Restore the model-visible history from before the latest summary (same lock and idle rules)."""
    with thread_lock(thread_id=thread_id, user=user) as conversation:
        require_idle(conversation)
        repository, agent = state_repository_for(conversation), conversation.agent
        values = repository.get_values()
        calibration = calibration_for(agent=agent)
        profile = agent.compression_config().profile
        overhead = usage_overhead(values.get(TOKEN_USAGE_KEY), profile)
        try:
            update, before, after = undo_update(
                values,
                profile=profile,
                calibration=calibration,
                overhead_tokens=overhead,
                before_tokens=meter_tokens(agent=agent, values=values),
            )
        except context_errors.NothingToUndo:
            raise NothingToUndo() from None  # 409
        result = {"status": "undone", "before_tokens": before, "after_tokens": after}
        usage = refreshed_usage(
            values,
            update,
            config=agent.compression_config(),
            result=result,
            now=timezone.now(),
            calibration=calibration,
        )
        whole = merge_token_usage(values.get(TOKEN_USAGE_KEY), usage)  # as the checkpoint's reducer will
        conversation_pressure_update(conversation_id=conversation.pk, token_usage=whole)
        record_undo(
            conversation=conversation,
            requested_by=user,
            cutoff_index=(update[SUMMARY_EVENT_KEY] or {}).get("cutoff_index"),
            result=result,
            started_at=timezone.now(),
        )
        # Last: the checkpoint is outside the transaction.
        repository.update({**update, TOKEN_USAGE_KEY: usage})
        payload = compression_event(level=LEVEL_UNDO, **result)
        events.broadcast(conversation.thread_id, events.COMPRESSION, **payload)  # on commit
        return result

"""What the agent runtime needs of a conversation: its thread and its agent. The model
(``conversations.Conversation``) lives a floor above, which this package may not import, so the runtime
names it by this protocol; a ``Conversation`` is one."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agent_platform.models import Agent


class AgentThread(Protocol):
    @property
    def thread_id(self) -> uuid.UUID: ...

    @property
    def agent(self) -> Agent: ...

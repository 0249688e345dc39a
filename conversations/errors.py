"""Domain errors of threads and runs, each mapped once to ``{"code", "message"}`` by the API."""

from __future__ import annotations

from agent_platform.errors import Conflict, NotFound, Unprocessable


class ThreadNotFound(NotFound):
    code = "thread_not_found"

    def __init__(self, message: str = "No such thread.", **extra: object) -> None:
        super().__init__(message, **extra)


class AgentNotFound(NotFound):
    code = "agent_not_found"

    def __init__(self, message: str = "No such agent, or it is disabled.", **extra: object) -> None:
        super().__init__(message, **extra)


class ThreadBusy(Conflict):
    code = "thread_busy"

    def __init__(self, message: str = "The thread is busy; try again shortly.", **extra: object) -> None:
        super().__init__(message, **extra)


class NotInterrupted(Conflict):
    code = "not_interrupted"

    def __init__(self, message: str = "The thread is not waiting for an answer.", **extra: object) -> None:
        super().__init__(message, **extra)


class EmptyMessage(Unprocessable):
    code = "empty_message"

    def __init__(self, message: str = "The message is empty.", **extra: object) -> None:
        super().__init__(message, **extra)


class InvalidInput(Unprocessable):
    code = "invalid_input"


class MessageNotFound(NotFound):
    code = "message_not_found"

    def __init__(self, message: str = "No such message in this thread.", **extra: object) -> None:
        super().__init__(message, **extra)


class PinLimitExceeded(Unprocessable):
    """A pin that would take the thread's pinned messages over the agent's cap; says how much is left."""

    code = "pin_limit_exceeded"

"""Domain errors of threads and runs, each mapped once to ``{"code", "message"}`` by the API."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from agent_platform.errors import ApplicationError, Conflict, NotFound, Unprocessable


class ThreadNotFound(NotFound):
    code = "thread_not_found"
    default_message = _("No such thread.")


class AgentNotFound(NotFound):
    code = "agent_not_found"
    default_message = _("No such agent, or it is disabled.")


class ThreadBusy(Conflict):
    code = "thread_busy"
    default_message = _("The thread is busy; try again shortly.")


class NotInterrupted(Conflict):
    code = "not_interrupted"
    default_message = _("The thread is not waiting for an answer.")


class EmptyMessage(Unprocessable):
    code = "empty_message"
    default_message = _("The message is empty.")


class InvalidInput(Unprocessable):
    code = "invalid_input"


class RunNotFound(NotFound):
    code = "run_not_found"
    default_message = _("No such run in this thread.")


class RunNotActive(Conflict):
    code = "run_not_active"
    default_message = _("Nothing to stop: no run is queued or running.")


class MessageNotFound(NotFound):
    code = "message_not_found"

    def __init__(self, message: str = "No such message in this thread.", **extra: object) -> None:
        super().__init__(message, **extra)


class PinFoldedWhileBusy(Conflict):
    """A pin of a message already folded into the summary while a run or a compression is under way:
    bringing it back into the model's view changes the summary state, which only an idle thread allows."""

    code = "pin_folded_busy"
    default_message = _(
        "This message is already folded into the summary. Pin it again when the current run has "
        "finished, and the model will read it word for word after the summary."
    )


class PinLimitExceeded(Unprocessable):
    """A pin that would take the thread's pinned messages over the agent's cap; says how much is left."""

    code = "pin_limit_exceeded"


class MessageNotEditable(Unprocessable):
    """An edit or regeneration of a message that has no turn of its own to fork (an answer to a
    question, a reply, a message of an earlier version)."""

    code = "message_not_editable"
    default_message = _("This message can't be edited or regenerated.")


class InvalidRequestId(ApplicationError):
    """A ``request_id`` that is only blank space: no key a retry could be matched on."""

    status = 400
    code = "invalid_request_id"
    default_message = _("The request_id is blank; send a key of visible characters, or none.")


class RequestIdReused(Conflict):
    """A ``request_id`` the thread already took for another kind of request (a send's, reused on a
    regenerate): the first request's result is not this one's."""

    code = "request_id_reused"
    default_message = _("This request_id was used for another kind of request on this thread; use a new one.")


class BranchNotRestorable(Unprocessable):
    """A continue of a branch whose model view no checkpoint holds (a turn the model never saw, say):
    making it current would let the page and the model disagree, so nothing changes."""

    code = "branch_not_restorable"
    default_message = _(
        "This version can't be continued: the agent's memory of it was not kept. Fork it into a new thread instead."
    )

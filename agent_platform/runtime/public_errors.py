"""What a failed run tells the people of its thread: plain words that name no endpoint, environment
variable or exception class. The exception as raised stays with the run for the admin
(``AgentRun.error_detail``) and in the log with its traceback.

The texts are English msgids (``gettext_noop``): stored as they are, and put into the reader's
language where a page shows them.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai
from django.utils.translation import gettext_noop

from agent_platform.errors import ApplicationError
from agent_platform.runtime.models import ModelConfigurationError
from context_engine.events import engine_error_words

MODEL_MISCONFIGURED = gettext_noop("The agent's model is not set up correctly. An administrator can see why.")
MODEL_CREDENTIALS_REFUSED = gettext_noop(
    "The model service refused the platform's credentials. An administrator can see why."
)
MODEL_BUSY = gettext_noop("The model service is busy or out of quota. Try again in a moment.")
MODEL_TIMEOUT = gettext_noop("The model service did not answer in time. Try again.")
MODEL_UNREACHABLE = gettext_noop("The model service could not be reached. Try again later.")
MODEL_SERVER_ERROR = gettext_noop("The model service had an error. Try again.")
MODEL_REFUSED = gettext_noop("The model service refused the request. An administrator can see why.")
DETAIL_MAX_CHARS = 2000
# A run that failed and whose checkpoint could not be brought in line with the transcript.
NOT_DELIVERED = gettext_noop(
    "Your message did not reach the agent (the database did not answer); send it again to retry."
)
INTERNAL = gettext_noop("Something went wrong on the platform's side. An administrator can see why.")

# Most specific first: a timeout is a connection error, every refusal a status error.
_MODEL_ERRORS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    ((openai.AuthenticationError, openai.PermissionDeniedError), MODEL_CREDENTIALS_REFUSED),
    (openai.RateLimitError, MODEL_BUSY),
    (openai.APITimeoutError, MODEL_TIMEOUT),
    (openai.APIConnectionError, MODEL_UNREACHABLE),
    (openai.InternalServerError, MODEL_SERVER_ERROR),
    (openai.APIStatusError, MODEL_REFUSED),
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def run_error_public(exc: BaseException) -> str:
    """The words a thread's users read for a run that ended with ``exc``."""
    for error in _chain(exc):
        if words := engine_error_words(error):
            return words  # the platform's own account (e.g. a request too long: its figures, what it tried)
        if isinstance(error, ModelConfigurationError):
            return MODEL_MISCONFIGURED  # its message names the endpoint and the key's variable
        if isinstance(error, ApplicationError):
            return error.message  # written for people
        for types, text in _MODEL_ERRORS:
            if isinstance(error, types):
                return text
    return INTERNAL


def run_error_detail(exc: BaseException) -> str:
    """The exception as raised, class and text: what the admin reads (``AgentRun.error_detail``)."""
    message = getattr(exc, "message", None) or str(exc) or exc.__class__.__name__
    return f"{exc.__class__.__name__}: {message}"[:DETAIL_MAX_CHARS]

"""The one domain exception type, mapped once to an HTTP error body ``{"code", "message"}``.

Messages are for people: a subclass names its ``default_message`` with ``gettext_lazy``, and it is put
into words when raised, in the language of the request that raised it.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _


class ApplicationError(Exception):
    status = 400
    code = "bad_request"
    default_message = _("The request could not be carried out.")

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        status: int | None = None,
        **extra: object,
    ):
        message = str(message if message is not None else self.default_message)
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.extra = extra

    def as_body(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, **self.extra}


class NotFound(ApplicationError):
    status = 404
    code = "not_found"


class Conflict(ApplicationError):
    status = 409
    code = "conflict"


class Unprocessable(ApplicationError):
    status = 422
    code = "unprocessable"

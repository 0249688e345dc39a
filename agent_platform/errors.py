"""The one domain exception type, mapped once to an HTTP error body ``{"code", "message"}``."""

from __future__ import annotations


class ApplicationError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None, **extra: object):
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

"""The one error body of the API, ``{"code", "message"}``, as an OpenAPI schema each operation lists
for the statuses it can answer."""

from __future__ import annotations

from ninja import Schema


class ErrorOut(Schema):
    code: str
    message: str


# Any authenticated operation: a body that cannot be read (400: form data where JSON is expected, a
# broken multipart body), no or a bad credential (401), a body or parameter that does not validate (422).
COMMON_ERRORS = (400, 401, 422)


def error_responses(*statuses: int) -> dict[int, type[ErrorOut]]:
    """``{status: ErrorOut}`` for the common statuses plus ``statuses``, for an operation's ``response``."""
    return dict.fromkeys(sorted({*COMMON_ERRORS, *statuses}), ErrorOut)

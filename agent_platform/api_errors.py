"""The one error body of the API, ``{"code", "message"}``, as an OpenAPI schema each operation lists
for the statuses it can answer."""

from __future__ import annotations

from ninja import Schema


class ErrorOut(Schema):
    code: str
    message: str


# Any authenticated operation: no or a bad credential (401), a body or parameter that does not
# validate (422).
COMMON_ERRORS = (401, 422)


def error_responses(*statuses: int) -> dict[int, type[ErrorOut]]:
    """``{status: ErrorOut}`` for the common statuses plus ``statuses``, for an operation's ``response``."""
    return dict.fromkeys(sorted({*COMMON_ERRORS, *statuses}), ErrorOut)

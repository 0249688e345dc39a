"""Every API operation lists its error statuses with the one error body in OpenAPI."""

from __future__ import annotations

import pytest

from config.api import api


def _operations():
    schema = api.get_openapi_schema()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield f"{method.upper()} {path}", operation


def _error_ref(operation: dict, status: int) -> str | None:
    content = operation["responses"].get(status, {}).get("content", {})
    return content.get("application/json", {}).get("schema", {}).get("$ref")


@pytest.mark.parametrize(
    ("name", "operation"), list(_operations()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_operation_declares_the_error_body_for_401_and_422(name, operation):
    for status in (401, 422):
        assert _error_ref(operation, status) == "#/components/schemas/ErrorOut", (name, status)


def test_thread_operations_declare_404_and_writes_declare_409():
    operations = dict(_operations())
    for name, operation in operations.items():
        if "{thread_id}" in name:
            assert 404 in operation["responses"], name
    for name in ("POST /api/threads/{thread_id}/messages", "POST /api/threads/{thread_id}/compress"):
        assert _error_ref(operations[name], 409) == "#/components/schemas/ErrorOut"

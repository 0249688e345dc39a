"""Fixtures shared across test packages (registered through ``pytest_plugins`` in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.openai_stub import OpenAIStub


@pytest.fixture
def openai_stub():
    """A running local OpenAI-protocol server; script it with ``.reply``, ``.tool_call``, ``.error``."""
    stub = OpenAIStub().start()
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture(scope="session", autouse=True)
def _checkpointer_lifecycle(request, django_db_blocker):
    """Create the checkpoint tables before any test holds a transaction open, and close the pool
    before the test database is dropped (PostgreSQL refuses to drop a database in use)."""
    from django.conf import settings

    from agent_platform.runtime.checkpointer import checkpointer_close, checkpointer_get

    if "postgresql" in settings.DATABASES["default"]["ENGINE"]:
        request.getfixturevalue("django_db_setup")
        with django_db_blocker.unblock():
            checkpointer_get()
    yield
    checkpointer_close()

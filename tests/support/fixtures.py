"""Fixtures shared across test packages (registered through ``pytest_plugins`` in tests/conftest.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.support.openai_stub import OpenAIStub

STUB_KEY_ENV = "STUB_API_KEY"


@pytest.fixture
def openai_stub(request):
    """A running local OpenAI-protocol server; script it with ``.reply``, ``.tool_call``, ``.error``.
    Under Django, the operator's bindings let ``STUB_API_KEY`` (and only it) go to the stub's origin, in
    this process (the setting) and in the workers and servers it starts (the environment they inherit)."""
    stub = OpenAIStub().start()
    if request.config.pluginmanager.hasplugin("django"):
        binding = f"{STUB_KEY_ENV}={stub.origin}"
        request.getfixturevalue("settings").MODEL_KEY_BINDINGS = binding
        request.getfixturevalue("monkeypatch").setenv("MODEL_KEY_BINDINGS", binding)
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture(scope="session", autouse=True)
def _checkpointer_lifecycle(request):
    """Close this process's checkpointer, and the connection async tests leave in asgiref's thread,
    before the test database is dropped (PostgreSQL refuses to drop a database in use, and
    pyproject.toml makes that refusal fail the run). The checkpointer's tables come with the test
    database: ``migrate`` creates them. Nothing to do where Django is not loaded (the context engine's
    tests run without it)."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.conf import settings

    from agent_platform.runtime.checkpointer import checkpointer_close

    if worker := os.environ.get("PYTEST_XDIST_WORKER"):
        # One SQLite checkpoint file per xdist worker, as each has its own test database.
        path = Path(settings.CHECKPOINT_SQLITE_PATH)
        settings.CHECKPOINT_SQLITE_PATH = path.with_name(f"{path.stem}-{worker}{path.suffix}")
    if "postgresql" in settings.DATABASES["default"]["ENGINE"]:
        request.getfixturevalue("django_db_setup")  # set up before, so torn down after, this fixture
    yield
    checkpointer_close()
    _close_connections_of_sync_to_async()


def _close_connections_of_sync_to_async() -> None:
    """Close the database connection of the thread where async tests' ``sync_to_async`` calls ran.

    Outside any ``async_to_sync`` (an async test's own event loop), asgiref runs every thread-sensitive
    ``sync_to_async`` call in one long-lived thread; the ORM calls made there (``client.force_login``,
    ``user.save``) open a connection that nothing closes, and PostgreSQL refused to drop the test database
    while it was open. A ``sync_to_async`` call from a fresh loop runs in that same thread."""
    from asgiref.sync import sync_to_async
    from django.db import connections

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(sync_to_async(connections.close_all)())
    finally:
        loop.close()

"""The thread-maintenance fixtures of tests/compression (its ``thread`` is not the root one)."""

from tests.compression.conftest import (  # noqa: F401 - fixtures, registered by being here
    make_thread,
    stub_agent_with,
    summarized_thread,
    summarizer,
    thread,
)

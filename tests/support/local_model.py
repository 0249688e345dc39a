"""The real model server for tests marked ``local_model``: llama.cpp with the packaged SmolLM2-135M,
started once per session on a free loopback port with a small window (so overflowing it is cheap)."""

from __future__ import annotations

import pytest

TEST_CONTEXT_WINDOW = 2048
TEST_MAX_REPLY_TOKENS = 160  # bounded replies keep a 30-turn test short on two loaded cores


@pytest.fixture(scope="session")
def local_model_server():
    from agent_platform.local_model import start_server

    server = start_server(
        context_window=TEST_CONTEXT_WINDOW, max_reply_tokens=TEST_MAX_REPLY_TOKENS, threads=1
    )
    yield server
    server.stop()

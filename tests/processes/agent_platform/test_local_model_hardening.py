"""Issue 38: the local model server (``serve_local``) is not open to whoever reaches its port. It is
started with a random API key (a request without it is refused, the app's endpoint sends it), on a
port held from the choice to the bind (the parent's listening socket, handed to the child), and it
logs in the app's own folder (``VAR_DIR/logs``), not under a guessable name in /tmp. And it keeps to the
threads it was given, in prompt evaluation too."""

from __future__ import annotations

import secrets
import socket
import stat
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from agent_platform.local_model import LOCAL_KEY_ENV, MODEL_ALIAS, listening_socket, seed_local_agent
from agent_platform.runtime.models import endpoint_api_key
from bench import throughput  # its CPU reading from /proc (every thread, and reaped children)


@pytest.mark.local_model
@pytest.mark.django_db
def test_the_server_wants_its_random_key_and_the_endpoint_sends_it(local_model_server):
    url = f"{local_model_server.base_url}/models"
    assert httpx.get(url, timeout=10).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
    key = local_model_server.api_key
    assert (
        len(key) >= 40
        and httpx.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code == 200
    )
    agent = seed_local_agent(
        base_url=local_model_server.base_url, context_window=local_model_server.context_window, api_key=key
    )
    assert agent.endpoint.api_key_env == LOCAL_KEY_ENV and endpoint_api_key(agent.endpoint) == key


@pytest.mark.local_model
def test_the_log_lives_in_the_apps_folder_readable_by_its_user_only(local_model_server):
    log = local_model_server.log_path
    assert log.parent == Path(settings.VAR_DIR) / "logs" and log.is_file()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_the_port_is_held_from_the_choice_on():
    with listening_socket() as held:
        port = held.getsockname()[1]
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(("127.0.0.1", port))  # nobody else can take it before the server serves on it
    with pytest.raises(OSError), listening_socket() as taken, listening_socket(taken.getsockname()[1]):
        pass


@pytest.mark.local_model
def test_a_one_thread_server_evaluates_a_prompt_on_one_core(local_model_server):
    """The tests' server is started with ``threads=1``, and llama-cpp-python would still evaluate prompts
    on every CPU unless told (``n_threads_batch``): over a long prompt its CPU time would be near twice
    the time taken on an idle two-core machine, the second core taken from whatever runs beside it."""
    words = " ".join(f"w{secrets.token_hex(3)}" for _ in range(150))  # new text: no prefix is cached
    pid = local_model_server.process.pid
    cpu_before, started = throughput.cpu_seconds([pid]), time.monotonic()
    response = httpx.post(
        f"{local_model_server.base_url}/chat/completions",
        json={"model": MODEL_ALIAS, "messages": [{"role": "user", "content": words}], "max_tokens": 1},
        headers={"Authorization": f"Bearer {local_model_server.api_key}"},
        timeout=120,
    )
    took, cpu = time.monotonic() - started, throughput.cpu_seconds([pid]) - cpu_before
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["prompt_tokens"] > 400
    assert cpu <= took * 1.1 + 0.2, f"{cpu:.1f} CPU-s in {took:.1f} s: more than one core"

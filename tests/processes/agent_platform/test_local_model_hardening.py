"""Issue 38: the local model server (``serve_local``) is not open to whoever reaches its port. It is
started with a random API key (a request without it is refused, the app's endpoint sends it), on a
port held from the choice to the bind (the parent's listening socket, handed to the child), and it
logs in the app's own folder (``VAR_DIR/logs``), not under a guessable name in /tmp."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from agent_platform.local_model import LOCAL_KEY_ENV, listening_socket, seed_local_agent
from agent_platform.runtime.models import endpoint_api_key


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

"""`make run` ends by printing where to chat and where the admin is, and both addresses answer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]


def _makefile() -> str:
    return (ROOT / "Makefile").read_text()


def _recipe(target: str) -> str:
    return _makefile().split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]


def test_make_run_starts_the_announcing_server():
    makefile = _makefile()
    run = _recipe("run").strip().splitlines()[-1].strip()
    assert run.endswith("manage.py serve --prepare --noreload $(HOST):$(PORT)")
    assert "\nHOST ?= 127.0.0.1\n" in makefile and "\nPORT ?= 8000\n" in makefile


def test_make_run_installs_only_what_running_needs():
    """Issue 27 (11): the test tools are the dev extra; `make run` installs the package alone."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {re.split(r"[\[=<>]", requirement)[0].lower() for requirement in project["dependencies"]}
    dev = {
        re.split(r"[\[=<>]", requirement)[0].lower()
        for requirement in project["optional-dependencies"]["dev"]
    }
    assert {"pytest", "pytest-django", "playwright", "moto", "hypothesis", "ruff"} <= dev
    assert runtime.isdisjoint(dev)
    assert {"prometheus-client", "python-json-logger", "django", "daphne"} <= runtime
    assert _recipe("run").startswith(" install-run")
    install_run = _recipe("$(RUN_STAMP)")
    assert "-e ." in install_run and "[dev]" not in install_run
    assert "-e '.[dev]'" in _recipe("$(STAMP)") and _recipe("test").startswith(" check ")
    assert _recipe("check").startswith(" lint-ruff")  # ruff first, then mypy beside the engine's tests
    assert "lint-types test-engine" in _recipe("check")
    tiers = (
        "lint-ruff",
        "lint-types",
        "test-engine",
        "test-django",
        "test-processes",
        "test-browser",
        "test-services-suite",
        "test-services-processes",
    )
    for tier in tiers:
        assert _recipe(tier).startswith(" install"), tier  # each tier installs the dev extra first
    assert _recipe("test-services").split() == ["test-services-suite", "test-services-processes"]


def test_serve_prints_the_chat_and_admin_addresses_once_listening(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.test_settings", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "127.0.0.1:0", "--noreload", "--skip-checks"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("Admin:") for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, "".join(lines)
            lines.append(process.stdout.readline())
        output = "".join(lines)
        chat = re.search(r"^Chat:  (http://127\.0\.0\.1:\d+/)$", output, re.M)
        admin = re.search(r"^Admin: (http://127\.0\.0\.1:\d+/admin/)$", output, re.M)
        assert chat and admin, output
        assert output.index("Listening on") < output.index("Chat:")  # printed once the server listens
        assert httpx.get(chat.group(1)).status_code == 302  # to the login page
        assert httpx.get(admin.group(1)).status_code == 302
    finally:
        process.terminate()
        process.wait(10)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_prints_the_port_it_serves_on_and_logs_each_request_once():
    """Issue 39: `make run PORT=8101` printed the admin at :8000 (the demo seed's fixed address) and
    every request twice (Django's own logger and the root handler)."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.test_settings", PYTHONUNBUFFERED="1", DEBUG="true")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--noreload", "--skip-checks"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []

    def read_until(marker: str) -> None:
        deadline = time.monotonic() + 60
        while not any(marker in line for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, "".join(lines)
            lines.append(process.stdout.readline())

    try:
        read_until("Admin:")
        assert f"Admin: http://127.0.0.1:{port}/admin/" in "".join(lines)
        assert ":8000" not in "".join(lines)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/accounts/login/").status_code == 200
        read_until("/accounts/login/")  # logged after /healthz: by now every /healthz line is read
        assert sum("GET /healthz" in line for line in lines) == 1, "".join(lines)
        assert sum("GET /accounts/login/" in line for line in lines) == 1, "".join(lines)
    finally:
        process.terminate()
        process.wait(10)

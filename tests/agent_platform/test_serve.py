"""`make run` ends by printing where to chat and where the admin is, and both addresses answer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def test_make_run_starts_the_announcing_server():
    run_recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert run_recipe.strip().splitlines()[-1].strip().endswith("manage.py serve 127.0.0.1:8000")


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

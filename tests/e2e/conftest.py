"""A Daphne server (HTTP + WebSockets) on a fresh file database, and a headless Chromium page; and the
language x width matrix, which runs in full only where it means something.

``E2E_MATRIX=layout`` (the default, in CI and ``make test``): files marked ``layout`` (their subject is
layout, width or translated text) run every language and width they are parametrized with; every other
browser test runs one combination, English at 1366 px (other parameters, such as a dark scheme, stay).
``E2E_MATRIX=full``: every combination of every file (before refreshing the README's screenshots).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import CHROMIUM
from tests.e2e.chat_support import log_in

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


E2E_MATRIX = os.environ.get("E2E_MATRIX", "layout")
# The one combination a browser test whose subject is not layout or text runs in the reduced matrix.
ONE_COMBINATION = {"language": "en", "lang": "en", "width": 1366}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if E2E_MATRIX not in ("layout", "full"):
        raise pytest.UsageError(f"E2E_MATRIX must be 'layout' or 'full', not {E2E_MATRIX!r}")
    if E2E_MATRIX == "full":
        return
    named = {arg for arg in config.args if "[" in arg}  # a combination asked for by its id still runs
    kept, dropped = [], []
    for item in items:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        reduced = item.get_closest_marker("browser") and not item.get_closest_marker("layout")
        other = any(name in params and params[name] != value for name, value in ONE_COMBINATION.items())
        (dropped if reduced and other and item.nodeid not in named else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        # Above the longest a seeder waits on purpose: "throttle" waits up to 21 s for a fresh minute
        # (tests.e2e.urls.SPENT_MINUTE_LEFT_SECONDS + 1), which a 20 s read timeout cut short under load.
        self.http = httpx.Client(base_url=base_url, timeout=60)
        self._sessions: dict[str, dict] = {}

    def signed_in(self, browser, username: str) -> dict:
        """``username``'s cookies, signed in once per server through the login form: a test's fresh
        context starts from them instead of posting the form again (the login page, its post and the
        redirect cost about a second a test; the tests of logging in post the form themselves)."""
        if username not in self._sessions:
            context = browser.new_context(base_url=self.base_url)
            page = context.new_page()
            log_in(page, username)
            page.wait_for_url(re.compile(r"/$"))
            self._sessions[username] = context.storage_state()
            context.close()
        return self._sessions[username]

    def seed(self, action: str, **data: object) -> dict:
        response = self.http.post("/__e2e__/seed", json={"action": action, **data})
        response.raise_for_status()
        return response.json()


@pytest.fixture(scope="session")
def e2e_server() -> Iterator[Server]:
    if not shutil.which(CHROMIUM):
        pytest.skip(f"needs Chromium at {CHROMIUM}")
    workdir = Path(tempfile.mkdtemp(prefix="e2e-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.e2e.settings", "E2E_DIR": str(workdir)}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    port = _free_port()
    log = open(workdir / "daphne.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "config.asgi:application",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base_url}/accounts/login/", timeout=1)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((workdir / "daphne.log").read_text()) from None
                time.sleep(0.2)
        server = Server(base_url)
        server.seed("setup")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        if os.environ.get("E2E_KEEP_DIR"):  # the server's log and files, to read after a failure
            print(f"e2e server files kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import expect, sync_playwright

    # Assertions wait up to 10 s (Playwright's default is 5): a loaded two-core machine may take that
    # long to relay a socket event; a passing assertion returns as soon as it holds.
    expect.set_options(timeout=10_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, e2e_server):
    """A logged-in page (a fresh browser context per test)."""
    context = browser.new_context(
        base_url=e2e_server.base_url,
        viewport={"width": 1280, "height": 860},
        storage_state=e2e_server.signed_in(browser, "alice"),
    )
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto("/")
    yield page
    context.close()


@pytest.fixture
def screenshot():
    """Save a screenshot under docs/screenshots/ when SAVE_SCREENSHOTS=1 (for the README)."""

    def save(page, name: str) -> None:
        if os.environ.get("SAVE_SCREENSHOTS") != "1":
            return
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)

    return save


@pytest.fixture
def slow_model(e2e_server):
    e2e_server.seed("slow_model", delay=0.15)
    yield
    e2e_server.seed("fast_model")


@pytest.fixture
def open_page(browser, e2e_server):
    """``open_page(width=..., dark=..., staff=...)``: a logged-in page in a fresh context."""
    contexts = []

    def make(*, width: int = 1366, height: int = 900, dark: bool = False, staff: bool = False):
        context = browser.new_context(
            base_url=e2e_server.base_url,
            viewport={"width": width, "height": height},
            color_scheme="dark" if dark else "light",
            storage_state=e2e_server.signed_in(browser, "root" if staff else "alice"),
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto("/")
        return page

    yield make
    for context in contexts:
        context.close()

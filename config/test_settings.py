"""Test settings: only overrides of config.settings."""

import os
import tempfile

from config.settings import *  # noqa: F403
from config.settings import BASE_DIR, DATABASES, env

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, as in the embedded default, not Django's shared-cache in-memory database: shared cache
    # answers "database table is locked" at once to a second connection (a run's thread) instead of
    # waiting, and no busy timeout applies to it. One file per test process, so sessions never meet.
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(tempfile.gettempdir(), f"agent-platform-test-{os.getpid()}.sqlite3")
    }

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
WORKDIR_ROOT = BASE_DIR / "var" / "test-workdirs"
MEDIA_ROOT = BASE_DIR / "var" / "test-media"
CHECKPOINT_SQLITE_PATH = BASE_DIR / "var" / "test-checkpoints.sqlite3"
# No real search provider; the processes tests start (a worker searching a slow stub) opt in.
WEB_SEARCH_BASE_URL = env.str("TEST_WEB_SEARCH_BASE_URL", default="")
WEB_SEARCH_API_KEY = env.str("TEST_WEB_SEARCH_API_KEY", default="")
# Socket tests run in one process; Celery-through-Redis tests opt in explicitly.
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# Runs execute inline after commit, so tests are deterministic; one test covers the threaded path.
RUN_EXECUTION = "eager"
# No recovery thread in the test process; the processes tests start (servers, workers) opt in.
RUN_RECOVERY_TIMER = env.bool("RUN_RECOVERY_TIMER", default=False)
# Tests log in with the test client (authenticate() without a request, which django-axes refuses)
# and send many messages: the throttling tests turn these on themselves.
AXES_ENABLED = False
THROTTLE_SEND_PER_MINUTE = THROTTLE_SEND_CONCURRENT = 0
THROTTLE_UPLOAD_PER_MINUTE = THROTTLE_UPLOAD_CONCURRENT = 0
THROTTLE_COMPRESS_PER_MINUTE = THROTTLE_COMPRESS_CONCURRENT = 0
# Calibration readings stored at once: a test reads the table right after its run.
CALIBRATION_FLUSH_SECONDS = env.float("CALIBRATION_FLUSH_SECONDS", default=0)

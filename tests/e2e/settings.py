"""Settings of the server the browser tests talk to: test settings on a file database in a temp dir.

The server runs in its own process (Daphne), so the database, checkpoints and workdirs are files that
the seeding endpoints in ``tests.e2e.urls`` write in that same process.
"""

import os
from pathlib import Path

from config.settings import SQLITE_OPTIONS
from config.test_settings import *  # noqa: F403

E2E_DIR = Path(os.environ["E2E_DIR"])
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(E2E_DIR / "db.sqlite3"),
        "OPTIONS": SQLITE_OPTIONS,  # the embedded default's: runs in threads write beside requests
    }
}
CHECKPOINT_SQLITE_PATH = E2E_DIR / "checkpoints.sqlite3"
WORKDIR_ROOT = E2E_DIR / "workdirs"
# Runs execute in threads beside the request, as on the embedded default; events reach the sockets
# through the in-memory layer because everything lives in this one process.
RUN_EXECUTION = "inprocess"
ROOT_URLCONF = "tests.e2e.urls"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
# Logins go through django-axes as in production (the browser posts the login form).
AXES_ENABLED = True
# Static files do not change while the suite runs: the browser may keep them for the test's context, as
# it keeps production's (WhiteNoise's default under DEBUG, 0, revalidates every static file on every page
# load: half of the server's requests).
WHITENOISE_MAX_AGE = 3600

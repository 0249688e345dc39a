"""All settings, read from the environment once, with embedded defaults that run on one machine.

Embedded default (no environment): SQLite, a SQLite LangGraph checkpointer, the in-memory channel
layer, runs executed in-process, workdirs on local disk and the offline model. Production switches:
DATABASE_URL, REDIS_URL, WORKDIR_STORAGE (+ WORKDIR_S3_*); model servers are ModelEndpoint records in
the admin, whose keys are environment variables allowed by MODEL_KEY_ENV_ALLOWLIST.
"""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default="django-insecure-embedded-default-change-me-in-production")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "agent_platform",
    "conversations",
    "compression",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.http_errors.ApiErrorBodyMiddleware",
    "config.http_errors.RequestSizeLimitMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Runs execute in threads beside the request that queued them: wait for the writer, don't fail.
# IMMEDIATE: a writer takes the lock at BEGIN, so concurrent writers wait (busy timeout) instead of
# failing on a read lock's upgrade. WAL: readers never block the writer, nor the writer them.
SQLITE_OPTIONS = {
    "timeout": 20,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
}
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
    # A fresh clone has no var/: SQLite creates the file but not its directory.
    if str(DATABASES["default"]["NAME"]) not in ("", ":memory:"):
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
FORMS_URLFIELD_ASSUME_HTTPS = True
# Largest request body (file uploads aside): above it the API answers 413 and pages show a form error.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "conversations:thread-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
# Uploaded knowledge-base documents (their text is also kept in the database).
MEDIA_URL = "media/"
MEDIA_ROOT = env.path("MEDIA_ROOT", default=VAR_DIR / "media")
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []

# --- Redis: channel layer and Celery broker ---------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Shared across processes when Redis is there (e.g. the "compression under way" marker of a thread).
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "memory://")
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# "celery": runs go to Celery workers; "inprocess": a thread in the web process (embedded default).
RUN_EXECUTION = env.str("RUN_EXECUTION", default="celery" if REDIS_URL else "inprocess")
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
# A running run holds a lease, renewed every third of it while it executes. A run whose lease ran out
# (or whose process on this host is gone) lost its worker: re-queued once, then failed.
RUN_LEASE_SECONDS = env.float("RUN_LEASE_SECONDS", default=60.0)
# Every Celery worker, and the web server when runs execute in-process, reclaims expired leases every
# lease period (and an in-process server, at start, what the previous one left running or queued).
RUN_RECOVERY_TIMER = env.bool("RUN_RECOVERY_TIMER", default=True)

# --- Agent runtime ------------------------------------------------------------------------------
# Thread workdirs (saved tool results, conversation history): "local" (a directory per thread under
# WORKDIR_ROOT, one machine), "s3" (a prefix per thread in a bucket every web process and worker
# reaches: AWS, MinIO, Ceph RGW, R2), or the dotted path of a storage class that takes `location`.
# For s3, credentials and region come from the standard AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
# AWS_DEFAULT_REGION environment (or an instance role); they are never copied into settings.
WORKDIR_STORAGE = env.str("WORKDIR_STORAGE", default="") or "local"
WORKDIR_ROOT = env.path("WORKDIR_ROOT", default=VAR_DIR / "workdirs")
WORKDIR_S3_BUCKET = env.str("WORKDIR_S3_BUCKET", default="")
WORKDIR_S3_ENDPOINT_URL = env.str("WORKDIR_S3_ENDPOINT_URL", default="")  # empty: AWS itself
WORKDIR_S3_PREFIX = env.str("WORKDIR_S3_PREFIX", default="workdirs")
if WORKDIR_STORAGE == "s3" and not WORKDIR_S3_BUCKET:
    raise ImproperlyConfigured("WORKDIR_STORAGE=s3 needs WORKDIR_S3_BUCKET.")
CHECKPOINT_SQLITE_PATH = env.path("CHECKPOINT_SQLITE_PATH", default=VAR_DIR / "checkpoints.sqlite3")
# Which environment variables a model endpoint may name as its key (shell-style patterns). Names of
# settings (SECRET_KEY, WEB_SEARCH_API_KEY...) are refused whatever this says.
MODEL_KEY_ENV_ALLOWLIST = env.list("MODEL_KEY_ENV_ALLOWLIST", default=["*_API_KEY"])
WEB_SEARCH_BASE_URL = env.str("WEB_SEARCH_BASE_URL", default="")
WEB_SEARCH_API_KEY = env.str("WEB_SEARCH_API_KEY", default="")
MODEL_REQUEST_TIMEOUT = env.float("MODEL_REQUEST_TIMEOUT", default=120.0)

# --- Attachments (files a user brings into a thread; saved under the workdir's uploads/) ------------
ATTACHMENT_MAX_FILE_BYTES = env.int("ATTACHMENT_MAX_FILE_BYTES", default=10 * 1024 * 1024)
ATTACHMENT_MAX_FILES = env.int("ATTACHMENT_MAX_FILES", default=5)
ATTACHMENT_MAX_THREAD_BYTES = env.int("ATTACHMENT_MAX_THREAD_BYTES", default=100 * 1024 * 1024)
# Text attachments up to this many characters are shown inline; longer ones as a note with a preview.
ATTACHMENT_INLINE_MAX_CHARS = env.int("ATTACHMENT_INLINE_MAX_CHARS", default=4000)
ATTACHMENT_PREVIEW_TOKENS = env.int("ATTACHMENT_PREVIEW_TOKENS", default=400)

# --- Compression ------------------------------------------------------------------------------
COMPRESSION_TOOL_ARG_MAX_LENGTH = env.int("COMPRESSION_TOOL_ARG_MAX_LENGTH", default=2000)
# The "compression under way" marker of a thread: a lease renewed while the compression runs, so it
# clears within this many seconds should the compressing process die.
COMPRESSING_LEASE_SECONDS = env.int("COMPRESSING_LEASE_SECONDS", default=10)
# How long a writer waits for a thread's row lock (held briefly by another write, or by a compression's
# claim or apply) before answering 409.
THREAD_LOCK_TIMEOUT_MS = env.int("THREAD_LOCK_TIMEOUT_MS", default=3000)
# POST .../compress?wait=true answers synchronously for at most this long, then 202 with the job.
COMPRESSION_WAIT_SECONDS = env.float("COMPRESSION_WAIT_SECONDS", default=60.0)

# --- Production hardening (manage.py check --deploy) ------------------------------------------
if not DEBUG:
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"httpx": {"level": "WARNING"}, "openai": {"level": "WARNING"}},
}

"""All settings, read from the environment once, with embedded defaults that run on one machine.

Embedded default (no environment): SQLite, a SQLite LangGraph checkpointer, the in-memory channel
layer, runs executed in-process, workdirs on local disk and the offline model. Production switches:
DATABASE_URL, REDIS_URL, WORKDIR_STORAGE (+ WORKDIR_S3_*); model servers are ModelEndpoint records in
the admin, whose keys are environment variables allowed by MODEL_KEY_ENV_ALLOWLIST and bound to their
origins by MODEL_KEY_BINDINGS.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, SELF, UNSAFE_INLINE
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
    "csp",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "axes",
    "ninja",  # /api/docs from its own static files (no CDN, no inline script)
    "agent_platform",
    "conversations",
    "compression",
]

MIDDLEWARE = [
    "config.ops.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
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
    # Last, as django-axes asks: it answers a locked-out login (config.login_throttle.locked_out).
    "axes.middleware.AxesMiddleware",
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
# --- Login throttling (django-axes; admin: Axes → Access attempts, Access failures) ---------------
# The axes backend only refuses a locked-out login; ModelBackend authenticates. API tokens and
# sessions already signed in do not pass through authenticate() and are not affected.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOGIN_LOCKOUT_MINUTES", default=15.0))
# Per account-and-address pair: failures from one address never lock the account out of another.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# And per address over every account, at a higher bound (config.login_throttle.PairAndAddressHandler).
AXES_HANDLER = "config.login_throttle.PairAndAddressHandler"
LOGIN_ADDRESS_FAILURE_LIMIT = env.int("LOGIN_ADDRESS_FAILURE_LIMIT", default=30)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "config.login_throttle.locked_out"
AXES_CLIENT_IP_CALLABLE = "config.login_throttle.client_ip"
AXES_VERBOSE = False

# --- Per-user throttles (agent_platform.throttle): attempts a minute, and at once; 0 turns one off --
# At once: sends count the user's queued and running runs; uploads and compressions their requests
# still in flight. Over a limit: 429 rate_limited with Retry-After.
# The per-minute counts live in the cache: while Redis is down they admit (django-ratelimit's fail-open),
# as the cache degrades to empty (config.redis_pool), instead of refusing every send.
RATELIMIT_FAIL_OPEN = True
THROTTLE_SEND_PER_MINUTE = env.int("THROTTLE_SEND_PER_MINUTE", default=20)
THROTTLE_SEND_CONCURRENT = env.int("THROTTLE_SEND_CONCURRENT", default=5)
THROTTLE_UPLOAD_PER_MINUTE = env.int("THROTTLE_UPLOAD_PER_MINUTE", default=10)
THROTTLE_UPLOAD_CONCURRENT = env.int("THROTTLE_UPLOAD_CONCURRENT", default=2)
THROTTLE_COMPRESS_PER_MINUTE = env.int("THROTTLE_COMPRESS_PER_MINUTE", default=5)
THROTTLE_COMPRESS_CONCURRENT = env.int("THROTTLE_COMPRESS_CONCURRENT", default=1)

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

# An open thread socket checks again that its user may still see the thread (session, active,
# permission) before relaying events, at most this often; a logout closes it at once.
SOCKET_ACCESS_RECHECK_SECONDS = env.float("SOCKET_ACCESS_RECHECK_SECONDS", default=5.0)

# While Redis does not answer, the cache answers as if empty and the database decides (Stop, markers):
# a call waits at most REDIS_SOCKET_TIMEOUT_SECONDS, then Redis is not tried again for
# REDIS_RETRY_SECONDS. Live events wait for it up to LIVE_EVENT_RETRY_SECONDS (at most
# LIVE_EVENT_BUFFER of them per process), then are dropped and counted (a page's reload recovers them).
REDIS_SOCKET_TIMEOUT_SECONDS = env.float("REDIS_SOCKET_TIMEOUT_SECONDS", default=2.0)
REDIS_RETRY_SECONDS = env.float("REDIS_RETRY_SECONDS", default=1.0)
LIVE_EVENT_RETRY_SECONDS = env.float("LIVE_EVENT_RETRY_SECONDS", default=10.0)
LIVE_EVENT_BUFFER = env.int("LIVE_EVENT_BUFFER", default=10000)

# Shared across processes when Redis is there (e.g. the "compression under way" marker of a thread).
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "config.redis_pool.SharedClientRedisCache",
            "LOCATION": REDIS_URL,
            # One pool per process, not per thread: run signals are read from the graph's threads.
            # Timeouts: a stalled server degrades the cache (config.redis_pool) instead of hanging a run.
            "OPTIONS": {
                "pool_class": "config.redis_pool.SharedConnectionPool",
                "socket_connect_timeout": REDIS_SOCKET_TIMEOUT_SECONDS,
                "socket_timeout": REDIS_SOCKET_TIMEOUT_SECONDS,
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "memory://")
# A process sends tasks over at most this many broker connections, shared by its threads (a run is
# sent as one LPUSH of its id): with Celery's default of 10, a web process with many requests at
# once opened up to ten, and more Redis connections than messages in a short burst.
CELERY_BROKER_POOL_LIMIT = env.int("CELERY_BROKER_POOL_LIMIT", default=2)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# A pool process keeps its database connection between tasks for this many seconds (config.celery),
# checked before each; 0: a new connection per task, as web processes open one per request.
WORKER_DB_CONN_MAX_AGE = env.int("WORKER_DB_CONN_MAX_AGE", default=300)
# Celery's Django fixup closes a worker's connections after every task unless this is set; it then
# closes them after this many tasks (and close_old_connections, around each task, by age or error).
CELERY_DB_REUSE_MAX = 1000 if WORKER_DB_CONN_MAX_AGE else None

# "celery": runs go to Celery workers; "inprocess": a thread in the web process (embedded default).
RUN_EXECUTION = env.str("RUN_EXECUTION", default="celery" if REDIS_URL else "inprocess")
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
# A running run holds a lease, renewed every sixth of it while it executes. A run whose lease ran out
# (or whose process on this host is gone) lost its worker: re-queued once, then failed. 12 s, checked
# every 2 s: a surviving worker takes a dead worker's run back within 14 s.
RUN_LEASE_SECONDS = env.float("RUN_LEASE_SECONDS", default=12.0)
# A holder that is a live process of this machine is asked directly (its pid), not judged by its
# renewals, which a starved CPU delays: its run is taken back only once silent this long (stuck).
RUN_LEASE_STUCK_SECONDS = env.float("RUN_LEASE_STUCK_SECONDS", default=120.0)
# A run's step that lost its database connection (killed, restarted server) is tried again on a fresh
# one, at most RUN_DB_RETRIES times, waiting RUN_DB_RETRY_SECONDS and then twice as long each time.
RUN_DB_RETRIES = env.int("RUN_DB_RETRIES", default=3)
RUN_DB_RETRY_SECONDS = env.float("RUN_DB_RETRY_SECONDS", default=0.5)
# Every Celery worker, and the web server when runs execute in-process, reclaims expired leases every
# sixth of a lease (and an in-process server, at start, what the previous one left running or queued).
RUN_RECOVERY_TIMER = env.bool("RUN_RECOVERY_TIMER", default=True)
# Reported prompt tokens calibrate a model's estimate; a process stores its readings in batches, at
# most this many seconds apart (0: each at once, under the row lock, as the tests do).
CALIBRATION_FLUSH_SECONDS = env.float("CALIBRATION_FLUSH_SECONDS", default=2.0)

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
# Which key variable may be sent to which origin (scheme, host, port), e.g.
# "OPENAI_API_KEY=https://api.openai.com, DEEPSEEK_API_KEY=https://api.deepseek.com". Parsed and
# checked by agent_platform.key_bindings; an endpoint whose origin is not bound to its variable gets no key.
MODEL_KEY_BINDINGS = env.str("MODEL_KEY_BINDINGS", default="")
WEB_SEARCH_BASE_URL = env.str("WEB_SEARCH_BASE_URL", default="")
WEB_SEARCH_API_KEY = env.str("WEB_SEARCH_API_KEY", default="")
MODEL_REQUEST_TIMEOUT = env.float("MODEL_REQUEST_TIMEOUT", default=120.0)
# Every tool call's budget (agent_platform.runtime.stopping): wall time for the whole call (a sub-agent's
# ``task`` has its own), and the characters its answer may hold.
TOOL_CALL_SECONDS = env.float("TOOL_CALL_SECONDS", default=60.0)
TOOL_TASK_SECONDS = env.float("TOOL_TASK_SECONDS", default=900.0)
TOOL_OUTPUT_MAX_CHARS = env.int("TOOL_OUTPUT_MAX_CHARS", default=1_000_000)

# --- Attachments (files a user brings into a thread; saved under the workdir's uploads/) ------------
ATTACHMENT_MAX_FILE_BYTES = env.int("ATTACHMENT_MAX_FILE_BYTES", default=10 * 1024 * 1024)
ATTACHMENT_MAX_FILES = env.int("ATTACHMENT_MAX_FILES", default=5)
ATTACHMENT_MAX_THREAD_BYTES = env.int("ATTACHMENT_MAX_THREAD_BYTES", default=100 * 1024 * 1024)
# Text attachments up to this many characters are shown inline; longer ones as a note with a preview.
ATTACHMENT_INLINE_MAX_CHARS = env.int("ATTACHMENT_INLINE_MAX_CHARS", default=4000)
ATTACHMENT_PREVIEW_TOKENS = env.int("ATTACHMENT_PREVIEW_TOKENS", default=400)

# --- Compression ------------------------------------------------------------------------------
COMPRESSION_TOOL_ARG_MAX_LENGTH = env.int("COMPRESSION_TOOL_ARG_MAX_LENGTH", default=2000)
# The low-water mark, in percent of each agent's trigger T: a compaction event compacts down to it (when
# it can), so the prompt prefix a provider caches changes once for several turns (issue 40).
COMPACTION_LOW_WATER_PERCENT = env.int("COMPACTION_LOW_WATER_PERCENT", default=50)
if not 0 <= COMPACTION_LOW_WATER_PERCENT <= 95:
    raise ImproperlyConfigured("COMPACTION_LOW_WATER_PERCENT is a percentage of the trigger from 0 to 95.")
# The summary circuit breaker: after this many refused model summaries of a thread within the window,
# no model summary is asked for the cooldown after the latest; the extractive one is written instead.
SUMMARY_BREAKER_REFUSALS = env.int("SUMMARY_BREAKER_REFUSALS", default=3)
SUMMARY_BREAKER_WINDOW_SECONDS = env.int("SUMMARY_BREAKER_WINDOW_SECONDS", default=3600)
SUMMARY_BREAKER_COOLDOWN_SECONDS = env.int("SUMMARY_BREAKER_COOLDOWN_SECONDS", default=1800)
# The "compression under way" marker of a thread: a lease renewed while the compression runs, so it
# clears within this many seconds should the compressing process die.
COMPRESSING_LEASE_SECONDS = env.int("COMPRESSING_LEASE_SECONDS", default=10)
# How long a writer waits for a thread's row lock (held briefly by another write, or by a compression's
# claim or apply) before answering 409.
THREAD_LOCK_TIMEOUT_MS = env.int("THREAD_LOCK_TIMEOUT_MS", default=3000)
# POST .../compress?wait=true answers synchronously for at most this long, then 202 with the job.
COMPRESSION_WAIT_SECONDS = env.float("COMPRESSION_WAIT_SECONDS", default=60.0)
# A deleted thread stays in its owner's bin, restorable, this many days; after that it is gone for
# good from every page (a friendly 404).
THREAD_BIN_RETENTION_DAYS = env.int("THREAD_BIN_RETENTION_DAYS", default=30)
# `compact_threads` leaves a thread alone unless the tokens it expects to save are at least this many
# times the tokens the summary call is expected to write (its summary's estimated length).
BULK_MIN_SAVING_FACTOR = env.float("BULK_MIN_SAVING_FACTOR", default=2.0)

# --- Headers and proxies ----------------------------------------------------------------------
# Every page: scripts and styles from this site only (no inline script anywhere; the templates load
# static files), images from here (or data:/blob: previews), sockets and fetches to here, no plugins,
# no framing, forms post here. Inline style *attributes* stay allowed (server-rendered meter widths);
# with img-src and font-src closed to other hosts they cannot load or leak anything.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# How many reverse proxies (TLS termination, load balancer) stand in front of the web processes. Only
# then is X-Forwarded-Proto believed (SECURE_PROXY_SSL_HEADER, the socket origin check) and the client
# address read from X-Forwarded-For (login throttling); 0: the headers are whatever a client sent.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
if TRUSTED_PROXY_COUNT:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Production hardening (manage.py check --deploy) ------------------------------------------
if not DEBUG:
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

# --- Operations: metrics and logs -------------------------------------------------------------
# /metrics answers only a bearer METRICS_TOKEN or a peer in METRICS_ALLOWED_IPS (addresses or networks,
# e.g. 10.0.0.0/8); with neither set it does not exist (404). Several worker processes on one machine:
# set PROMETHEUS_MULTIPROC_DIR (an empty directory, cleared at deploy) in every process's environment.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_IPS = env.list("METRICS_ALLOWED_IPS", default=[])
for _network in METRICS_ALLOWED_IPS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as exc:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_IPS: {exc}") from exc
# "text" (the default) or "json": one JSON object per line with the request, thread and run ids.
LOG_FORMAT = env.str("LOG_FORMAT", default="text")
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured("LOG_FORMAT must be 'text' or 'json'.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"ids": {"()": "agent_platform.observability.log_context.LogContextFilter"}},
    "formatters": {
        "text": {"format": "%(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(thread_id)s %(run_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["ids"]},
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        # The development server's access lines: Django's own "django" logger prints them too (with
        # DEBUG on), and they would reach the root handler as well; written once, here.
        "django.channels.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

"""Which key variable may be sent to which origin: the operator's ``MODEL_KEY_BINDINGS``.

``MODEL_KEY_BINDINGS="OPENAI_API_KEY=https://api.openai.com, DEEPSEEK_API_KEY=https://api.deepseek.com"``
binds each key variable to the origins it may go to (a variable may be listed once per origin).
Origins are compared exactly: scheme, host and port (a missing port is the scheme's default). A key
variable that is not bound goes nowhere; an endpoint with no key variable needs no binding. The
environment, not the admin, decides: whoever may edit endpoints cannot send a key to a host of theirs.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from typing import NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _

DEFAULT_PORTS = {"http": 80, "https": 443}
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = DEFAULT_PORTS[self.scheme] == self.port
        return f"{self.scheme}://{host}" if default else f"{self.scheme}://{host}:{self.port}"


def url_origin(url: str) -> Origin | None:
    """The origin of an http(s) URL, or None for anything else (another scheme, no host, a bad port)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return Origin(scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme])


def parse_bindings(raw: str) -> dict[str, frozenset[Origin]]:
    """``NAME=origin`` pairs separated by commas (or new lines); ``ValueError`` names the bad pair."""
    bindings: dict[str, set[Origin]] = {}
    for pair in re.split(r"[,\n]", raw):
        pair = pair.strip()
        if not pair:
            continue
        name, sep, url = (part.strip() for part in pair.partition("="))
        if not sep or not _ENV_NAME.fullmatch(name):
            raise ValueError(f"{pair!r} is not NAME=origin (e.g. OPENAI_API_KEY=https://api.openai.com)")
        parts = urlsplit(url)
        origin = url_origin(url)
        if origin is None or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            raise ValueError(f"{url!r} is not an origin: scheme://host[:port], nothing after it")
        bindings.setdefault(name, set()).add(origin)
    return {name: frozenset(origins) for name, origins in bindings.items()}


@functools.lru_cache(maxsize=8)
def _parsed(raw: str) -> dict[str, frozenset[Origin]]:
    try:
        return parse_bindings(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"MODEL_KEY_BINDINGS: {exc}") from exc


# Bindings a process makes for a server it started itself (``local_model``: the key it gave its own
# llama.cpp child on a loopback port); never read from anything an admin can edit.
_PROCESS_BINDINGS: dict[str, frozenset[Origin]] = {}


def key_bind_in_process(*, key_env: str, url: str) -> None:
    """Bind ``key_env`` to ``url``'s origin in this process, beside ``MODEL_KEY_BINDINGS``."""
    origin = url_origin(url)
    if origin is None:
        raise ValueError(f"{url!r} has no origin")
    _PROCESS_BINDINGS[key_env] = _PROCESS_BINDINGS.get(key_env, frozenset()) | {origin}


def key_bindings() -> dict[str, frozenset[Origin]]:
    """The bindings in force (read from settings each time, parsed once per value), with this process's
    own (``key_bind_in_process``)."""
    configured = _parsed(settings.MODEL_KEY_BINDINGS)
    if not _PROCESS_BINDINGS:
        return configured
    names = configured.keys() | _PROCESS_BINDINGS.keys()
    return {n: configured.get(n, frozenset()) | _PROCESS_BINDINGS.get(n, frozenset()) for n in names}


def binding_error(*, key_env: str, url: str) -> str | None:
    """Why the key in ``key_env`` may not be sent to ``url``, or None when it may (or there is no key)."""
    if not key_env:
        return None
    origin = url_origin(url)
    bound = key_bindings().get(key_env, frozenset())
    if origin is not None and origin in bound:
        return None
    if not bound:
        return _(
            "%(name)s is bound to no origin: the operator binds key variables to origins in "
            "MODEL_KEY_BINDINGS, e.g. %(name)s=https://api.example.com."
        ) % {"name": key_env}
    return _("%(name)s may only be sent to %(origins)s (MODEL_KEY_BINDINGS), not to %(origin)s.") % {
        "name": key_env,
        "origins": ", ".join(sorted(str(o) for o in bound)),
        "origin": str(origin) if origin else url,
    }


# Env names read by settings.py that are not themselves settings: never a model key either.
SERVICE_ENV_NAMES = frozenset({"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"})
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def key_env_error(name: str) -> str | None:
    """Why ``name`` may not hold a model endpoint's key, or None when it may.

    Allowed: an environment variable name matching a pattern of ``MODEL_KEY_ENV_ALLOWLIST`` (default
    ``*_API_KEY``) that is not the name of a Django setting (``SECRET_KEY``, ``WEB_SEARCH_API_KEY``...)
    nor of a service URL the settings read: whoever may edit endpoints must not be able to send the
    process's own secrets to a server.
    """
    if not _ENV_NAME.fullmatch(name):
        return str(_("An environment variable name: capital letters, digits and underscores."))
    if name in SERVICE_ENV_NAMES or hasattr(settings, name):
        return str(_("%(name)s is a setting of this server, never a model key.") % {"name": name})
    patterns = settings.MODEL_KEY_ENV_ALLOWLIST
    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
        return str(
            _("%(name)s is not allowed by MODEL_KEY_ENV_ALLOWLIST (%(patterns)s).")
            % {"name": name, "patterns": ", ".join(patterns)}
        )
    return None

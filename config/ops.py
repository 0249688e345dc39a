"""The operator's endpoints: ``/healthz`` (the process answers), ``/readyz`` (its services answer) and
``/metrics`` (Prometheus), and the middleware that gives each request an id for the logs.

``/metrics`` exists only once ``METRICS_TOKEN`` or ``METRICS_ALLOWED_IPS`` is set (404 otherwise); a
request then needs the bearer token or an address in the allowed networks (403 otherwise). The address
is ``REMOTE_ADDR``, the peer that connected: a proxy in front must be the one allowed, or use the token.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterator

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from agent_platform.observability.log_context import log_set
from agent_platform.observability.readiness import readiness
from conversations.models import AgentRun

logger = logging.getLogger(__name__)

REQUEST_ID_HEADER = "HTTP_X_REQUEST_ID"
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


@never_cache
@require_safe  # GET and HEAD: a load balancer's probe may be either
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers. Touches nothing else, so a restart is only asked for when it is stuck."""
    return JsonResponse({"status": "ok"})


def _is_staff(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    try:
        return bool(user is not None and user.is_active and user.is_staff)
    except DatabaseError:  # the database is what failed: nobody is known to be staff
        return False


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Which services answer. Why one did not (its host, port or path) is for staff and the logs only:
    anyone else reads ``failed`` for it."""
    staff = _is_staff(request)  # before the checks: a failed one may leave the connection unusable
    results = readiness()
    failed = sorted(name for name, reason in results.items() if reason)
    checks = {name: ("ok" if reason is None else reason) for name, reason in results.items()}
    if failed:
        logger.warning("Not ready: %s", "; ".join(f"{name}: {checks[name]}" for name in failed))
    if not staff:
        checks = {name: ("ok" if reason is None else "failed") for name, reason in results.items()}
    if failed:
        message = f"Not ready: {', '.join(failed)} did not answer."
        return JsonResponse(
            {"code": "not_ready", "message": message, "failed": failed, "checks": checks}, status=503
        )
    return JsonResponse({"status": "ready", "checks": checks})


class QueueDepthCollector:
    """Runs waiting to start, read from the database at scrape time (so every worker reports one
    truth, and nothing is counted in memory that a crash could lose)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            queued = AgentRun.objects.filter(status=AgentRun.Status.QUEUED).count()
        except DatabaseError:  # the other series still matter when the database is down (/readyz says so)
            logger.warning("metrics: could not read the run queue", exc_info=True)
            return
        gauge = GaugeMetricFamily("agent_platform_runs_queued", "Agent runs queued, waiting to start.")
        gauge.add_metric([], queued)
        yield gauge


def _metrics_allowed(request: HttpRequest) -> bool | None:
    """None: the endpoint is off (nothing configured); else whether this request may scrape."""
    token, networks = settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS
    if not token and not networks:
        return None
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), token.encode()):
        return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(network, strict=False) for network in networks)


def _registry() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # every worker's values, from the shared directory
    else:
        registry = CollectorRegistry()
        registry.register(_ProcessMetrics())
    registry.register(QueueDepthCollector())
    return registry


class _ProcessMetrics:
    """This process's own metrics (the default registry) beside the per-scrape collectors."""

    def collect(self):
        yield from REGISTRY.collect()


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    allowed = _metrics_allowed(request)
    if allowed is None:
        return JsonResponse({"code": "not_found", "message": "Not found."}, status=404)
    if not allowed:
        return JsonResponse(
            {"code": "forbidden", "message": "A metrics token or an allowed address is required."},
            status=403,
        )
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


class RequestContextMiddleware:
    """Gives every request an id (the client's ``X-Request-ID`` when well-formed, else a new one),
    returned in the response header and carried by every log line written while it is served, with
    the thread its URL names."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.META.get(REQUEST_ID_HEADER, "")
        request_id = given if REQUEST_ID_PATTERN.match(given) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        log_set(request_id=request_id, thread_id=None, run_id=None)
        try:
            response = self.get_response(request)
        finally:
            log_set(request_id=None, thread_id=None, run_id=None)
        response["X-Request-ID"] = request_id
        return response

    def process_view(self, request: HttpRequest, view, args, kwargs) -> None:
        if kwargs.get("thread_id"):
            log_set(thread_id=kwargs["thread_id"])

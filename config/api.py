"""The one django-ninja API (mounted at /api/), its authentication and its error bodies."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.http.request import RawPostDataException
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, ValidationError

from agent_platform.auth import api_auth
from agent_platform.errors import ApplicationError

api = NinjaAPI(
    title="Agent platform API",
    version="1.0",
    auth=api_auth,
    urls_namespace="api",
    docs_url="/docs",
)


def _error(request: HttpRequest, status: int, code: str, message: str, **extra: object) -> HttpResponse:
    return api.create_response(request, {"code": code, "message": message, **extra}, status=status)


@api.exception_handler(ApplicationError)
def on_application_error(request: HttpRequest, exc: ApplicationError) -> HttpResponse:
    response = api.create_response(request, exc.as_body(), status=exc.status)
    for header, value in getattr(exc, "headers", {}).items():  # e.g. Retry-After of a 429
        response[header] = value
    return response


@api.exception_handler(AuthenticationError)
def on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return _error(request, 401, "unauthorized", "Authentication required: a session or a valid bearer token.")


@api.exception_handler(AuthorizationError)
def on_authorization_error(request: HttpRequest, exc: AuthorizationError) -> HttpResponse:
    return _error(request, 403, "forbidden", str(exc.message) if hasattr(exc, "message") else "Forbidden.")


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return _error(request, 422, "invalid_input", "The request did not validate.", errors=exc.errors)


@api.exception_handler(RawPostDataException)
def on_form_body(request: HttpRequest, exc: RawPostDataException) -> HttpResponse:
    """Form data (already parsed by the body middleware) sent to an operation that reads JSON."""
    return _error(
        request,
        400,
        "json_expected",
        "This operation takes a JSON body (Content-Type: application/json), not form data.",
    )


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, 404, "not_found", "Not found.")


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    codes = {
        400: "bad_request",  # e.g. a body that is not JSON
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        409: "conflict",
    }
    return _error(request, exc.status_code, codes.get(exc.status_code, "error"), str(exc))


def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /api/: a JSON 404 like the rest of the API, not the HTML error page."""
    return _error(request, 404, "not_found", "No such API endpoint. See /api/docs.")


api.add_router("/", "agent_platform.api.router")
api.add_router("/threads", "conversations.api.router")
api.add_router("/threads", "compression.api.router")
api.add_router("/threads", "conversations.share_api.router")
api.add_router("/usage", "conversations.usage_api.router")

"""Django HTTP middleware: the API's error bodies for what django-ninja answers itself.

django-ninja returns a bare ``HttpResponseNotAllowed`` (text) for a wrong method on a known path;
API clients get ``{"code", "message"}`` for every error, so this one is rewritten too.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/"


class ApiMethodNotAllowedMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or not request.path.startswith(API_PREFIX):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = response.get("Allow", "")
        body = JsonResponse(
            {
                "code": "method_not_allowed",
                "message": f"{request.method} is not allowed here. Allowed: {allowed}.",
            },
            status=405,
        )
        if allowed:
            body["Allow"] = allowed
        return body

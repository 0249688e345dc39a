"""Issue 38: every 400 has a JSON body. Django answers a request it cannot even build (a query string
that is not UTF-8) with an empty 400 before any middleware; the ASGI wrapper gives it
``{"code", "message"}``. Multipart bodies that cannot be parsed answer 400 ``invalid_multipart`` JSON
on the API. Other answers pass unchanged."""

from __future__ import annotations

import asyncio
import json

import pytest

from config.error_bodies import ErrorBodies

pytestmark = pytest.mark.django_db(transaction=True)


def _call(app, *, method: str = "GET", path: str = "/healthz", query: bytes = b"", headers=(), body=b""):
    scope = {
        "type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": query,
        "headers": list(headers), "scheme": "http", "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5555), "asgi": {"version": "3.0"}, "http_version": "1.1", "root_path": "",
    }  # fmt: skip
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict] = []

    async def receive():
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()  # the client stays connected until the answer is sent
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = sent[0]
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


@pytest.fixture
def asgi_app():
    from config.asgi import application

    return application


@pytest.mark.parametrize("path", ["/healthz", "/api/threads", "/threads/new"])
def test_a_request_django_cannot_build_answers_400_with_a_json_body(asgi_app, path):
    status, headers, body = _call(asgi_app, path=path, query=b"q=%ff\xff")
    assert status == 400
    assert headers[b"content-type"] == b"application/json" and int(headers[b"content-length"]) == len(body)
    assert json.loads(body)["code"] == "bad_request"


def test_answers_with_a_body_and_redirects_pass_unchanged(asgi_app):
    assert _call(asgi_app, path="/healthz")[2] == b'{"status": "ok"}'
    status, headers, body = _call(asgi_app, path="/threads/new")  # anonymous: to the login page
    assert status == 302 and body == b"" and headers[b"Location"].startswith(b"/accounts/login/")
    status, _headers, body = _call(asgi_app, path="/api/no-such-route")
    assert status == 404 and json.loads(body)["code"] == "not_found"


def test_an_empty_error_from_any_app_gets_a_json_body():
    async def empty_error(scope, receive, send):
        await send(
            {"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"text/html")]}
        )
        await send({"type": "http.response.body", "body": b""})

    status, headers, body = _call(ErrorBodies(empty_error))
    assert status == 413 and headers[b"content-type"] == b"application/json"
    assert json.loads(body)["code"] == "request_entity_too_large"


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("multipart/form-data", b"no boundary"),
        ("multipart/form-data; boundary=\x00", b"--x--"),
        ("multipart/form-data; boundary=xyz", b"--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\nX: " + b"y" * 20000 + b"\r\n\r\nv\r\n--xyz--\r\n"),
    ],
)  # fmt: skip
def test_multipart_bodies_that_cannot_be_read_answer_400_json_on_the_api(
    client, user, thread, content_type, body
):
    client.force_login(user)
    url = f"/api/threads/{thread.thread_id}/messages/upload"
    response = client.generic("POST", url, body, content_type=content_type)
    assert response.status_code == 400 and response.json()["code"] == "invalid_multipart"

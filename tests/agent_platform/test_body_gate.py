"""Authentication before bodies: through the ASGI application Daphne serves, a body is refused from its
headers before one byte of it is read (Django's handler would spool it to disk first)."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application

from agent_platform.services import api_token_issue
from config.body_gate import BodyGate, upload_cap_bytes

pytestmark = pytest.mark.django_db(transaction=True)

MB = 1024 * 1024
BOUNDARY = "gate-boundary"


class Body:
    """An ASGI ``receive`` that hands out ``size`` bytes in 1 MB chunks, counting what was taken."""

    def __init__(self, size: int, first: bytes = b"") -> None:
        self.size, self.first, self.sent = size, first, 0

    async def __call__(self) -> dict:
        if self.sent >= self.size:  # all sent: the client waits for the answer
            await asyncio.Event().wait()
        chunk = self.first if self.sent == 0 and self.first else b"x" * min(MB, self.size - self.sent)
        self.sent += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": self.sent < self.size}


def _multipart(content: str, file_bytes: bytes) -> bytes:
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="content"\r\n\r\n{content}\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="note.txt"\r\n'
            f"Content-Type: text/plain\r\n\r\n"
        ).encode()
        + file_bytes
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


async def _request(path: str, body: Body, *, length: int, headers: list[tuple[bytes, bytes]] = ()):
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 5000),
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode()),
            (b"content-length", str(length).encode()),
            *headers,
        ],
    }
    app = ApplicationCommunicator(BodyGate(get_asgi_application()), scope)
    app.input_queue.get = body  # the application reads the body from here
    start = await app.receive_output(timeout=10)
    content = b""
    while True:
        message = await app.receive_output(timeout=10)
        content += message.get("body", b"")
        if not message.get("more_body"):
            break
    return start["status"], dict(start["headers"]), content


async def test_a_50_mb_anonymous_upload_is_refused_before_one_byte_is_read(thread):
    body = Body(50 * MB)
    status, headers, content = await _request(
        f"/api/threads/{thread.thread_id}/messages/upload", body, length=50 * MB
    )
    assert status == 401 and json.loads(content)["code"] == "unauthorized"
    assert body.sent == 0


async def test_a_wrong_bearer_token_is_anonymous_too(thread):
    body = Body(50 * MB)
    status, _headers, _content = await _request(
        f"/api/threads/{thread.thread_id}/messages/upload",
        body,
        length=50 * MB,
        headers=[(b"authorization", b"Bearer ap_not-a-token")],
    )
    assert status == 401 and body.sent == 0


async def test_an_anonymous_upload_to_a_page_goes_to_the_login_page_unread(thread):
    body = Body(50 * MB)
    status, headers, _content = await _request(f"/threads/{thread.thread_id}/messages", body, length=50 * MB)
    assert status == 302 and headers[b"location"].startswith(b"/accounts/login/?next=/threads/")
    assert body.sent == 0


async def test_a_signed_in_upload_over_what_the_attachment_limits_allow_is_413_unread(thread, user):
    from asgiref.sync import sync_to_async

    _token, raw = await sync_to_async(api_token_issue)(user=user)
    body = Body(upload_cap_bytes() + 1)
    status, _headers, content = await _request(
        f"/api/threads/{thread.thread_id}/messages/upload",
        body,
        length=upload_cap_bytes() + 1,
        headers=[(b"authorization", f"Bearer {raw}".encode())],
    )
    assert status == 413 and json.loads(content)["code"] == "attachment_too_large"
    assert body.sent == 0


async def test_a_signed_in_upload_within_the_limits_is_read_and_served(thread, user):
    from asgiref.sync import sync_to_async

    _token, raw = await sync_to_async(api_token_issue)(user=user)
    payload = _multipart("hello", b"a small note\n")
    body = Body(len(payload), first=payload)
    status, _headers, content = await _request(
        f"/api/threads/{thread.thread_id}/messages/upload",
        body,
        length=len(payload),
        headers=[(b"authorization", f"Bearer {raw}".encode())],
    )
    assert status == 202, content
    assert body.sent == len(payload)

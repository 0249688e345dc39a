"""No 500 from any input: form data where JSON is expected, broken multipart bodies, an over-size file,
garbage figures in a fragment's query, NUL in a search, lone surrogates in a tool call or a message, and
junk WebSocket frames. Each is answered with a 4xx (JSON on the API) or handled, never a 500.

Run under ``DATABASE_URL=postgres://...`` too: PostgreSQL is the database that refuses NUL and
un-encodable text (the SQLite run checks the same answers).
"""

from __future__ import annotations

import json

import pytest
from channels.testing import WebsocketCommunicator
from django.core.files.uploadedfile import SimpleUploadedFile
from langchain_core.messages import AIMessage, ToolMessage

from config.api import api
from conversations.models import AgentRun, Message
from conversations.services import message_intake
from tests.compression._threads import repository_for

pytestmark = [pytest.mark.django_db, pytest.mark.services]

LONE = json.loads('"name-\\ud800.txt"')  # a lone surrogate, as a model or a JSON client escapes it


def _json_operations() -> list[tuple[str, str]]:
    """Every API operation that reads a JSON body, from the OpenAPI schema."""
    found = []
    for path, operations in api.get_openapi_schema()["paths"].items():
        for method, operation in operations.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            if "application/json" in content:
                found.append((method.upper(), path))
    return found


@pytest.mark.parametrize(("method", "path"), _json_operations(), ids=lambda v: v)
def test_form_data_sent_to_a_json_operation_is_a_400_json(owner_client, thread, method, path):
    message = Message.objects.create(
        conversation=thread, seq=1, role="user", content="hi", lc_message_id="m1"
    )
    url = path.format(thread_id=thread.thread_id, message_id=message.pk)
    owner_client.raise_request_exception = False
    response = owner_client.generic(
        method,
        url,
        data=b'--b\r\nContent-Disposition: form-data; name="content"\r\n\r\nhi\r\n--b--\r\n',
        content_type="multipart/form-data; boundary=b",
    )
    assert response.status_code == 400, response.content[:300]
    # POST: the form was parsed, so the operation finds no JSON; other methods: the body is not JSON.
    assert response.json()["code"] == ("json_expected" if method == "POST" else "bad_request")


def test_the_json_operations_were_found():
    assert ("POST", "/api/threads/{thread_id}/messages") in _json_operations()


BROKEN = {
    "no boundary": ("multipart/form-data", b"--x\r\n\r\n"),
    "a boundary that is not ASCII": ("multipart/form-data; boundary=\u00e9\u00e9", b"--x--"),
    "a part without headers' end": (
        "multipart/form-data; boundary=b",
        b"--b\r\nContent-Disposition: form-da",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_multipart_body_is_a_400_json_on_the_api(owner_client, thread, case):
    content_type, body = BROKEN[case]
    owner_client.raise_request_exception = False
    response = owner_client.generic(
        "POST", f"/api/threads/{thread.thread_id}/messages/upload", data=body, content_type=content_type
    )
    # Unreadable: 400; readable but without the required files: 422. JSON either way.
    expected = (422, "invalid_input") if case == "a part without headers' end" else (400, "invalid_multipart")
    assert (response.status_code, response.json()["code"]) == expected, response.content[:300]
    assert not thread.messages.exists()


def test_a_broken_multipart_body_is_a_400_text_for_the_pages_composer(owner_client, thread):
    owner_client.raise_request_exception = False
    response = owner_client.generic(
        "POST",
        f"/threads/{thread.thread_id}/messages",
        data=b"--x\r\n\r\n",
        content_type="multipart/form-data",
        headers={"X-Requested-With": "fetch"},
    )
    assert response.status_code == 400
    assert response.content.decode().startswith("The form data could not be read")


def test_a_file_over_the_limit_stops_the_parse_with_a_413_json(owner_client, thread, settings):
    settings.ATTACHMENT_MAX_FILE_BYTES = 1000
    response = owner_client.post(
        f"/api/threads/{thread.thread_id}/messages/upload",
        {"content": "hi", "files": SimpleUploadedFile("big.txt", b"x" * 200_000)},
    )
    assert response.status_code == 413
    assert response.json() == {
        "code": "attachment_too_large",
        "message": "big.txt is larger than 1000\xa0bytes.",
    }
    assert not thread.messages.exists()


@pytest.mark.parametrize(
    "query",
    [
        'status=failed&loss_report={"total":1e999}',
        'status=failed&loss_report={"in_summary":"' + "1" * 5000 + '"}',
        'status=failed&loss_report={"unreachable":"²"}',
        "status=failed&before_tokens=1e999&after_tokens=" + "9" * 5000,
    ],
    ids=["inf", "5000 digits", "superscript", "figures"],
)
def test_garbage_figures_in_the_compression_fragment_read_as_nothing(owner_client, thread, query):
    owner_client.raise_request_exception = False
    response = owner_client.get(f"/threads/{thread.thread_id}/fragments/compression?{query}")
    assert response.status_code == 200
    assert "identifiers" not in response.content.decode()  # no loss line from garbage


def test_a_nul_in_the_search_finds_nothing_instead_of_failing(owner_client, thread):
    owner_client.raise_request_exception = False
    assert owner_client.get("/?q=%00").status_code == 200
    assert owner_client.get("/?q=Test%00thread").status_code == 200
    assert "Test thread" in owner_client.get("/?q=Test").content.decode()


def test_a_lone_surrogate_in_an_api_message_is_a_422_json(owner_client, thread):
    body = json.dumps({"content": LONE})  # ensure_ascii: the surrogate travels as "\ud800"
    response = owner_client.post(
        f"/api/threads/{thread.thread_id}/messages", body, content_type="application/json"
    )
    assert response.status_code == 422 and response.json()["code"] == "invalid_input"
    assert not thread.messages.exists()


def test_a_lone_surrogate_reaching_the_transcript_is_stored_as_the_replacement_character(thread):
    from conversations.services.threads import NewMessage, message_append

    message = message_append(
        conversation=thread, message=NewMessage(role="tool", content=LONE, tool_name=LONE)
    )
    message.refresh_from_db()
    assert (message.content, message.tool_name) == ("name-\ufffd.txt", "name-\ufffd.txt")


def test_a_lone_surrogate_in_a_tool_calls_arguments_does_not_fail_the_run(
    thread, user, scripted_model, django_capture_on_commit_callbacks
):
    call = AIMessage(
        content="", tool_calls=[{"id": "c1", "name": "write_file", "args": {"path": LONE, "content": LONE}}]
    )
    scripted_model(call, "written")
    with django_capture_on_commit_callbacks(execute=True):
        run = message_intake(thread_id=thread.thread_id, user=user, content="save it").run
    run.refresh_from_db()

    assert run.status == AgentRun.Status.SUCCEEDED, run.error_detail
    stored = thread.messages.get(role="assistant", tool_calls__isnull=False, seq=2)
    assert stored.tool_calls[0]["args"] == {"path": "name-\ufffd.txt", "content": "name-\ufffd.txt"}
    values = repository_for(thread).get_values()["messages"]
    ai = next(m for m in values if isinstance(m, AIMessage) and m.tool_calls)
    assert ai.tool_calls[0]["args"]["path"] == "name-\ufffd.txt"  # the checkpoint holds encodable text
    assert any(isinstance(m, ToolMessage) and m.tool_call_id == "c1" for m in values)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "frame",
    [{"text_data": "not json"}, {"bytes_data": b"\x00\xff"}, {"text_data": "{"}],
    ids=["text", "binary", "half"],
)
async def test_a_junk_websocket_frame_closes_the_socket_with_4400_quietly(thread, user, frame, caplog):
    from channels.auth import AuthMiddlewareStack
    from channels.routing import URLRouter

    from conversations.routing import websocket_urlpatterns

    communicator = WebsocketCommunicator(
        AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), f"/ws/threads/{thread.thread_id}/"
    )
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_to(**frame)
    output = await communicator.receive_output(timeout=2)
    assert output == {"type": "websocket.close", "code": 4400}
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.mark.django_db(transaction=True)
async def test_a_json_frame_is_still_ignored(thread, user):
    from channels.auth import AuthMiddlewareStack
    from channels.routing import URLRouter

    from conversations.routing import websocket_urlpatterns

    communicator = WebsocketCommunicator(
        AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), f"/ws/threads/{thread.thread_id}/"
    )
    communicator.scope["user"] = user
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"hello": 1})
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()

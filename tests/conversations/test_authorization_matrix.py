"""The authorization matrix: every URL pattern of the project (and the thread socket) × anonymous,
owner, other user, staff without permissions, staff holding ``conversations.view_conversation``, staff
holding the agent permissions (the agent form's JSON views), superuser, a user the owner shared the thread
with ("shared") and a signed-in user who holds the thread's read-only link ("linkholder").

The routes are found by walking the URL resolver, so a new route without an entry here fails
``test_every_route_has_an_entry``. The admin site's own model pages are left to Django's model
permissions (the ones the platform adds are tested in tests/agent_platform, its actions in
tests/compression/test_authorization_matrix_admin_actions.py); /admin/pressure/ and /admin/usage/ are
ours and are in the matrix. Reads follow ``conversations.access`` (owner, a share, or the view permission);
writes (sharing included) are the owner's alone. The link opens its own page (``/s/<token>/``) and
nothing else: on the thread's routes a link holder is anyone else. Where a role may not see the thread, its response must not carry the thread's
text either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern, URLResolver, get_resolver

from agent_platform.workdir import workdir_for
from compression.models import CompressionJob
from conversations.models import Message, ThreadLink, ThreadShare
from conversations.routing import websocket_urlpatterns
from conversations.services import thread_create

ROLES = ("anonymous", "owner", "other", "staff", "viewer", "tuner", "superuser", "shared", "linkholder")
LINK_TOKEN = "matrix-link-token-3c9e"
MARK = "MARK-7f3a"  # in the thread's title, its message and its file
LOGIN = "login"  # a redirect to the login page
ADMIN_LOGIN = "admin-login"


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # {thread} is the thread's id, {reader} the shared user's, {token} the link's
    expect: dict[str, int | str]
    sees: frozenset[str] = frozenset()  # roles whose response carries the thread's text
    data: dict = field(default_factory=dict)
    json: bool = False
    upload: bool = False  # multipart, with a small text file in ``files``


def _roles(anonymous, owner, rest, **overrides) -> dict[str, int | str]:
    expect = {
        "anonymous": anonymous,
        "owner": owner,
        "other": rest,
        "staff": rest,
        "viewer": rest,
        "tuner": rest,
        "shared": rest,
        "linkholder": rest,
    }
    return {**expect, "superuser": rest, **overrides}


SEEING = frozenset({"owner", "viewer", "superuser", "shared"})
API_READ = _roles(401, 200, 404, viewer=200, superuser=200, shared=200)
PAGE_READ = _roles(LOGIN, 200, 404, viewer=200, superuser=200, shared=200)
EVERYONE = _roles(200, 200, 200)
AGENT_FORM = _roles(401, 403, 403, tuner=200, superuser=200)


def _api_write(owner: int) -> dict[str, int | str]:
    return _roles(401, owner, 404)


def _page_write() -> dict[str, int | str]:
    return _roles(LOGIN, 302, 404)


THREAD = "/threads/{thread}"
API_THREAD = "/api/threads/{thread}"

MATRIX: dict[str, Route] = {
    # --- API ---
    "api:api-root": Route("GET", "/api/", _roles(404, 404, 404)),
    "api:openapi-json": Route("GET", "/api/openapi.json", EVERYONE),
    "api:openapi-view": Route("GET", "/api/docs", EVERYONE),
    "api:me": Route("GET", "/api/me", _roles(401, 200, 200)),
    "api:agent_list": Route("GET", "/api/agents", _roles(401, 200, 200)),
    "api:thread_list": Route("GET", "/api/threads", _roles(401, 200, 200), frozenset({"owner"})),
    "api:thread_create": Route(
        "POST", "/api/threads", _roles(401, 201, 201), data={"agent": "test-agent"}, json=True
    ),
    "api:thread_get": Route("GET", API_THREAD, API_READ, SEEING),
    "api:thread_update": Route("PATCH", API_THREAD, _api_write(200), data={"title": "renamed"}, json=True),
    "api:thread_delete": Route("DELETE", API_THREAD, _api_write(204)),
    # Stop: nothing runs (409 for the owner); an unknown run of the thread is 404 like a foreign one.
    "api:run_cancel_current": Route("POST", f"{API_THREAD}/runs/current/cancel", _api_write(409)),
    "api:run_cancel": Route("POST", f"{API_THREAD}/runs/999999/cancel", _api_write(404)),
    "api:message_list": Route("GET", f"{API_THREAD}/messages", API_READ, SEEING),
    "api:message_create": Route(
        "POST", f"{API_THREAD}/messages", _api_write(202), data={"content": "hi"}, json=True
    ),
    "api:message_create_with_files": Route(
        "POST", f"{API_THREAD}/messages/upload", _api_write(202), data={"content": "hi"}, upload=True
    ),
    "api:thread_resume": Route(
        "POST", f"{API_THREAD}/resume", _api_write(409), data={"answer": "yes"}, json=True
    ),
    "api:thread_state": Route("GET", f"{API_THREAD}/state", API_READ),
    # Exports: reading the thread is enough (search and "shared with me": test_authorization_matrix_lists).
    "api:thread-export-markdown": Route("GET", f"{API_THREAD}/export.md", API_READ, SEEING),
    "api:thread-export-json": Route("GET", f"{API_THREAD}/export.json", API_READ, SEEING),
    # Compressing is a job: 202 with it (the owner's alone); its reads follow the thread's read rule.
    "api:thread_compress": Route("POST", f"{API_THREAD}/compress", _api_write(202)),
    "api:thread_compress_job": Route("GET", f"{API_THREAD}/compress/jobs/{{job}}", API_READ),
    # Stopping the fixture's job (cancelled already) again is harmless for the owner.
    "api:thread_compress_job_cancel": Route(
        "POST", f"{API_THREAD}/compress/jobs/{{job}}/cancel", _api_write(200)
    ),
    "api:thread_compress_undo": Route("POST", f"{API_THREAD}/compress/undo", _api_write(409)),
    # The preview writes nothing but belongs to compressing, which is the owner's alone.
    "api:thread_compress_preview": Route("POST", f"{API_THREAD}/compress/preview", _api_write(200)),
    "api:message_pin": Route("POST", f"{API_THREAD}/messages/{{message}}/pin", _api_write(200)),
    "api:message_unpin": Route("DELETE", f"{API_THREAD}/messages/{{message}}/pin", _api_write(200)),
    # Edit and regenerate are the owner's (the fixture's message opened no run: 422 for them);
    # the versions of a message follow the thread's read rule.
    "api:message_edit_send": Route(
        "POST", f"{API_THREAD}/messages/{{message}}/edit", _api_write(422), data={"content": "x"}, json=True
    ),
    "api:thread_regenerate": Route(
        "POST", f"{API_THREAD}/regenerate", _api_write(422), data={"request_id": "r-1"}, json=True
    ),
    # Retry is the owner's; the fixture's thread has no failed or stopped turn: 422 for them.
    "api:thread_retry": Route(
        "POST", f"{API_THREAD}/retry", _api_write(422), data={"request_id": "r-2"}, json=True
    ),
    # Sharing through the API: the owner's alone, its listing included (it names the readers).
    "api:thread_shares_get": Route("GET", f"{API_THREAD}/shares", _api_write(200)),
    "api:thread_share_add": Route(
        "POST", f"{API_THREAD}/shares", _api_write(201), data={"username": "staff"}, json=True
    ),
    "api:thread_share_remove": Route("DELETE", f"{API_THREAD}/shares/{{reader}}", _api_write(204)),
    "api:thread_link_create": Route("POST", f"{API_THREAD}/link", _api_write(201)),
    "api:thread_link_revoke": Route("DELETE", f"{API_THREAD}/link", _api_write(204)),
    # Switching the thread's agent is the owner's (to its own agent: 200, nothing changes).
    "api:thread_agent_switch_set": Route(
        "POST", f"{API_THREAD}/agent", _api_write(200), data={"agent": "test-agent"}, json=True
    ),
    "api:message_versions_get": Route("GET", f"{API_THREAD}/messages/{{message}}/versions", API_READ),
    # Branches: a version's whole branch follows the read rule; continuing one is the owner's (the
    # fixture's message is on the current branch: 200, nothing changes); forking into a thread of
    # one's own is for whoever may read the thread (the fixture's message never reached a checkpoint:
    # 422 `branch_not_restorable` past the access check; test_branches forks as a share reader).
    "api:message_branch_get": Route("GET", f"{API_THREAD}/messages/{{message}}/branch", API_READ, SEEING),
    "api:message_branch_continue": Route(
        "POST",
        f"{API_THREAD}/messages/{{message}}/continue",
        _api_write(200),
        data={"request_id": "c-1"},
        json=True,
    ),
    "api:message_branch_fork": Route(
        "POST",
        f"{API_THREAD}/messages/{{message}}/fork",
        _roles(401, 422, 404, viewer=422, superuser=422, shared=422),
        data={"request_id": "f-1"},
        json=True,
    ),
    # Usage: everyone signed in gets their own figures (none of them carries a thread's text).
    "api:usage": Route("GET", "/api/usage", _roles(401, 200, 200)),
    "api/<path:rest>": Route("GET", "/api/no-such-thing", _roles(404, 404, 404)),
    # --- accounts and language ---
    "login": Route("GET", "/accounts/login/", EVERYONE),
    "logout": Route("POST", "/accounts/logout/", _roles(302, 302, 302)),
    "set_language": Route("POST", "/i18n/setlang/", _roles(302, 302, 302), data={"language": "en"}),
    # --- pages, fragments, files ---
    "conversations:thread-list": Route("GET", "/", _roles(LOGIN, 200, 200), frozenset({"owner"})),
    "conversations:thread-new": Route(
        "POST", "/threads/new", _roles(LOGIN, 302, 302), data={"agent": "test-agent"}
    ),
    "conversations:thread-detail": Route("GET", f"{THREAD}/", PAGE_READ, SEEING),
    "conversations:thread-delete": Route("POST", f"{THREAD}/delete", _page_write()),
    "conversations:thread-branch": Route("GET", f"{THREAD}/branches/{{message}}/", PAGE_READ, SEEING),
    "conversations:branch-continue": Route("POST", f"{THREAD}/branches/{{message}}/continue", _page_write()),
    "conversations:branch-fork": Route(
        "POST",
        f"{THREAD}/branches/{{message}}/fork",
        _roles(LOGIN, 302, 404, viewer=302, superuser=302, shared=302),
    ),
    "conversations:thread-rename": Route(
        "POST", f"{THREAD}/rename", _page_write(), data={"title": "renamed"}
    ),
    # The sidebar's marks are writes (the owner's); the bin lists only the caller's own deleted threads,
    # and a restore finds a thread only in its owner's bin (the fixture's is not deleted: 404 for all).
    "conversations:thread-pin": Route("POST", f"{THREAD}/pin", _page_write(), data={"pinned": "1"}),
    "conversations:thread-archive": Route("POST", f"{THREAD}/archive", _page_write(), data={"archived": "0"}),
    # Sharing is the owner's: add a user (the staff user here), remove one, make and revoke the link.
    # The link's page is open to whoever holds the link, signed in or not, and shows the transcript.
    "conversations:thread-share-add": Route(
        "POST", f"{THREAD}/shares", _page_write(), data={"username": "staff"}
    ),
    "conversations:thread-share-remove": Route("POST", f"{THREAD}/shares/{{reader}}/remove", _page_write()),
    "conversations:thread-link-create": Route("POST", f"{THREAD}/link", _page_write()),
    "conversations:thread-link-revoke": Route("POST", f"{THREAD}/link/revoke", _page_write()),
    "conversations:thread-link-read": Route("GET", "/s/{token}/", EVERYONE, frozenset(ROLES)),
    "conversations:thread-bin": Route("GET", "/bin/", _roles(LOGIN, 200, 200)),
    "conversations:thread-restore": Route("POST", "/bin/{thread}/restore", _roles(LOGIN, 404, 404)),
    "conversations:run-cancel-current": Route("POST", f"{THREAD}/runs/current/cancel", _page_write()),
    "conversations:run-cancel": Route("POST", f"{THREAD}/runs/999999/cancel", _roles(LOGIN, 404, 404)),
    "conversations:turn-retry": Route("POST", f"{THREAD}/retry", _page_write()),
    "conversations:agent-switch": Route(
        "POST", f"{THREAD}/agent", _page_write(), data={"agent": "test-agent"}
    ),
    # The composer's check of picked files: the owner's, as sending is (nothing is written).
    "conversations:attachments-check": Route(
        "POST", f"{THREAD}/attachments/check", _roles(LOGIN, 200, 404), upload=True
    ),
    "conversations:message-send": Route("POST", f"{THREAD}/messages", _page_write(), data={"content": "hi"}),
    "conversations:question-answer": Route("POST", f"{THREAD}/answer", _page_write(), data={"answer": "yes"}),
    "conversations:fragment-messages": Route("GET", f"{THREAD}/fragments/messages", PAGE_READ, SEEING),
    "conversations:fragment-state": Route("GET", f"{THREAD}/fragments/state", PAGE_READ),
    "conversations:fragment-stream": Route("GET", f"{THREAD}/fragments/stream", PAGE_READ),
    "compression:fragment-compression": Route(
        "GET", f"{THREAD}/fragments/compression?status=completed", PAGE_READ
    ),
    "conversations:workdir-file": Route("GET", f"{THREAD}/files/notes/mark.md", PAGE_READ, SEEING),
    "compression:fragment-compress-preview": Route(
        "GET", f"{THREAD}/fragments/compress-preview", _roles(LOGIN, 200, 404)
    ),
    "favicon.ico": Route("GET", "/favicon.ico", _roles(301, 301, 301)),
    # --- operations: liveness and readiness are public (they show no data); metrics are off until a
    # token or an address list is configured (tests/test_ops.py covers them configured) ---
    "healthz": Route("GET", "/healthz", EVERYONE),
    "readyz": Route("GET", "/readyz", EVERYONE),
    "metrics": Route("GET", "/metrics", _roles(404, 404, 404)),
    # --- the admin page the platform adds ---
    "admin-pressure": Route(
        "GET",
        "/admin/pressure/",
        _roles(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, staff=200, viewer=200, tuner=200, superuser=200),
        frozenset({"viewer", "superuser"}),
    ),
    # Every user's spending: only with conversations.view_usagerecord (superusers hold it).
    "admin-usage": Route(
        "GET",
        "/admin/usage/",
        _roles(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, staff=403, viewer=403, tuner=403, superuser=200),
    ),
    # --- the agent form's JSON views: staff who may open an agent form (a missing endpoint: 404) ---
    "agent-figures": Route("GET", "/admin/agents/figures?agent={agent}&summary_threshold=50", AGENT_FORM),
    "agent-retune": Route("GET", "/admin/agents/{agent}/retune?summary_threshold=50", AGENT_FORM),
    "agent-endpoint-models": Route(
        "GET",
        "/admin/agents/endpoint-models?endpoint=999999",
        _roles(401, 403, 403, tuner=404, superuser=404),
    ),
}


def _walk(patterns, prefix: str = "", namespace: str | None = None):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _walk(
                pattern.url_patterns, prefix + str(pattern.pattern), pattern.namespace or namespace
            )
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), namespace, pattern.name


def _route_keys() -> set[str]:
    keys = set()
    for route, namespace, name in _walk(get_resolver().url_patterns):
        if namespace == "admin":
            continue
        keys.add(f"{namespace}:{name}" if namespace and name else name or route)
    return keys


def test_every_route_has_an_entry():
    walked = _route_keys()
    assert walked - MATRIX.keys() == set(), "routes without an authorization entry"
    assert MATRIX.keys() - walked == set(), "entries for routes that no longer exist"


def test_every_socket_route_has_an_entry():
    assert [str(p.pattern) for p in websocket_urlpatterns] == list(SOCKET_ROUTES)


# --- the HTTP matrix -------------------------------------------------------------------------------


@pytest.fixture
def people(django_user_model, user, other_user):
    staff = django_user_model.objects.create_user("staff", password="pw-staff-123", is_staff=True)
    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-123", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    superuser = django_user_model.objects.create_superuser("root", password="pw-root-123")
    tuner = django_user_model.objects.create_user("tuner", password="pw-tuner-123", is_staff=True)
    tuner.user_permissions.set(
        Permission.objects.filter(
            codename__in=["view_agent", "add_agent", "change_agent", "tune_compression"]
        )
    )
    shared = django_user_model.objects.create_user("shared", password="pw-shared-123")
    linkholder = django_user_model.objects.create_user("linkholder", password="pw-linkholder-123")
    return {
        "anonymous": None,
        "owner": user,
        "shared": shared,
        "linkholder": linkholder,
        "other": other_user,
        "staff": staff,
        "viewer": viewer,
        "tuner": tuner,
        "superuser": superuser,
    }


@pytest.fixture
def marked_thread(user, agent, people):
    thread = thread_create(user=user, agent_slug=agent.slug, title=f"Plan {MARK}")
    Message.objects.create(
        conversation=thread, seq=1, role="user", content=f"secret {MARK}", lc_message_id="mark-1"
    )
    workdir_for(thread).write_text("notes/mark.md", f"file {MARK}")
    CompressionJob.objects.create(
        conversation=thread, requested_by=user, trigger="manual", status="cancelled"
    )
    thread.pressure_ratio, thread.context_tokens, thread.trigger_tokens = 0.5, 500, 1000
    thread.save()
    ThreadShare.objects.create(conversation=thread, user=people["shared"])
    ThreadLink.objects.create(conversation=thread, token=LINK_TOKEN)
    return thread


def _request(client, route: Route, thread):
    path = route.path.format(
        thread=thread.thread_id,
        message=thread.messages.values_list("pk", flat=True).first(),
        job=CompressionJob.objects.filter(conversation=thread).values_list("pk", flat=True).first(),
        agent=thread.agent_id,
        reader=ThreadShare.objects.filter(conversation=thread).values_list("user_id", flat=True).first(),
        token=LINK_TOKEN,
    )
    if route.json:
        return client.generic(
            route.method, path, data=json.dumps(route.data), content_type="application/json"
        )
    if route.upload:
        return client.post(path, {**route.data, "files": SimpleUploadedFile("note.txt", b"hello\n")})
    if route.method == "GET":
        return client.get(path)
    if route.method == "POST":
        return client.post(path, route.data)
    return client.generic(route.method, path)


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("key", sorted(MATRIX))
def test_authorization_matrix(client, people, marked_thread, key, role):
    route = MATRIX[key]
    if people[role] is not None:
        client.force_login(people[role])
    client.raise_request_exception = False
    response = _request(client, route, marked_thread)

    expected = route.expect[role]
    if expected in (LOGIN, ADMIN_LOGIN):
        assert response.status_code == 302, response.content[:300]
        prefix = "/accounts/login/" if expected == LOGIN else "/admin/login/"
        assert response["Location"].startswith(prefix)
    else:
        assert response.status_code == expected, response.content[:300]
        if route.path.startswith(("/api/", "/admin/agents/")) and response.status_code >= 400:
            assert {"code", "message"} <= response.json().keys()
    body = b"".join(response) if response.streaming else response.content
    assert (MARK.encode() in body) == (role in route.sees), "the thread's text was shown or hidden wrongly"


# --- the socket ------------------------------------------------------------------------------------

SOCKET_ROUTES = {
    "ws/threads/<str:thread_id>/": _roles(4403, "open", 4403, viewer="open", superuser="open", shared="open"),
    "": _roles(4404, 4404, 4404),
}


async def _socket(path: str, user):
    from django.contrib.auth.models import AnonymousUser

    communicator = WebsocketCommunicator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), path)
    communicator.scope["user"] = user or AnonymousUser()
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def _closed_with(communicator) -> int | None:
    """The close code, or None when the socket stayed open (and it is closed by the test)."""
    if await communicator.receive_nothing(timeout=0.5):
        await communicator.disconnect()
        return None
    output = await communicator.receive_output(timeout=1)
    assert output["type"] == "websocket.close"
    return output["code"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
async def test_socket_matrix(people, marked_thread, role):
    expected = SOCKET_ROUTES["ws/threads/<str:thread_id>/"][role]
    communicator = await _socket(f"/ws/threads/{marked_thread.thread_id}/", people[role])
    code = await _closed_with(communicator)
    assert code == (None if expected == "open" else expected)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "path", ["/ws/threads/not-a-uuid/", "/ws/threads/1/", "/ws/nothing/", "/ws/threads/"]
)
async def test_a_socket_path_that_names_no_thread_is_closed_cleanly(people, path, caplog):
    communicator = await _socket(path, people["superuser"])
    assert await _closed_with(communicator) == 4404
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.mark.django_db(transaction=True)
async def test_staff_without_the_view_permission_gets_no_events(people, marked_thread):
    from conversations.events import broadcast

    communicator = await _socket(f"/ws/threads/{marked_thread.thread_id}/", people["staff"])
    await sync_to_async(broadcast)(marked_thread.thread_id, "state", token_usage={"x": MARK})
    output = await communicator.receive_output(timeout=1)
    assert output == {"type": "websocket.close", "code": 4403}
    assert await communicator.receive_nothing(timeout=0.3)

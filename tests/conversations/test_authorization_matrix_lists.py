"""The thread list's search and "Shared with me" in the authorization matrix: the same routes as
``test_authorization_matrix`` (which holds one row per route) with the query strings that change what
they return. A role finds a thread's text only where it may read the thread: searching finds the
caller's own threads, ``scope=shared`` others' threads for holders of ``conversations.view_conversation``
(superusers hold it), and nothing for anyone else."""

from __future__ import annotations

import pytest

from tests.conversations import test_authorization_matrix as matrix
from tests.conversations.test_authorization_matrix import LOGIN, MARK, ROLES, Route, _request, _roles

# The main matrix's fixtures: its people and its marked thread.
people, marked_thread = matrix.people, matrix.marked_thread

SHARED_READERS = frozenset({"viewer", "superuser"})
VARIANTS: dict[str, Route] = {
    # The owner's own thread, found by a word of its message (not of its title).
    "api search": Route("GET", "/api/threads?q=secret", _roles(401, 200, 200), frozenset({"owner"})),
    "page search": Route("GET", "/?q=secret", _roles(LOGIN, 200, 200), frozenset({"owner"})),
    # Others' threads: the viewer and the superuser; the owner's own thread is not "shared with" them.
    "api shared": Route("GET", "/api/threads?scope=shared", _roles(401, 200, 200), SHARED_READERS),
    # The page offers the filter to holders only; anyone else typing it gets their own list.
    "page shared": Route("GET", "/?scope=shared", _roles(LOGIN, 200, 200), SHARED_READERS | {"owner"}),
    "api shared search": Route(
        "GET", "/api/threads?scope=shared&q=secret", _roles(401, 200, 200), SHARED_READERS
    ),
    "page shared search": Route(
        "GET", "/?scope=shared&q=secret", _roles(LOGIN, 200, 200), SHARED_READERS | {"owner"}
    ),
    "api bad scope": Route("GET", "/api/threads?scope=everyone", _roles(401, 422, 422)),
}


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("key", sorted(VARIANTS))
def test_list_variants_matrix(client, people, marked_thread, key, role):
    route = VARIANTS[key]
    if people[role] is not None:
        client.force_login(people[role])
    client.raise_request_exception = False
    response = _request(client, route, marked_thread)
    expected = route.expect[role]
    if expected == LOGIN:
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    else:
        assert response.status_code == expected, response.content[:300]
        if route.path.startswith("/api/") and response.status_code >= 400:
            assert {"code", "message"} <= response.json().keys()
    assert (MARK.encode() in response.content) == (role in route.sees), "a thread was found by the wrong role"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_only_holders_of_the_view_permission_see_the_shared_filter(client, people, marked_thread, role):
    if people[role] is None:
        return
    client.force_login(people[role])
    page = client.get("/").content.decode()
    assert ('id="scope-shared"' in page) == (role in SHARED_READERS)

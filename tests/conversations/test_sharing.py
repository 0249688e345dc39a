"""Sharing one thread read-only (``services.sharing``): named users read it through the one access rule
(``conversations.access``) and a revocable link opens its transcript alone."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conversations import selectors
from conversations.access import can_act, thread_by_link, thread_visible, thread_visible_now
from conversations.errors import InvalidInput, ThreadNotFound
from conversations.models import Message, ThreadLink, ThreadShare
from conversations.services import sharing, thread_create, thread_soft_delete

pytestmark = pytest.mark.django_db


@pytest.fixture
def thread(user, agent):
    thread = thread_create(user=user, agent_slug=agent.slug, title="Trip plan")
    Message.objects.create(
        conversation=thread, seq=1, role="user", content="secret itinerary", lc_message_id="m1"
    )
    return thread


def test_a_named_user_reads_the_shared_thread_but_may_not_write(thread, user, other_user):
    assert not thread_visible(thread_id=thread.thread_id, user=other_user)
    sharing.thread_share_add(thread_id=thread.thread_id, user=user, username=" bob ")
    assert selectors.thread_get(thread_id=thread.thread_id, user=other_user) == thread
    assert not can_act(thread, other_user)
    with pytest.raises(ThreadNotFound):  # writes find only the owner's own threads
        sharing.thread_link_create(thread_id=thread.thread_id, user=other_user)


def test_sharing_twice_keeps_one_share_and_removing_ends_the_access(thread, user, other_user):
    sharing.thread_share_add(thread_id=thread.thread_id, user=user, username="bob")
    sharing.thread_share_add(thread_id=thread.thread_id, user=user, username="bob")
    assert ThreadShare.objects.filter(conversation=thread).count() == 1
    assert sharing.thread_share_remove(thread_id=thread.thread_id, user=user, reader_id=other_user.pk)
    assert not sharing.thread_share_remove(thread_id=thread.thread_id, user=user, reader_id=other_user.pk)
    assert not thread_visible(thread_id=thread.thread_id, user=other_user)


@pytest.mark.parametrize("name", ["", "nobody", "alice"])
def test_an_unknown_empty_or_own_name_is_refused_and_nothing_is_shared(thread, user, name):
    with pytest.raises(InvalidInput):
        sharing.thread_share_add(thread_id=thread.thread_id, user=user, username=name)
    assert not ThreadShare.objects.exists()


def test_an_inactive_user_cannot_be_shared_with(thread, user, other_user):
    other_user.is_active = False
    other_user.save()
    with pytest.raises(InvalidInput):
        sharing.thread_share_add(thread_id=thread.thread_id, user=user, username="bob")


def test_someone_else_cannot_share_the_thread_nor_learn_which_names_exist(thread, other_user):
    for name in ("alice", "nobody"):  # the same answer whether the name exists or not
        with pytest.raises(ThreadNotFound):
            sharing.thread_share_add(thread_id=thread.thread_id, user=other_user, username=name)


def test_a_share_is_beside_the_view_permission_not_instead_of_it(thread, django_user_model):
    viewer = django_user_model.objects.create_user("carol", password="pw-carol-123")
    viewer.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    assert thread_visible(thread_id=thread.thread_id, user=viewer)  # no share needed
    assert not can_act(thread, viewer)


def test_the_link_is_unguessable_stable_and_dead_once_revoked(thread, user):
    link = sharing.thread_link_create(thread_id=thread.thread_id, user=user)
    assert len(link.token) >= 43  # 32 random bytes, URL-safe
    assert sharing.thread_link_create(thread_id=thread.thread_id, user=user).token == link.token
    assert thread_by_link(token=link.token) == thread
    assert sharing.thread_link_revoke(thread_id=thread.thread_id, user=user)
    assert thread_by_link(token=link.token) is None
    again = sharing.thread_link_create(thread_id=thread.thread_id, user=user)
    assert again.token != link.token and thread_by_link(token=link.token) is None


def test_a_link_grants_no_thread_route_and_dies_with_the_thread(thread, user, other_user):
    link = sharing.thread_link_create(thread_id=thread.thread_id, user=user)
    assert not thread_visible(thread_id=thread.thread_id, user=other_user)
    thread_soft_delete(thread_id=thread.thread_id, user=user)
    assert thread_by_link(token=link.token) is None
    assert ThreadLink.objects.filter(token=link.token).exists()  # restored from the bin, it works again


def test_a_deleted_thread_is_not_readable_by_those_it_was_shared_with(thread, user, other_user):
    sharing.thread_share_add(thread_id=thread.thread_id, user=user, username="bob")
    thread_soft_delete(thread_id=thread.thread_id, user=user)
    assert not thread_visible(thread_id=thread.thread_id, user=other_user)


# --- the pages -------------------------------------------------------------------------------------


def test_the_link_page_shows_the_transcript_alone_to_anyone(client, thread, user):
    link = sharing.thread_link_create(thread_id=thread.thread_id, user=user)
    response = client.get(f"/s/{link.token}/")
    page = response.content.decode()
    assert response.status_code == 200 and "secret itinerary" in page and "Trip plan" in page
    assert response["Referrer-Policy"] == "same-origin" and "noindex" in response["X-Robots-Tag"]
    # Nothing of the thread beyond its messages: no socket, fragment, composer, panel or export.
    for absent in ("/ws/threads/", "/fragments/", 'id="composer"', "share-panel", "export", "context-drawer"):
        assert absent not in page, absent


def test_a_revoked_or_made_up_link_is_a_friendly_404(client, thread, user):
    link = sharing.thread_link_create(thread_id=thread.thread_id, user=user)
    client.force_login(user)
    assert client.post(f"/threads/{thread.thread_id}/link/revoke").status_code == 302
    client.logout()
    for token in (link.token, "made-up"):
        response = client.get(f"/s/{token}/")
        assert response.status_code == 404
        assert "This link opens nothing" in response.content.decode()
        assert "secret itinerary" not in response.content.decode()


def test_the_owner_shares_from_the_panel_and_the_reader_gets_the_read_only_page(
    client, thread, user, other_user
):
    client.force_login(user)
    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert 'id="share-panel"' in page and "Not shared with anyone yet." in page
    response = client.post(f"/threads/{thread.thread_id}/shares", {"username": "bob"}, follow=True)
    assert "Shared with bob (read-only)." in response.content.decode()
    assert '<span class="share-name">bob</span>' in response.content.decode()
    client.force_login(other_user)
    page = client.get(f"/threads/{thread.thread_id}/").content.decode()
    assert "secret itinerary" in page and 'id="read-only"' in page
    assert 'id="composer"' not in page and 'id="share-panel"' not in page
    assert "No threads yet." not in page  # the sidebar lists the thread being read


def test_an_unknown_name_in_the_panel_is_said_in_words(client, thread, user):
    client.force_login(user)
    response = client.post(f"/threads/{thread.thread_id}/shares", {"username": "nobody"}, follow=True)
    assert response.status_code == 200
    assert "There is no user named “nobody”." in response.content.decode()


# --- the API ---------------------------------------------------------------------------------------


def test_the_owner_shares_and_revokes_through_the_api(client, thread, user, other_user):
    client.force_login(user)
    url = f"/api/threads/{thread.thread_id}"
    added = client.post(f"{url}/shares", {"username": "bob"}, content_type="application/json")
    assert added.status_code == 201 and added.json() == {"id": other_user.pk, "username": "bob"}
    made = client.post(f"{url}/link")
    assert made.status_code == 201 and "/s/" in made.json()["url"]
    assert client.get(f"{url}/shares").json() == {
        "users": [{"id": other_user.pk, "username": "bob"}],
        "link": made.json(),
    }
    assert client.delete(f"{url}/link").status_code == 204
    assert client.get(made.json()["url"]).status_code == 404
    assert client.delete(f"{url}/shares/{other_user.pk}").status_code == 204
    assert client.get(f"{url}/shares").json() == {"users": [], "link": None}


def test_an_unknown_name_through_the_api_is_a_422_body(client, thread, user):
    client.force_login(user)
    response = client.post(
        f"/api/threads/{thread.thread_id}/shares", {"username": "nobody"}, content_type="application/json"
    )
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input" and "nobody" in response.json()["message"]


def test_an_open_socket_of_a_removed_reader_loses_the_thread_at_its_next_check(thread, user, other_user):
    """The socket's re-check reads the rule afresh (``thread_visible_now``): a removed share counts."""
    sharing.thread_share_add(thread_id=thread.thread_id, user=user, username="bob")
    assert thread_visible_now(thread_id=thread.thread_id, user_id=other_user.pk, session_key=None)
    sharing.thread_share_remove(thread_id=thread.thread_id, user=user, reader_id=other_user.pk)
    assert not thread_visible_now(thread_id=thread.thread_id, user_id=other_user.pk, session_key=None)


@hypothesis_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "link", "revoke"]), st.sampled_from(["bob", "carol", "dave"])
        ),
        max_size=12,
    )
)
def test_who_may_read_is_the_owner_the_current_shares_and_the_permission(
    thread, user, django_user_model, steps
):
    """Property: after any sequence of shares, removals, links and revocations (through the services),
    exactly the owner, the users currently shared with and the permission's holders may read the
    thread; only the owner may write; the link opens it only while it lives."""
    readers = {
        name: django_user_model.objects.get_or_create(username=name)[0] for name in ("bob", "carol", "dave")
    }
    ThreadShare.objects.filter(conversation=thread).delete()
    ThreadLink.objects.filter(conversation=thread).delete()
    shared: set[str] = set()
    token = None
    for action, name in steps:
        if action == "add":
            sharing.thread_share_add(thread_id=thread.thread_id, user=user, username=name)
            shared.add(name)
        elif action == "remove":
            sharing.thread_share_remove(thread_id=thread.thread_id, user=user, reader_id=readers[name].pk)
            shared.discard(name)
        elif action == "link":
            token = sharing.thread_link_create(thread_id=thread.thread_id, user=user).token
        elif token is not None:
            sharing.thread_link_revoke(thread_id=thread.thread_id, user=user)
            assert thread_by_link(token=token) is None
            token = None
    for name, reader in readers.items():
        assert thread_visible(thread_id=thread.thread_id, user=reader) == (name in shared)
        assert not can_act(thread, reader)
    assert thread_visible(thread_id=thread.thread_id, user=user) and can_act(thread, user)
    assert (token is not None) == ThreadLink.objects.filter(conversation=thread).exists()
    if token is not None:
        assert thread_by_link(token=token) == thread

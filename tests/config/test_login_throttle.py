"""Login attempts are limited per account-and-address pair, and per address with a higher bound
(django-axes; issue 38: a lockout never blocks the account's other addresses). Past a limit a login
answers 429 with ``Retry-After`` and says so in words, until the cool-off has passed (time-machine
moves the clock). The other ways in keep working: the login page and the admin login for everyone
else, the test client's ``force_login``, sessions already open and API tokens."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.urls import reverse

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
START = dt.datetime(2026, 3, 2, 9, 0, 0, tzinfo=dt.UTC)
ADDRESS_LIMIT = 6


@pytest.fixture(autouse=True)
def axes_on(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = ADDRESS_LIMIT
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=15)


@pytest.fixture
def clock():
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


def _login(client, username: str, password: str, address: str = "10.0.0.1", **extra):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address, **extra)


def test_an_account_is_locked_from_one_address_after_the_limit_until_the_cool_off(client, user, clock):
    assert [_login(client, "alice", "wrong", address="10.0.0.1").status_code for n in range(3)] == [
        200,
        200,
        429,  # the failure that reaches the limit is answered as a lockout already
    ]

    locked = _login(client, "alice", "pw-alice-123", address="10.0.0.1")  # right password, same address
    assert locked.status_code == 429
    assert locked["Retry-After"] == "900"
    assert "Too many failed logins for this account or from this address. Try again in 15 minutes." in (
        locked.content.decode()
    )
    assert "_auth_user_id" not in client.session

    clock.shift(dt.timedelta(minutes=15, seconds=1))
    assert _login(client, "alice", "pw-alice-123", address="10.0.0.1").status_code == 302


def test_a_lockout_never_blocks_the_accounts_other_addresses(client, admin_user, clock):
    """Anyone could lock any account, admin included, out with 5 wrong passwords; now only from their
    own address, and the owner signs in from theirs."""
    for attacker in ("203.0.113.1", "203.0.113.2"):
        for _n in range(3):
            _login(client, "admin", "wrong", address=attacker)
        assert _login(client, "admin", "password", address=attacker).status_code == 429
    assert _login(client, "admin", "password", address="10.0.0.1").status_code == 302


def test_an_address_is_locked_for_every_account_at_its_higher_bound(client, user, other_user, clock):
    names = [f"guess{n}" for n in range(ADDRESS_LIMIT)]
    answers = [_login(client, name, "guess", address="10.0.0.7").status_code for name in names]
    assert answers == [200] * (ADDRESS_LIMIT - 1) + [429]  # each pair far below its own limit
    assert _login(client, "bob", "pw-bob-123", address="10.0.0.7").status_code == 429
    assert _login(client, "bob", "pw-bob-123", address="10.0.0.8").status_code == 302
    clock.shift(dt.timedelta(minutes=15, seconds=1))
    client.logout()
    assert _login(client, "bob", "pw-bob-123", address="10.0.0.7").status_code == 302


def test_a_spoofed_forwarded_for_does_not_escape_the_address_lock(client, user, settings, clock):
    for n in range(ADDRESS_LIMIT):
        _login(client, f"guess{n}", "guess", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    assert _login(client, "alice", "pw-alice-123", HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429


def test_behind_a_declared_proxy_the_address_is_the_one_the_proxy_saw(
    client, user, other_user, settings, clock
):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.1.1.1"
    for n in range(ADDRESS_LIMIT):
        _login(client, f"guess{n}", "guess", address=proxy, HTTP_X_FORWARDED_FOR="forged, 203.0.113.5")
    behind_the_proxy = {"address": proxy, "HTTP_X_FORWARDED_FOR": "203.0.113.5"}
    assert _login(client, "alice", "pw-alice-123", **behind_the_proxy).status_code == 429
    another_client = {"address": proxy, "HTTP_X_FORWARDED_FOR": "203.0.113.6"}
    assert _login(client, "bob", "pw-bob-123", **another_client).status_code == 302


def test_the_lockout_is_in_the_users_language(client, user, clock):
    client.cookies["django_language"] = "zh-hans"
    for _n in range(3):
        _login(client, "alice", "wrong")
    text = _login(client, "alice", "wrong").content.decode()
    assert "15 分钟" in text and "Too many failed logins" not in text


def test_the_other_ways_in_still_work_while_an_account_is_locked(client, user, bearer, clock):
    from django.test import Client

    open_session = Client()
    open_session.force_login(user)  # signed in before the attack
    for _n in range(3):
        _login(client, "alice", "wrong")
    assert _login(client, "alice", "pw-alice-123").status_code == 429

    assert open_session.get(reverse("conversations:thread-list")).status_code == 200
    assert client.get("/api/threads", headers=bearer).status_code == 200
    fresh = Client()
    fresh.force_login(user)
    assert fresh.get(reverse("conversations:thread-list")).status_code == 200


def test_the_admin_login_is_throttled_and_works_for_others(client, admin_user, user, clock):
    url = "/admin/login/?next=/admin/"
    for _n in range(3):
        client.post(url, {"username": "admin", "password": "wrong"}, REMOTE_ADDR="10.0.0.3")
    assert (
        client.post(url, {"username": "admin", "password": "password"}, REMOTE_ADDR="10.0.0.3").status_code
        == 429
    )
    other = client.post(url, {"username": "alice", "password": "pw-alice-123"}, REMOTE_ADDR="10.0.0.3")
    assert other.status_code == 200  # alice is no staff: the admin's form refuses her, not the throttle
    staff = client.post(url, {"username": "admin", "password": "password"}, REMOTE_ADDR="10.0.0.4")
    assert staff.status_code == 302  # the admin's own address was never locked


def test_a_success_resets_the_failures(client, user, clock):
    _login(client, "alice", "wrong")
    _login(client, "alice", "wrong")
    assert _login(client, "alice", "pw-alice-123").status_code == 302
    client.logout()
    _login(client, "alice", "wrong")
    _login(client, "alice", "wrong")
    assert _login(client, "alice", "pw-alice-123").status_code == 302


def test_the_admin_lists_the_attempts(client, admin_user, user, clock):
    _login(client, "alice", "wrong")
    client.force_login(admin_user)
    page = client.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and "alice" in page.content.decode()


@pytest.mark.parametrize(
    ("role", "expected"),
    [("anonymous", 302), ("user", 302), ("staff", 403), ("staff_with_view", 200), ("superuser", 200)],
)
def test_who_may_read_the_attempts_in_the_admin(client, django_user_model, admin_user, role, expected):
    """The axes admin follows Django's model permissions: anonymous and non-staff go to the admin
    login, staff need ``axes.view_accessattempt``, superusers hold it."""
    from django.contrib.auth.models import Permission

    people = {
        "user": django_user_model.objects.create_user("plain", password="pw-plain-123"),
        "staff": django_user_model.objects.create_user("desk", password="pw-desk-123", is_staff=True),
        "staff_with_view": django_user_model.objects.create_user("ops", password="pw-ops-123", is_staff=True),
        "superuser": admin_user,
    }
    people["staff_with_view"].user_permissions.add(Permission.objects.get(codename="view_accessattempt"))
    if role != "anonymous":
        client.force_login(people[role])
    response = client.get("/admin/axes/accessattempt/")
    assert response.status_code == expected
    if expected == 302:
        assert response["Location"].startswith("/admin/login/")

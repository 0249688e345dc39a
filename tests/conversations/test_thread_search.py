"""Search inside messages and "Shared with me", through the API and the list page: full-text on
PostgreSQL, icontains on SQLite (and for unspaced scripts); a user only finds threads they may read."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from conversations.models import Message
from conversations.search import search_snippet
from conversations.services import thread_create

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def _thread(owner, agent, title, *texts):
    thread = thread_create(user=owner, agent_slug=agent.slug, title=title)
    for seq, text in enumerate(texts, start=1):
        role = "user" if seq % 2 else "assistant"
        Message.objects.create(
            conversation=thread, seq=seq, role=role, content=text, lc_message_id=f"m-{seq}"
        )
    return thread


@pytest.fixture
def threads(user, other_user, agent):
    return {
        "budget": _thread(
            user, agent, "Budget", "Plan the quarterly budget", "The budget needs a forecast spreadsheet"
        ),
        "trip": _thread(user, agent, "Trip", "Book a train to Lyon", "Trains to Lyon leave hourly"),
        "chinese": _thread(user, agent, "中文", "请帮我总结季度报告", "好的，这是季度报告的摘要"),
        "tool": _thread(user, agent, "Tools", "list files"),
        "bobs": _thread(other_user, agent, "Bob's notes", "The forecast for Bob"),
    }


def _titles(response):
    assert response.status_code == 200, response.content
    return sorted(row["title"] for row in response.json())


def test_search_finds_words_inside_messages_not_only_titles(client, user, threads):
    client.force_login(user)
    assert _titles(client.get("/api/threads", {"q": "forecast"})) == ["Budget"]  # not Bob's
    assert _titles(client.get("/api/threads", {"q": "Lyon"})) == ["Trip"]
    assert _titles(client.get("/api/threads", {"q": "trip"})) == ["Trip"]  # the title still counts
    assert _titles(client.get("/api/threads", {"q": "季度报告"})) == ["中文"]
    assert _titles(client.get("/api/threads", {"q": "nothing-like-this"})) == []


def test_a_search_result_carries_a_snippet_of_the_newest_matching_message(client, user, threads):
    client.force_login(user)
    [row] = client.get("/api/threads", {"q": "forecast"}).json()
    assert "forecast spreadsheet" in row["snippet"]
    assert row["owner"] == user.get_username()


def test_tool_results_are_not_searched(client, user, threads):
    Message.objects.create(
        conversation=threads["tool"],
        seq=2,
        role="tool",
        content="zebra.txt",
        lc_message_id="t-2",
        tool_name="ls",
    )
    client.force_login(user)
    assert _titles(client.get("/api/threads", {"q": "zebra"})) == []


def test_search_ignores_a_nul_and_overlong_queries_answer_422(client, user, threads):
    client.force_login(user)
    assert _titles(client.get("/api/threads", {"q": "Lyon\x00"})) == ["Trip"]
    response = client.get("/api/threads", {"q": "x" * 201})
    assert response.status_code == 422 and response.json()["code"] == "invalid_input"


def test_page_search_names_the_thread_and_marks_the_match(client, user, threads):
    client.force_login(user)
    page = client.get("/", {"q": "spreadsheet"}).content.decode()
    assert "Budget" in page and "Trip" not in page
    assert "<mark>spreadsheet</mark>" in page
    assert "1 thread matches" in page


def test_shared_scope_lists_others_threads_for_viewers_only(client, user, other_user, threads):
    client.force_login(user)
    assert client.get("/api/threads", {"scope": "shared"}).json() == []
    assert "Bob" not in client.get("/", {"scope": "shared", "q": "forecast"}).content.decode()

    user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(type(user).objects.get(pk=user.pk))
    shared = client.get("/api/threads", {"scope": "shared"}).json()
    assert [(row["title"], row["owner"]) for row in shared] == [("Bob's notes", other_user.get_username())]
    assert _titles(client.get("/api/threads", {"scope": "shared", "q": "forecast"})) == ["Bob's notes"]
    page = client.get("/", {"scope": "shared"}).content.decode()
    assert (
        "Bob&#x27;s notes" in page and "Budget" not in page and 'aria-current="page">Shared with me' in page
    )


def test_deleted_threads_are_never_found(client, user, threads):
    threads["trip"].status = "deleted"
    threads["trip"].save()
    client.force_login(user)
    assert _titles(client.get("/api/threads", {"q": "Lyon"})) == []


def test_snippet_cuts_around_the_match():
    text = "a " * 100 + "needle in the haystack" + " b" * 100
    snippet = search_snippet(text, "NEEDLE")
    assert snippet.match == "needle" and snippet.before.startswith("…") and snippet.after.endswith("…")
    assert len(str(snippet)) < 200
    assert search_snippet(None, "x") is None
    assert str(search_snippet("two words here", "words missing")) == "two words here"


@pytest.mark.postgres
def test_postgresql_searches_words_with_the_full_text_index(client, user, threads):
    from django.db import connection

    from conversations.search import messages_matching

    client.force_login(user)
    # Full-text matches words, not fragments of them (icontains would find "forec" too).
    assert _titles(client.get("/api/threads", {"q": "forecast spreadsheet"})) == ["Budget"]
    assert _titles(client.get("/api/threads", {"q": "forec"})) == []
    # Unspaced scripts fall back to icontains, so a part of a Chinese sentence is found.
    assert _titles(client.get("/api/threads", {"q": "总结"})) == ["中文"]
    sql, params = messages_matching("forecast").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "conversations_message_content_fts" in plan, plan


def test_sqlite_finds_fragments_of_words(client, user, threads):
    from django.db import connection

    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL searches whole words (the test above)")
    client.force_login(user)
    assert _titles(client.get("/api/threads", {"q": "forec"})) == ["Budget"]


def test_junk_in_a_search_is_never_a_500(client, user, threads):
    user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(type(user).objects.get(pk=user.pk))
    client.raise_request_exception = False
    for query in ("%00", "%ED%A0%80", "%FF%FE", "a%00b", "%E4%B8%AD%00"):
        for base in ("/api/threads?q=", "/?q=", "/api/threads?scope=shared&q=", "/?scope=shared&q="):
            assert client.get(base + query).status_code == 200, base + query

"""The thread list's reads: whose threads (``mine``, its ``archived`` ones, or ``shared`` with a holder of
the view permission)
and search inside messages: PostgreSQL full-text (the GIN index of migration 0010), ``icontains``
elsewhere and for queries in scripts written without spaces (Chinese, Japanese), which the ``simple``
text-search configuration cannot split into words."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.urls import reverse

from context_engine.text import clean_text
from conversations.access import VIEW_PERMISSION, threads_visible_to
from conversations.branching import ForkStep, Interval, branch_holding, branches_replay
from conversations.models import Conversation, Message, MessageFork
from conversations.selectors import MESSAGE_PAGE_MAX, branch_filter

SCOPE_MINE, SCOPE_SHARED, SCOPE_ARCHIVED = "mine", "shared", "archived"
SCOPES = (SCOPE_MINE, SCOPE_SHARED, SCOPE_ARCHIVED)
QUERY_MAX_CHARS = 200
SEARCH_CONFIG = "simple"  # no stemming, no stop words: every language's words match as written
SEARCHED_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)
# Han, kana and Hangul: written without spaces between words.
_UNSPACED_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def shared_scope_allowed(user: AbstractBaseUser) -> bool:
    """Whether ``user`` may list others' threads (the same permission that lets them read one)."""
    return bool(user.is_authenticated and user.is_active and user.has_perm(VIEW_PERMISSION))


def threads_in_scope(*, user: AbstractBaseUser, scope: str = SCOPE_MINE) -> QuerySet[Conversation]:
    """``mine``: the caller's own active threads but the archived ones; ``archived``: those;
    ``shared``: the others' threads the caller may read (none without the permission). Newest activity
    first."""
    visible = threads_visible_to(user).select_related("agent", "owner")
    if scope == SCOPE_SHARED:
        return visible.exclude(owner=user) if shared_scope_allowed(user) else visible.none()
    return visible.filter(owner=user, archived_at__isnull=scope != SCOPE_ARCHIVED)


def full_text_available() -> bool:
    return connection.vendor == "postgresql"


def messages_matching(query: str) -> QuerySet[Message]:
    """The user and assistant messages whose text matches ``query`` (already cleaned, not empty)."""
    messages = Message.objects.filter(role__in=SEARCHED_ROLES)
    if full_text_available() and not _UNSPACED_SCRIPT.search(query):
        from django.contrib.postgres.search import SearchQuery, SearchVector  # PostgreSQL only

        return messages.annotate(document=SearchVector("content", config=SEARCH_CONFIG)).filter(
            document=SearchQuery(query, config=SEARCH_CONFIG)
        )
    return messages.filter(content__icontains=query)


def search_query(raw: str) -> str:
    """The query as searched: cut to ``QUERY_MAX_CHARS``, NULs (a PostgreSQL DataError) as spaces, lone
    surrogates replaced, trimmed."""
    return clean_text((raw or "")[:QUERY_MAX_CHARS].replace("\x00", " ")).strip()


def thread_search(*, user: AbstractBaseUser, query: str, scope: str = SCOPE_MINE) -> QuerySet[Conversation]:
    """Threads in ``scope`` whose title or messages match ``query``, newest activity first; each carries
    ``hit_content``, the newest matching message's text (None when only the title matched)."""
    threads = threads_in_scope(user=user, scope=scope)
    query = search_query(query)
    if not query:
        return threads
    hits = messages_matching(query).filter(conversation=OuterRef("pk")).order_by("-seq")
    return threads.annotate(
        hit_content=Subquery(hits.values("content")[:1]),
        hit_id=Subquery(hits.values("pk")[:1]),
    ).filter(Q(title__icontains=query) | Exists(hits))


def search_hit_links(threads: Sequence[Conversation]) -> None:
    """Set ``hit_url`` on each searched thread whose messages matched: the matching message on the
    thread's page when its current branch holds it among the messages that page loads, else on the
    page of the branch (version) that holds it, which shows that branch whole. The forks of every
    listed thread are read in one query, and the messages after their matches counted in another."""
    steps: dict[int, list[ForkStep]] = defaultdict(list)
    forked = [t.pk for t in threads if getattr(t, "hit_id", None)]
    seqs = dict(
        Message.objects.filter(pk__in=[t.hit_id for t in threads if getattr(t, "hit_id", None)]).values_list(
            "pk", "seq"
        )
    )
    for conversation_id, kind, start, end, restored in (
        MessageFork.objects.filter(conversation_id__in=forked)
        .order_by("id")
        .values_list("conversation_id", "kind", "hidden_from_seq", "hidden_to_seq", "restored_branch")
    ):
        steps[conversation_id].append(ForkStep(kind, start, end, restored))
    current_hits: dict[int, tuple[Interval, ...]] = {}
    for thread in threads:
        if getattr(thread, "hit_id", None):
            thread.hit_seq = seqs[thread.hit_id]
            branches = branches_replay(steps.get(thread.pk, []))
            if branch_holding(branches, thread.hit_seq) == len(branches) - 1:
                current_hits[thread.pk] = branches[-1]
    later = _shown_after_hits(threads, current_hits)
    for thread in threads:
        thread.hit_url = ""
        if not getattr(thread, "hit_id", None):
            continue
        # The thread's page loads its latest MESSAGE_PAGE_MAX messages: an older match opens on the
        # page of its (current) branch, which shows the whole branch.
        current = thread.pk in current_hits and later.get(thread.pk, 0) < MESSAGE_PAGE_MAX
        name, kwargs = (
            ("conversations:thread-detail", {"thread_id": thread.thread_id})
            if current
            else ("conversations:thread-branch", {"thread_id": thread.thread_id, "message_id": thread.hit_id})
        )
        thread.hit_url = f"{reverse(name, kwargs=kwargs)}#message-{thread.hit_seq}"


def _shown_after_hits(
    threads: Sequence[Conversation], current_hits: dict[int, tuple[Interval, ...]]
) -> dict[int, int]:
    """For each thread whose match is on its current branch: how many messages of that branch follow
    the match (one query for them all)."""
    if not current_hits:
        return {}
    rows = Q(pk__in=[])
    for thread in threads:
        if thread.pk in current_hits:
            rows |= Q(conversation_id=thread.pk, seq__gt=thread.hit_seq) & branch_filter(
                current_hits[thread.pk]
            )
    counted = Message.objects.filter(rows).values("conversation_id").annotate(n=Count("pk"))
    return {row["conversation_id"]: row["n"] for row in counted}


@dataclass(frozen=True)
class Snippet:
    """A stretch of a message around the first match: ``before``, the ``match`` itself, ``after``."""

    before: str
    match: str
    after: str

    def __str__(self) -> str:
        return f"{self.before}{self.match}{self.after}"


def search_snippet(text: str | None, query: str, *, before: int = 60, after: int = 120) -> Snippet | None:
    """Where ``query`` (or, failing that, its first word found) occurs in ``text``, with some context."""
    if not text or not query:
        return None
    flat = " ".join(text.split())
    lowered = flat.lower()
    for needle in (query, *query.split()):
        start = lowered.find(needle.lower())
        if start >= 0:
            end = start + len(needle)
            head = max(0, start - before)
            tail = min(len(flat), end + after)
            return Snippet(
                before=("…" if head else "") + flat[head:start],
                match=flat[start:end],
                after=flat[end:tail] + ("…" if tail < len(flat) else ""),
            )
    # Full-text matched a word form the text spells differently (case aside): show its start.
    return Snippet(before="", match="", after=flat[:after] + ("…" if len(flat) > after else ""))

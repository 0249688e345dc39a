"""Reads of knowledge bases: ``kb_search`` ranks chunks for a query.

On PostgreSQL: full-text rank (any query word, plus all of them in websearch syntax; English
stemming), ``pg_trgm`` word similarity, and the share of the query's CJK bigrams a chunk contains, so
a Chinese query, which the word parser does not segment, still finds its chunk. On other databases:
BM25 in Python over the chunks that contain a query term (words and CJK bigrams).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce
from operator import add, or_

from django.db import connection
from django.db.models import Case, F, FloatField, Q, QuerySet, Value, When
from django.db.models.functions import Cast

from agent_platform.knowledge.models import Chunk, KnowledgeBase
from agent_platform.knowledge.ranking import bm25_scores, query_terms, split_query
from agent_platform.numbers import whole_number

SEARCH_CONFIG = "english"
TRIGRAM_MIN_SIMILARITY = 0.3
MAX_QUERY_TERMS = 24
MAX_CANDIDATES = 2000
MAX_QUERY_CHARS = 1000


@dataclass(frozen=True)
class ChunkHit:
    chunk_id: int
    kb_id: int
    document_id: int
    title: str
    source: str
    filename: str
    chunk_index: int
    score: float
    content: str
    metadata: dict = field(default_factory=dict)


def kb_get(*, reference: str) -> KnowledgeBase | None:
    """A knowledge base by slug, name (case-insensitive) or id."""
    reference = (reference or "").replace("\x00", "").strip()  # PostgreSQL rejects NUL in a query
    if not reference:
        return None
    match = Q(slug=reference) | Q(name__iexact=reference)
    if (kb_id := whole_number(reference)) is not None:
        match |= Q(pk=kb_id)
    return KnowledgeBase.objects.filter(match).first()


def kb_searchable() -> bool:
    """Whether any knowledge base holds something to search (``query_kb`` can find nothing otherwise)."""
    return Chunk.objects.exists()


def kb_list() -> QuerySet[KnowledgeBase]:
    return KnowledgeBase.objects.order_by("name")


def kb_search(
    *, query: str, kb: KnowledgeBase | None = None, limit: int = 8, portable: bool | None = None
) -> list[ChunkHit]:
    """The best chunks for ``query``, best first. ``portable`` forces the database-independent ranking
    (the default picks PostgreSQL's when the database is PostgreSQL)."""
    query = (query or "").replace("\x00", " ").strip()[:MAX_QUERY_CHARS]  # PostgreSQL rejects NUL
    if not query or limit <= 0:
        return []
    chunks = Chunk.objects.all() if kb is None else Chunk.objects.filter(kb=kb)
    if portable is None:
        portable = connection.vendor != "postgresql"
    if not portable:
        return _search_postgres(chunks, query, limit)
    return _search_portable(chunks, query, limit)


def _search_postgres(chunks: QuerySet[Chunk], query: str, limit: int) -> list[ChunkHit]:
    from django.contrib.postgres.search import (
        SearchQuery,
        SearchRank,
        SearchVector,
        TrigramWordSimilarity,
    )

    words, bigrams = split_query(query)
    words, bigrams = words[:MAX_QUERY_TERMS], bigrams[:MAX_QUERY_TERMS]
    chunks = chunks.annotate(similarity=TrigramWordSimilarity(query, "content"))
    match = Q(similarity__gte=TRIGRAM_MIN_SIMILARITY)
    score = F("similarity")
    if words:
        # Any word matches (a question in plain language still finds its chunk); chunks with more of
        # the words, or with all of them as websearch syntax asks, rank higher. Normalization 32 keeps
        # each rank in [0, 1).
        vector = SearchVector("content", config=SEARCH_CONFIG)
        any_word = reduce(or_, (SearchQuery(word, config=SEARCH_CONFIG) for word in words))
        all_words = SearchQuery(query, search_type="websearch", config=SEARCH_CONFIG)
        chunks = chunks.annotate(
            vector=vector,
            text_rank=Cast(SearchRank(vector, any_word, normalization=32), FloatField())
            + Cast(SearchRank(vector, all_words, normalization=32), FloatField()),
        )
        match |= Q(vector=any_word)
        score = score + F("text_rank") * 2
    if bigrams:
        # The word parser keeps a run of Chinese as one token, and pg_trgm ignores CJK under the C
        # locale, so also score the share of the query's CJK bigrams a chunk contains.
        hits = [
            Case(When(content__contains=bigram, then=Value(1.0)), default=Value(0.0)) for bigram in bigrams
        ]
        chunks = chunks.annotate(cjk_coverage=reduce(add, hits) / Value(float(len(bigrams))))
        match |= Q(cjk_coverage__gt=0)
        score = score + F("cjk_coverage")
    ranked = (
        chunks.filter(match)
        .annotate(score=score)
        .select_related("document")
        .order_by("-score", "document_id", "index")[:limit]
    )
    return [_hit(chunk, chunk.score) for chunk in ranked]


def _search_portable(chunks: QuerySet[Chunk], query: str, limit: int) -> list[ChunkHit]:
    terms = query_terms(query)[:MAX_QUERY_TERMS]
    if not terms:
        return []
    # Every chunk holding a term holds it as a substring, so these candidates carry the full
    # document frequencies BM25 needs.
    candidates = list(
        chunks.filter(reduce(or_, (Q(content__icontains=term) for term in terms)))
        .select_related("document")
        .order_by("document_id", "index")[:MAX_CANDIDATES]
    )
    scores = bm25_scores(terms, [chunk.content for chunk in candidates], corpus_size=chunks.count())
    ranked = sorted(zip(scores, range(len(candidates)), strict=True), key=lambda pair: (-pair[0], pair[1]))
    return [_hit(candidates[i], score) for score, i in ranked[:limit] if score > 0]


def _hit(chunk: Chunk, score: float) -> ChunkHit:
    document = chunk.document
    return ChunkHit(
        chunk_id=chunk.pk,
        kb_id=chunk.kb_id,
        document_id=chunk.document_id,
        title=document.title,
        source=document.source,
        filename=document.filename,
        chunk_index=chunk.index,
        score=round(float(score), 4),
        content=chunk.content,
        metadata=dict(chunk.metadata or {}),
    )

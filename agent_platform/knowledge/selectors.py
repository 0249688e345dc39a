"""Reads of knowledge bases: ``kb_search`` ranks chunks for a query.

On PostgreSQL: full-text rank (``websearch_to_tsquery``, English stemming) plus ``pg_trgm`` word
similarity, so a Chinese query, which the word parser does not segment, still finds its chunk. On
other databases: BM25 in Python over the chunks that contain a query term (words and CJK bigrams).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce
from operator import or_

from django.db import connection
from django.db.models import F, FloatField, Q, QuerySet
from django.db.models.functions import Cast

from agent_platform.knowledge.models import Chunk, KnowledgeBase
from agent_platform.knowledge.ranking import bm25_scores, query_terms

SEARCH_CONFIG = "english"
TRIGRAM_MIN_SIMILARITY = 0.3
MAX_QUERY_TERMS = 24
MAX_CANDIDATES = 2000


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
    reference = (reference or "").strip()
    if not reference:
        return None
    match = Q(slug=reference) | Q(name__iexact=reference)
    if reference.isdigit():
        match |= Q(pk=int(reference))
    return KnowledgeBase.objects.filter(match).first()


def kb_list() -> QuerySet[KnowledgeBase]:
    return KnowledgeBase.objects.order_by("name")


def kb_search(
    *, query: str, kb: KnowledgeBase | None = None, limit: int = 8, portable: bool | None = None
) -> list[ChunkHit]:
    """The best chunks for ``query``, best first. ``portable`` forces the database-independent ranking
    (the default picks PostgreSQL's when the database is PostgreSQL)."""
    query = (query or "").strip()
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

    search_query = SearchQuery(query, search_type="websearch", config=SEARCH_CONFIG)
    vector = SearchVector("content", config=SEARCH_CONFIG)
    ranked = (
        chunks.annotate(
            vector=vector,
            # normalization 32 maps the rank into [0, 1) so it adds up with the similarity.
            text_rank=Cast(SearchRank(vector, search_query, normalization=32), FloatField()),
            similarity=TrigramWordSimilarity(query, "content"),
        )
        .filter(Q(vector=search_query) | Q(similarity__gte=TRIGRAM_MIN_SIMILARITY))
        .annotate(score=F("text_rank") * 2 + F("similarity"))
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

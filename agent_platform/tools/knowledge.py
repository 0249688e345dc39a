"""The ``query_kb`` tool: knowledge-base search as the JSON documented in SPEC §2.2."""

from __future__ import annotations

import json
import time

from langchain_core.tools import BaseTool, tool

from agent_platform.knowledge.selectors import ChunkHit, kb_get, kb_list, kb_search

QUERY_KB_LIMIT = 8


def hit_record(hit: ChunkHit) -> dict:
    return {
        "id": hit.chunk_id,
        "kb_id": hit.kb_id,
        "file_id": hit.document_id,
        "title": hit.title,
        "source": hit.source or hit.filename or hit.title,
        "score": hit.score,
        "content": hit.content,
        "metadata": {
            **hit.metadata,
            "source": hit.source or hit.filename or hit.title,
            "filename": hit.filename,
            "title": hit.title,
            "chunk_index": hit.chunk_index,
            "score": hit.score,
        },
    }


def query_kb_result(*, query: str, kb: str | None = None, limit: int = QUERY_KB_LIMIT) -> dict:
    started = time.perf_counter()
    knowledge_base = None
    if kb:
        knowledge_base = kb_get(reference=kb)
        if knowledge_base is None:
            names = ", ".join(f"{item.slug} ({item.name})" for item in kb_list()) or "none"
            return {
                "query": query,
                "kb_id": None,
                "error": f"Unknown knowledge base {kb!r}. Available: {names}.",
                "results": [],
            }
    if not (query or "").strip():
        return {"query": query, "kb_id": None, "error": "The query is empty.", "results": []}
    hits = kb_search(query=query, kb=knowledge_base, limit=limit)
    return {
        "query": query,
        "kb_id": knowledge_base.pk if knowledge_base else None,
        "response_time": round(time.perf_counter() - started, 3),
        "results": [hit_record(hit) for hit in hits],
    }


def build_query_kb_tool() -> BaseTool:
    @tool("query_kb", parse_docstring=True)
    def query_kb(query: str, kb: str | None = None) -> str:
        """Search the knowledge bases managed by the administrators; returns the best-matching passages
        as JSON with their titles and sources. Works for English and Chinese queries.

        Args:
            query: What to look for, in a few words.
            kb: Optional knowledge base slug or name to search; all knowledge bases when omitted.
        """
        return json.dumps(query_kb_result(query=query, kb=kb), ensure_ascii=False)

    return query_kb

import json

import pytest
from django.db import connection

from agent_platform.knowledge.models import KnowledgeBase
from agent_platform.knowledge.selectors import kb_search
from agent_platform.knowledge.services import document_ingest
from agent_platform.seed import demo_seed
from agent_platform.tools.knowledge import build_query_kb_tool

pytestmark = pytest.mark.services

# Decoys in the style of real retrieval corpora (LangChain docs chunks, cf. shared/data/kb_retrieval).
DECOYS = [
    (
        "LLMChain",
        "https://langchain.readthedocs.io/en/latest/modules/chains/getting_started.html",
        "The LLMChain is a simple chain that takes in a prompt template, formats it with the user input "
        "and returns the response from an LLM. Chains allow us to combine multiple components together.",
    ),
    (
        "Vector stores",
        "https://langchain.readthedocs.io/en/latest/modules/indexes/vectorstores.html",
        "A vector store stores embedded data and performs vector search. Pinecone, Chroma and FAISS are "
        "supported; documents are split into chunks before they are embedded.",
    ),
    (
        "部署说明",
        "docs/deploy.zh.md",
        "生产环境使用 PostgreSQL 数据库和 Redis 消息队列。运行任务在 Celery 工作进程中执行，可以部署在多台机器上。",
    ),
]

QUERIES = [
    ("how are large tool results saved and read back", "Saved files and reading them back"),
    ("compression", "Context compression"),
    ("search the knowledge base for compression", "Context compression"),
    ("What is the effective trigger of the budget?", "The token budget"),
    ("令牌预算", "令牌预算"),
    ("上下文压缩", "上下文压缩"),
    ("请在知识库中搜索上下文压缩是怎么工作的", "上下文压缩"),
    ("PostgreSQL 数据库", "部署说明"),
]


@pytest.fixture
def corpus(db):
    demo_seed(password="pw")
    kb = KnowledgeBase.objects.get(slug="platform-guide")
    for title, source, text in DECOYS:
        document_ingest(kb=kb, title=title, source=source, text=text)
    return kb


def _first_titles(query, **kwargs):
    return [hit.title for hit in kb_search(query=query, **kwargs)]


@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_portable_ranking_puts_the_relevant_chunk_first(corpus, query, expected):
    titles = _first_titles(query, portable=True)
    assert titles and titles[0] == expected, titles


@pytest.mark.postgres
@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_postgres_ranking_puts_the_relevant_chunk_first(corpus, query, expected):
    titles = _first_titles(query, portable=False)
    assert titles and titles[0] == expected, titles


@pytest.mark.postgres
def test_postgres_has_full_text_and_trigram_indexes_on_chunks(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'agent_platform_chunk'")
        indexes = dict(cursor.fetchall())
    assert "to_tsvector" in indexes["agent_platform_chunk_fts"]
    assert "gin_trgm_ops" in indexes["agent_platform_chunk_trgm"]


def test_search_is_limited_to_the_named_knowledge_base(corpus):
    other = KnowledgeBase.objects.create(name="Other", slug="other")
    document_ingest(kb=other, title="Other compression", text="compression compression compression")
    assert {hit.kb_id for hit in kb_search(query="compression", kb=corpus)} == {corpus.pk}
    assert {hit.kb_id for hit in kb_search(query="compression")} == {corpus.pk, other.pk}
    assert kb_search(query="zebra unicorn quasar") == []


def test_query_kb_tool_returns_the_documented_json(corpus, settings):
    tool = build_query_kb_tool()
    result = json.loads(tool.invoke({"query": "上下文压缩", "kb": "platform-guide"}))
    assert set(result) == {"query", "kb_id", "response_time", "results"}
    assert result["query"] == "上下文压缩" and result["kb_id"] == corpus.pk
    first = result["results"][0]
    assert set(first) == {"id", "kb_id", "file_id", "title", "source", "score", "content", "metadata"}
    assert first["title"] == "上下文压缩" and first["source"] == "demo/context-compression.zh.md"
    assert first["kb_id"] == corpus.pk and "上下文" in first["content"]
    assert {"source", "filename", "chunk_index", "score"} <= set(first["metadata"])
    assert first["metadata"]["score"] == first["score"]
    text = json.dumps(result, ensure_ascii=False)
    assert str(settings.BASE_DIR) not in text and str(settings.MEDIA_ROOT) not in text


def test_query_kb_tool_reports_an_unknown_knowledge_base(corpus):
    result = json.loads(build_query_kb_tool().invoke({"query": "budget", "kb": "nope"}))
    assert result["results"] == [] and "Unknown knowledge base 'nope'" in result["error"]
    assert "platform-guide" in result["error"]


@pytest.mark.parametrize("kb", ["nope\x00", "²", "9" * 30])
def test_odd_knowledge_base_references_are_an_error_result_not_an_exception(corpus, kb):
    result = json.loads(build_query_kb_tool().invoke({"query": "budget", "kb": kb}))
    assert result["results"] == [] and "Unknown knowledge base" in result["error"]


@pytest.mark.parametrize("query", ["the", "???", "a" * 3000, "'\" OR 1=1 --", "上", "budget\x00"])
def test_odd_queries_do_not_fail(corpus, query):
    assert isinstance(kb_search(query=query), list)
    assert isinstance(kb_search(query=query, portable=True), list)

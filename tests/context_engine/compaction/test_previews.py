"""Generic HEAD/MIDDLE/TAIL and structured search previews: budgets in tokens, never exceeded."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_engine.compaction.previews import (
    MAX_RECORDS,
    clip_middle,
    generic_preview,
    generic_preview_chars,
    structured_preview,
    tool_result_preview,
)
from context_engine.tokens.messages import DEFAULT_PROFILE, estimate_text, profile_for_model

HYPOTHESIS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _web_payload(count: int, *, body: str = "lorem ipsum dolor sit amet " * 40) -> dict:
    return {
        "query": "what is pydantic ai",
        "response_time": 0.5,
        "results": [
            {
                "title": f"Result {i}",
                "url": f"https://example.com/{i}",
                "site_name": "example",
                "publish_time": "2025-01-01",
                "score": 0.9 - i / 100,
                "content": f"BEGIN{i} " + body + f" END{i}",
                "raw_content": "secret raw page " * 50,
            }
            for i in range(count)
        ],
    }


def test_generic_preview_splits_head_middle_tail_two_one_two():
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    preview = generic_preview_chars(text, 527)
    head = preview.split("\n\n[MIDDLE]\n")[0].removeprefix("[HEAD]\n")
    middle = preview.split("\n\n[MIDDLE]\n")[1].split("\n\n[TAIL]\n")[0]
    tail = preview.split("\n\n[TAIL]\n")[1]
    assert (len(head), len(middle), len(tail)) == (200, 100, 200)
    assert text.startswith(head) and text.endswith(tail) and middle in text
    assert len(preview) == 527


def test_generic_preview_keeps_begin_and_end_and_fits_the_token_budget():
    text = "BEGIN " + "\n".join(f"line {i}: value={i * 37}" for i in range(3000)) + " END"
    preview = generic_preview(text, limit_tokens=100)
    assert estimate_text(preview) <= 100
    assert preview.startswith("[HEAD]\nBEGIN") and preview.endswith("END")
    assert "[MIDDLE]" in preview and "[TAIL]" in preview
    assert estimate_text(preview) >= 60  # uses most of the budget, not a token or two


def test_generic_preview_fits_chinese_text_in_tokens_not_characters():
    text = "这是一个关于上下文压缩的测试句子。" * 2000
    preview = generic_preview(text, limit_tokens=120)
    assert 0 < estimate_text(preview) <= 120
    assert len(preview) < 120 * 4  # a chars/4 budget would overshoot on CJK


def test_limit_zero_gives_no_preview_and_reports_all_chars_omitted():
    preview = tool_result_preview("x" * 500, limit_tokens=0, tool_name="web_search")
    assert preview.text == ""
    assert preview.omitted_chars == 500


def test_text_that_fits_is_returned_whole():
    preview = tool_result_preview("  short answer  ", limit_tokens=50)
    assert preview.text == "short answer"


def test_clip_middle_joins_head_and_tail_with_an_ellipsis():
    assert clip_middle("abcdefghijklmnopqrstuvwxyz0123456789", 29) == "abcdefghijklmnopqrstu…3456789"
    assert clip_middle("abcdef", 3) == "abc"
    assert clip_middle("abc", 0) == ""


def test_web_search_preview_keeps_citations_and_reports_omitted_results():
    text = json.dumps(_web_payload(12))
    preview = structured_preview(text, tool_name="web_search", limit_tokens=180)
    assert preview is not None and estimate_text(preview) <= 180
    data = json.loads(preview)
    assert (
        data["kind"] == "web_search" and data["result_count"] == 12 and data["query"] == "what is pydantic ai"
    )
    assert data["omitted_results"] == 12 - len(data["results"]) > 0
    first = {k: v for k, v in data["results"][0].items() if k != "content_preview"}
    assert first == {
        "title": "Result 0",
        "url": "https://example.com/0",
        "site_name": "example",
        "publish_time": "2025-01-01",
        "score": 0.9,
    }
    assert "raw_content" not in preview and "secret" not in preview
    assert preview == json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def test_web_search_preview_accepts_a_bare_json_array():
    text = json.dumps(_web_payload(3)["results"])
    data = json.loads(structured_preview(text, tool_name="web_search", limit_tokens=400))
    assert data["result_count"] == 3
    assert [r["url"] for r in data["results"]] == [f"https://example.com/{i}" for i in range(3)]


def test_web_search_preview_shows_at_most_eight_results_with_content_previews():
    text = json.dumps(_web_payload(20, body="short body"))
    data = json.loads(structured_preview(text, tool_name="web_search", limit_tokens=5000))
    assert len(data["results"]) == MAX_RECORDS
    assert data["omitted_results"] == 12
    assert data["results"][0]["content_preview"].startswith("BEGIN0")


def test_structured_preview_reports_all_omitted_when_no_record_fits():
    text = json.dumps({"query": "q" * 5000, "results": [{"title": "t" * 3000, "url": "u" * 3000}]})
    preview = structured_preview(text, tool_name="web_search", limit_tokens=30)
    assert preview is not None
    data = json.loads(preview)
    assert data["results"] == [] and data["omitted_results"] == 1
    assert estimate_text(preview) <= 30


def test_query_kb_preview_keeps_identity_and_whitelisted_metadata_only():
    payload = {
        "kb_id": "kb_1",
        "results": [
            {
                "id": "chunk-1",
                "kb_id": "kb_1",
                "file_id": "file-9",
                "content": "BEGIN " + "knowledge " * 400 + "END",
                "metadata": {
                    "source": "manual.pdf",
                    "chunk_index": 3,
                    "score": 0.7,
                    "host_path": "/srv/secret/manual.pdf",
                },
            }
        ],
    }
    data = json.loads(structured_preview(json.dumps(payload), tool_name="query_kb", limit_tokens=150))
    assert data["kind"] == "knowledge_base" and data["kb_id"] == "kb_1" and data["result_count"] == 1
    record = data["results"][0]
    assert (record["id"], record["file_id"]) == ("chunk-1", "file-9")
    assert record["metadata"] == {"source": "manual.pdf", "chunk_index": 3, "score": 0.7}
    assert record["content_preview"].startswith("BEGIN")


def test_unparseable_or_unexpected_json_falls_back_to_the_generic_preview():
    for text in ("not json at all " * 300, json.dumps({"items": ["x" * 50] * 100}), json.dumps("s" * 3000)):
        assert structured_preview(text, tool_name="web_search", limit_tokens=50) is None
        assert tool_result_preview(text, limit_tokens=50, tool_name="web_search").text.startswith("[HEAD]\n")


def test_real_tavily_results_keep_order_and_urls(tavily_payloads):
    for payload in tavily_payloads:
        text = json.dumps(payload, ensure_ascii=False)
        preview = tool_result_preview(text, limit_tokens=300, tool_name="web_search", profile=DEFAULT_PROFILE)
        assert estimate_text(preview.text) <= 300
        data = json.loads(preview.text)
        urls = [r["url"] for r in payload["results"]]
        assert [r["url"] for r in data["results"]] == urls[: len(data["results"])]
        assert data["result_count"] == len(urls)


def test_real_pinecone_matches_keep_ids_in_order(pinecone_matches):
    profile = profile_for_model("gpt-4o")
    structured = 0
    for matches in pinecone_matches:
        text = json.dumps(matches, ensure_ascii=False)
        preview = tool_result_preview(text, limit_tokens=200, tool_name="query_kb", profile=profile)
        assert estimate_text(preview.text, profile) <= 200
        if preview.text.startswith("{"):
            structured += 1
            data = json.loads(preview.text)
            ids = [m["id"] for m in matches]
            assert [r["id"] for r in data["results"]] == ids[: len(data["results"])]
    # Real KB results must actually take the structured path (else the loop above checks nothing).
    assert structured >= len(pinecone_matches) // 2


# --- properties ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=80),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=40,
)
records = st.fixed_dictionaries(
    {"id": st.text(max_size=20), "url": st.text(max_size=40)},
    optional={
        "title": st.text(max_size=200),
        "content": st.text(max_size=2000),
        "score": st.floats(allow_nan=False, allow_infinity=False),
        "metadata": st.dictionaries(st.sampled_from(["source", "chunk_index", "path", "score"]), json_values),
        "extra": json_values,
    },
)
limits = st.integers(min_value=0, max_value=600)
tool_names = st.sampled_from(["web_search", "query_kb", "shell", None])


@HYPOTHESIS
@given(text=st.text(max_size=5000), limit=limits, tool=tool_names)
def test_previews_of_random_unicode_never_exceed_the_budget(text, limit, tool):
    preview = tool_result_preview(text, limit_tokens=limit, tool_name=tool)
    assert estimate_text(preview.text) <= limit
    assert preview.omitted_chars >= 0


@HYPOTHESIS
@given(value=json_values, limit=limits, tool=tool_names)
def test_previews_of_random_json_never_exceed_the_budget(value, limit, tool):
    preview = tool_result_preview(json.dumps(value, ensure_ascii=False), limit_tokens=limit, tool_name=tool)
    assert estimate_text(preview.text) <= limit


@HYPOTHESIS
@given(chunk=st.text(min_size=1, max_size=40), repeat=st.integers(1000, 20_000), limit=limits)
def test_previews_of_huge_strings_never_exceed_the_budget(chunk, repeat, limit):
    text = chunk * repeat
    preview = tool_result_preview(text, limit_tokens=limit, tool_name="web_search")
    assert estimate_text(preview.text) <= limit


@HYPOTHESIS
@given(
    results=st.lists(records, max_size=15),
    limit=st.integers(min_value=1, max_value=800),
    tool=st.sampled_from(["web_search", "query_kb"]),
    wrap=st.booleans(),
)
def test_structured_previews_keep_record_order_and_identity_fields(results, limit, tool, wrap):
    text = json.dumps({"query": "q", "results": results} if wrap else results, ensure_ascii=False)
    preview = structured_preview(text, tool_name=tool, limit_tokens=limit)
    if preview is None:  # not even the header fits: the generic preview is used
        assert estimate_text(tool_result_preview(text, limit_tokens=limit, tool_name=tool).text) <= limit
        return
    assert estimate_text(preview) <= limit
    data = json.loads(preview)
    shown = data["results"]
    assert data["result_count"] == len(results)
    assert len(shown) <= MAX_RECORDS
    assert data.get("omitted_results", 0) == len(results) - len(shown)
    identity = "url" if tool == "web_search" else "id"
    assert [r.get(identity) for r in shown] == [r[identity] for r in results[: len(shown)]]

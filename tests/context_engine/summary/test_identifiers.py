"""The identifier extractor (on hand-made text and on the real traces) and the loss report."""

from __future__ import annotations

import json

import pytest

from context_engine.summary.identifiers import (
    KIND_EMAIL,
    KIND_HASH,
    KIND_PATH,
    KIND_QUANTITY,
    KIND_RECORD_ID,
    KIND_TICKET,
    KIND_URL,
    KIND_UUID,
    better_summary,
    extract_identifiers,
    identifiers_of,
    loss_report,
)
from tests.conftest import shared_data_file

SAMPLE = (
    "See https://example.com/a/b?x=1. Edit src/pkg/mod.py and /usr/bin/chromium, README.md; ticket "
    "ABC-1234, id 123e4567-e89b-12d3-a456-426614174000, commit 9fceb02d, mail bob@example.org; took "
    '300ms and 12.5 MB, cost $1,200. {"user_id": "mia_li_3668", "reservation_id": "ZFA04Y"}'
)


def test_every_kind_is_found_with_its_kind():
    found = extract_identifiers(SAMPLE)
    assert found == {
        "https://example.com/a/b?x=1": KIND_URL,
        "bob@example.org": KIND_EMAIL,
        "123e4567-e89b-12d3-a456-426614174000": KIND_UUID,
        "src/pkg/mod.py": KIND_PATH,
        "/usr/bin/chromium": KIND_PATH,
        "README.md": KIND_PATH,
        "9fceb02d": KIND_HASH,
        "ABC-1234": KIND_TICKET,
        "mia_li_3668": KIND_RECORD_ID,
        "ZFA04Y": KIND_RECORD_ID,
        "300ms": KIND_QUANTITY,
        "12.5 MB": KIND_QUANTITY,
        "$1,200": KIND_QUANTITY,
    }


@pytest.mark.parametrize(
    "text",
    [
        "and/or km/h e.g. i.e. 17/09/2025",
        "deadbeef facade 2024 1234567",  # words of hex letters and plain numbers are not hashes
        "The quick brown fox jumps over the lazy dog.",
        "version 3 of the API",
    ],
)
def test_ordinary_text_yields_no_identifiers(text):
    assert extract_identifiers(text) == {}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("user_id: 'abc123'", {"abc123": KIND_RECORD_ID}),
        ('Order_REF = "Z-991"', {"Z-991": KIND_RECORD_ID}),
        ("IDS='a1b2'", {"a1b2": KIND_RECORD_ID}),
        ("xid: 'abcdef'", {}),  # the id word must be the whole key, or its last "_" part
        ("x1_id='abcdef'", {}),
        ("my_userid: 'abcdef'", {}),
        ("monkey: 'banana'", {}),
    ],
)
def test_a_keyed_id_needs_a_whole_key(text, found):
    assert extract_identifiers(text) == found


def test_a_bare_file_name_needs_a_known_extension_at_its_end():
    found = extract_identifiers("a.tar.gz file.py.bak b.PY c.cs Dockerfile.dockerfile x.py-x")
    assert found == {
        "a.tar.gz": KIND_PATH,
        "b.PY": KIND_PATH,
        "c.cs": KIND_PATH,
        "Dockerfile.dockerfile": KIND_PATH,
    }


def test_identifiers_of_gives_the_same_answer_from_its_cache():
    first = identifiers_of([SAMPLE, "see README.md"])
    assert identifiers_of([SAMPLE, "see README.md"]) == first == {**extract_identifiers(SAMPLE)}


def test_a_url_path_is_not_reported_again_as_a_file_path():
    assert extract_identifiers("read https://github.com/org/repo/blob/main/src/app.py now") == {
        "https://github.com/org/repo/blob/main/src/app.py": KIND_URL
    }


@pytest.mark.shared_data
def test_swe_agent_trace_yields_its_paths_and_urls():
    path = shared_data_file(
        "swe_agent_trajectories",
        "test_data__gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__pydicom__pydicom-1458.traj",
    )
    history = json.loads(path.read_text())["history"]
    found = identifiers_of(h["content"] for h in history if isinstance(h.get("content"), str))
    assert found.get("pydicom/pixel_data_handlers/numpy_handler.py") == KIND_PATH
    assert any(v.startswith("http://dicom.nema.org/medical/dicom/current/") for v in found)
    assert all(kind != KIND_EMAIL for kind in found.values())


@pytest.mark.shared_data
def test_tau2_airline_trace_yields_emails_reservation_codes_and_user_ids():
    path = shared_data_file("tau2_bench_simulations", "airline_gpt-4o-2024-11-20_50sims.json")
    simulations = json.loads(path.read_text())["simulations"]
    texts = [m.get("content") or "" for s in simulations[:10] for m in s["messages"]]
    found = identifiers_of(texts)
    kinds = set(found.values())
    assert {KIND_EMAIL, KIND_RECORD_ID, KIND_QUANTITY} <= kinds
    assert "EHGLP3" in found  # a reservation code the agent and user exchange
    assert any(v.endswith("@example.com") for v in found)
    assert "MUGYUB" in found  # a code without digits, found as the value of "reservation_id"
    # Nothing of ordinary prose: every record id is a code (upper case, digits or underscores).
    assert all(
        v.isupper() or any(c.isdigit() or c == "_" for c in v)
        for v, k in found.items()
        if k == KIND_RECORD_ID
    )


@pytest.mark.shared_data
def test_web_search_cassettes_yield_urls_uuids_and_hashes():
    path = shared_data_file("pydantic_ai_cassettes", "tool_results.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()[:40]]
    found = identifiers_of(json.dumps(row) for row in rows)
    kinds = set(found.values())
    assert {KIND_URL, KIND_UUID, KIND_HASH} <= kinds
    assert not any("/" in v and v.replace("/", "").isdigit() for v in found)  # no dates as paths


def test_loss_report_sorts_each_identifier_into_its_nearest_tier():
    identifiers = extract_identifiers(SAMPLE)
    report = loss_report(
        identifiers,
        summary="Worked on src/pkg/mod.py for ABC-1234; it took 300 ms.",
        kept=["the user wrote bob@example.org again"],
        one_read=["... https://example.com/a/b?x=1 ... 12.5MB ..."],
        two_reads=[SAMPLE.replace("ZFA04Y", "")],
    )
    assert report.total == len(identifiers) == 13
    assert report.in_summary == 3  # path, ticket, and "300ms" matched as "300 ms"
    assert report.in_view == 1
    assert report.one_read == 2  # the URL, and "12.5 MB" as "12.5MB"
    assert report.two_reads == 6
    assert report.unreachable == 1
    assert report.lost == 7 and report.lost_identifiers[0] == "ZFA04Y"  # unreachable first
    assert "src/pkg/mod.py" not in report.lost_identifiers
    assert report.lost_kinds[KIND_RECORD_ID] == 2
    as_dict = report.as_dict()
    assert as_dict["lost"] == 7 and as_dict["unreachable"] == 1 and "in_saved_file" not in as_dict


def test_loss_report_bounds_the_lost_list_but_not_the_count():
    identifiers = {f"/srv/data/file{i}.csv": KIND_PATH for i in range(80)}
    report = loss_report(identifiers, summary="", limit=10)
    assert report.lost == report.unreachable == 80
    assert len(report.lost_identifiers) == 10


def test_the_better_summary_loses_fewer_identifiers_and_a_tie_keeps_the_first():
    identifiers = {"ABC-1234": KIND_TICKET, "/a/b.py": KIND_PATH}
    first = loss_report(identifiers, summary="ABC-1234")
    second = loss_report(identifiers, summary="ABC-1234 and /a/b.py")
    assert better_summary(first, second) == 1
    assert better_summary(second, first) == 0
    assert better_summary(first, first) == 0


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("took ١٢ MB", "١٢ MB", KIND_QUANTITY),  # any Unicode digit, as ``\d`` reads it
        ("cost ＄ is not money but $７００ is", "$７００", KIND_QUANTITY),
        ('{"order_key": "zz_top_aa"}', "zz_top_aa", KIND_RECORD_ID),  # no digit, but keyed
        ("ref=abc_def", None, None),  # keyed ids need quotes: a text without one digit yields nothing
    ],
)
def test_digit_free_and_non_ascii_digit_texts_are_read_as_before(text, value, kind):
    found = extract_identifiers(text)
    if value is None:
        assert found == {}
    else:
        assert found.get(value) == kind

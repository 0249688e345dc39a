import uuid

import pytest

from agent_platform.tools.files import build_file_tools
from agent_platform.workdir import Workdir

TRAVERSAL_PATHS = ["../x", "a/../../x", "/etc/passwd", "C:\\x", "a\x00b"]


@pytest.fixture
def workdir(workdir_storage):
    """Every test here runs on local disk and on the loopback S3 bucket: the tools answer the same."""
    return Workdir(uuid.uuid4())


@pytest.fixture
def tools(workdir):
    return build_file_tools(workdir)


def _calls(path):
    return {
        "ls": {"path": path},
        "read_file": {"path": path},
        "write_file": {"path": path, "content": "pwned"},
        "edit_file": {"path": path, "old_string": "a", "new_string": "b"},
    }


@pytest.mark.parametrize("path", TRAVERSAL_PATHS)
def test_every_file_tool_rejects_traversal_and_absolute_paths(tools, path, tmp_path, workdir, s3_server):
    for name, args in _calls(path).items():
        result = tools[name].invoke(args)
        assert result.startswith("Error: "), (name, result)
        assert str(tmp_path) not in result
    assert not (tmp_path / "x").exists()
    assert not any(p.name == "pwned" or p.read_text() == "pwned" for p in tmp_path.rglob("*") if p.is_file())
    assert not any(key.endswith(("/x", "pwned")) for key in s3_server.keys())


def test_write_read_edit_round_trip(tools, workdir):
    assert tools["write_file"].invoke({"path": "notes/plan.md", "content": "step one\nstep two\n"}) == (
        "Wrote notes/plan.md (2 lines)."
    )
    assert tools["read_file"].invoke({"path": "notes/plan.md"}) == "     1\tstep one\n     2\tstep two"
    result = tools["edit_file"].invoke(
        {"path": "./notes/plan.md", "old_string": "step two", "new_string": "step 2"}
    )
    assert result == "Edited notes/plan.md: replaced 1 occurrence."
    assert workdir.read_text("notes/plan.md") == "step one\nstep 2\n"
    assert tools["ls"].invoke({}) == "notes/"
    assert tools["ls"].invoke({"path": "notes"}) == "notes/plan.md"


def test_write_file_refuses_to_overwrite_and_saved_outputs_are_read_only(tools, workdir):
    saved = "outputs/large_tool_results/web_search-0123456789abcdef.txt"
    workdir.write_text(saved, "original")
    tools["write_file"].invoke({"path": "a.txt", "content": "1"})
    assert "already exists" in tools["write_file"].invoke({"path": "a.txt", "content": "2"})
    assert "read-only" in tools["write_file"].invoke({"path": saved, "content": "x"})
    assert "read-only" in tools["edit_file"].invoke(
        {"path": saved, "old_string": "original", "new_string": "x"}
    )
    assert workdir.read_text(saved) == "original"
    assert workdir.read_text("a.txt") == "1"


def test_read_file_pages_by_lines_and_says_when_there_is_more(tools, workdir):
    workdir.write_text("big.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    page = tools["read_file"].invoke({"path": "big.txt", "offset": 3, "limit": 4})
    assert page.splitlines() == [
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
        "     7\tline 7",
        "(showing lines 4-7 of 10; call read_file with offset=7 to read more)",
    ]
    last = tools["read_file"].invoke({"path": "big.txt", "offset": 7, "limit": 100})
    assert last.splitlines()[-1] == "    10\tline 10"
    assert "past the end" in tools["read_file"].invoke({"path": "big.txt", "offset": 10})


def test_read_file_splits_very_long_lines_into_continuation_rows(tools, workdir):
    workdir.write_text("long.json", "x" * 4500)
    rows = tools["read_file"].invoke({"path": "long.json"}).splitlines()
    assert [row.split("\t")[0].strip() for row in rows] == ["1", "1.1", "1.2"]
    assert "".join(row.split("\t")[1] for row in rows) == "x" * 4500


def test_missing_files_and_ambiguous_edits_are_clear_errors(tools, workdir):
    assert tools["read_file"].invoke({"path": "nope.txt"}) == "Error: File not found: nope.txt"
    assert tools["ls"].invoke({"path": "nope"}) == "Error: Directory not found: nope"
    workdir.write_text("a.txt", "x x")
    assert "2 times" in tools["edit_file"].invoke({"path": "a.txt", "old_string": "x", "new_string": "y"})
    assert (
        tools["edit_file"].invoke(
            {"path": "a.txt", "old_string": "x", "new_string": "y", "replace_all": True}
        )
        == "Edited a.txt: replaced 2 occurrences."
    )


def test_read_file_answers_a_page_sized_to_the_agents_window_and_says_how_to_read_the_next(workdir):
    from agent_platform.tools.files import PageSize
    from context_engine.config import CompressionConfig
    from context_engine.tokens.messages import estimate_text

    config = CompressionConfig(trigger_tokens=1_843, context_window=2_048)  # SmolLM2's window
    page = PageSize.for_config(config)
    read_file = build_file_tools(workdir, page=page)["read_file"]
    lines = [f"2024-05-01 12:00:{i % 60:02d} INFO request {i} served in {i * 7 % 300} ms" for i in range(400)]
    workdir.write_text("app.log", "\n".join(lines) + "\n")

    first = read_file.invoke({"path": "app.log"})
    assert estimate_text(first, page.profile) <= page.tokens < config.fresh_result_cap
    *rows, footer = first.split("\n")
    last = len(rows)
    assert footer == f"(showing lines 1-{last} of 400; call read_file with offset={last} to read more)"
    following = read_file.invoke({"path": "app.log", "offset": last})
    assert following.startswith(f"{last + 1:6d}\t{lines[last]}")


def test_a_line_longer_than_a_page_is_read_row_by_row_through_its_row_pointers(workdir):
    from agent_platform.tools.files import PageSize

    page = PageSize(tokens=200)
    read_file = build_file_tools(workdir, page=page)["read_file"]
    line = "".join(f"{i:05d}," for i in range(2_000))  # 12,000 characters of minified data on one line
    workdir.write_text("data.json", f"[\n{line}\n]\n")

    text, path, seen, labels = "", "data.json:L2", [], []
    while path:
        labels.append(path.rpartition(":L")[2])
        answer = read_file.invoke({"path": path})
        seen.append(answer)
        *rows, footer = answer.split("\n")
        text += "".join(
            row.split("\t", 1)[1] for row in rows if row.split("\t", 1)[0].strip().startswith("2")
        )
        pointer = footer.partition('path="')[2].partition('"')[0]
        path = pointer if pointer.startswith("data.json:L2.") else ""
    assert text == line  # the whole line, read once, in order
    assert len(seen) > 2
    # Each page opens on the row its pointer names, labelled as read_file labels it.
    assert [answer.split("\t", 1)[0].strip() for answer in seen] == labels
    assert "no row 2.999" in read_file.invoke({"path": "data.json:L2.999"})

"""Symbolic links in a workdir on local disk: reads resolve the real path and refuse one outside the
workdir; writes never follow a link. Every refusal names only virtual paths."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from agent_platform.tools.files import build_file_tools
from agent_platform.workdir import Workdir
from context_engine.errors import StoreError

SECRET = "root:x:0:0:the secret outside"


@pytest.fixture
def outside(tmp_path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "passwd").write_text(SECRET)
    return directory


@pytest.fixture
def workdir(settings, tmp_path) -> Workdir:
    settings.WORKDIR_ROOT = tmp_path / "workdirs"
    workdir = Workdir(uuid.uuid4())
    workdir.write_text("notes/inside.md", "inside")
    return workdir


@pytest.fixture
def root(workdir) -> Path:
    return Path(workdir.storage.location)


@pytest.fixture
def tools(workdir):
    return build_file_tools(workdir)


@pytest.fixture
def links(root, outside):
    os.symlink(outside / "passwd", root / "passwd-link")
    os.symlink(outside, root / "etc")
    os.symlink(outside / "passwd", root / "notes" / "deep-link")
    return root


# --- reads ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["passwd-link", "etc/passwd", "notes/deep-link"])
def test_reads_through_a_link_out_of_the_workdir_are_refused(workdir, links, path):
    with pytest.raises(StoreError, match="outside the workdir"):
        workdir.read_text(path)
    with pytest.raises(StoreError):
        workdir.size(path)
    assert workdir.exists(path) is False


@pytest.mark.parametrize("path", ["passwd-link", "etc/passwd", "notes/deep-link"])
def test_read_file_tool_refuses_a_link_out_of_the_workdir(tools, links, path, tmp_path):
    result = tools["read_file"].invoke({"path": path})
    assert result.startswith("Error:") and SECRET not in result
    assert str(tmp_path) not in result


def test_ls_refuses_a_linked_directory_out_of_the_workdir(tools, links):
    result = tools["ls"].invoke({"path": "etc"})
    assert result.startswith("Error:") and "passwd" not in result


def test_the_files_view_does_not_serve_a_link_out_of_the_workdir(
    client, user, agent, settings, outside, tmp_path
):
    from agent_platform.workdir import workdir_for
    from conversations.services import thread_create

    settings.WORKDIR_ROOT = tmp_path / "view-workdirs"
    thread = thread_create(user=user, agent_slug=agent.slug)
    workdir_for(thread).write_text("outputs/ok.txt", "fine")
    root = Path(workdir_for(thread).storage.location)
    os.symlink(outside / "passwd", root / "outputs" / "passwd")
    os.symlink(outside, root / "etc")
    client.force_login(user)
    assert client.get(f"/threads/{thread.thread_id}/files/outputs/ok.txt").status_code == 200
    for path in ("outputs/passwd", "etc/passwd"):
        response = client.get(f"/threads/{thread.thread_id}/files/{path}")
        assert response.status_code == 404 and SECRET.encode() not in response.content


def test_a_link_that_stays_inside_the_workdir_is_read(workdir, root):
    os.symlink(root / "notes" / "inside.md", root / "alias.md")
    assert workdir.read_text("alias.md") == "inside"


# --- writes --------------------------------------------------------------------------------------


def test_write_does_not_follow_a_linked_file(workdir, links, outside):
    with pytest.raises(StoreError, match="symbolic link"):
        workdir.write_text("passwd-link", "overwritten")
    assert (outside / "passwd").read_text() == SECRET


def test_write_does_not_follow_a_linked_directory(workdir, links, outside):
    with pytest.raises(StoreError, match="symbolic link"):
        workdir.write_text("etc/new.txt", "planted")
    assert not (outside / "new.txt").exists()


def test_write_and_edit_tools_do_not_follow_links(tools, links, outside):
    assert tools["write_file"].invoke({"path": "etc/planted.txt", "content": "x"}).startswith("Error:")
    assert tools["write_file"].invoke({"path": "passwd-link", "content": "x"}).startswith("Error:")
    edited = tools["edit_file"].invoke(
        {"path": "notes/deep-link", "old_string": "root", "new_string": "pwned"}
    )
    assert edited.startswith("Error:")
    assert sorted(p.name for p in outside.iterdir()) == ["passwd"]
    assert (outside / "passwd").read_text() == SECRET


def test_append_does_not_follow_a_link(workdir, links, outside):
    with pytest.raises(StoreError):
        workdir.append_text("notes/deep-link", "more")
    assert (outside / "passwd").read_text() == SECRET


def test_writes_replace_atomically_and_leave_no_temporary_files(workdir, root):
    workdir.write_text("notes/inside.md", "second version")
    workdir.write_text("deep/er/file.txt", "new dirs")
    assert workdir.read_text("notes/inside.md") == "second version"
    assert workdir.read_text("deep/er/file.txt") == "new dirs"
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["inside.md"]


def test_writing_over_a_directory_is_a_clear_error(workdir):
    with pytest.raises(StoreError, match="is a directory"):
        workdir.write_text("notes", "x")


# --- text that is not UTF-8 ----------------------------------------------------------------------


def test_a_lone_surrogate_in_write_file_content_is_a_tool_error(tools, workdir):
    result = tools["write_file"].invoke({"path": "notes/s.md", "content": "ok \udcff"})
    assert result.startswith("Error:") and "surrogate" in result
    assert not workdir.exists("notes/s.md")


def test_a_lone_surrogate_in_edit_file_is_a_tool_error(tools):
    result = tools["edit_file"].invoke(
        {"path": "notes/inside.md", "old_string": "inside", "new_string": "\ud800"}
    )
    assert result.startswith("Error:") and "surrogate" in result


def test_a_lone_surrogate_in_a_path_is_a_tool_error(tools):
    for name, args in (
        ("write_file", {"path": "a\ud800.md", "content": "x"}),
        ("read_file", {"path": "a\ud800"}),
    ):
        assert tools[name].invoke(args).startswith("Error:"), name


def test_search_history_reads_uploads_but_never_through_a_link_out_of_the_workdir(workdir, root, outside):
    from agent_platform.tools.history_search import build_search_history_tool

    workdir.write_text("uploads/0123456789ab-notes.txt", "the secret word is inside\n")
    os.symlink(outside / "passwd", root / "uploads" / "0123456789ab-passwd.txt")
    search = build_search_history_tool(workdir)
    assert search.invoke({"pattern": "secret"}).startswith("uploads/0123456789ab-notes.txt:L1: ")
    assert SECRET not in search.invoke({"pattern": "root:x"})
    (root / "uploads" / "0123456789ab-notes.txt").unlink()
    (root / "uploads" / "0123456789ab-passwd.txt").unlink()
    (root / "uploads").rmdir()
    os.symlink(outside, root / "uploads")  # the folder itself a link out: not searched
    assert SECRET not in search.invoke({"pattern": "root:x"})

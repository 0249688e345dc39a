import uuid

import pytest

from agent_platform.workdir import Workdir, WorkdirPathError, resolve, workdir_for
from compression.engine.store import StoreError

BAD_PATHS = [
    "../x",
    "a/../../x",
    "a/..",
    "/etc/passwd",
    "C:\\x",
    "C:x",
    "a\\b",
    "a\x00b",
    "a\nb",
    "",
    "~/x",
    "x" * 500,
]


@pytest.fixture
def workdir(settings, tmp_path):
    settings.WORKDIR_ROOT = tmp_path
    return Workdir(uuid.uuid4())


@pytest.mark.parametrize("path", BAD_PATHS)
def test_resolve_rejects_paths_outside_the_workdir_or_with_odd_bytes(path):
    with pytest.raises(WorkdirPathError):
        resolve(path)


@pytest.mark.parametrize(
    ("path", "expected"),
    [("./a/b.txt", "a/b.txt"), ("a//b/", "a/b"), (".", ""), ("outputs/x.txt", "outputs/x.txt")],
)
def test_resolve_normalizes_relative_paths(path, expected):
    assert resolve(path) == expected


def test_write_read_append_round_trip_is_byte_exact(workdir):
    text = "line 1\r\nzweite Zeile – 中文\n"
    workdir.write_text("outputs/large_tool_results/t.txt", text)
    assert workdir.exists("outputs/large_tool_results/t.txt")
    assert workdir.read_text("./outputs/large_tool_results/t.txt") == text
    workdir.append_text("outputs/large_tool_results/t.txt", "more")
    assert workdir.read_text("outputs/large_tool_results/t.txt") == text + "more"


def test_write_overwrites_instead_of_renaming(workdir):
    workdir.write_text("a.txt", "one")
    workdir.write_text("a.txt", "two")
    assert workdir.read_text("a.txt") == "two"
    assert workdir.list_dir(".") == ["a.txt"]


def test_files_live_under_the_thread_directory(workdir, tmp_path):
    workdir.write_text("notes/n.md", "x")
    assert (tmp_path / workdir.thread_id / "notes" / "n.md").read_text() == "x"


def test_list_dir_shows_directories_first_with_virtual_paths(workdir):
    assert workdir.list_dir(".") == []
    workdir.write_text("outputs/large_tool_results/b.txt", "b")
    workdir.write_text("top.txt", "t")
    assert workdir.list_dir(".") == ["outputs/", "top.txt"]
    assert workdir.list_dir("outputs/large_tool_results") == ["outputs/large_tool_results/b.txt"]


def test_edit_text_requires_a_unique_match_unless_replace_all(workdir):
    workdir.write_text("a.txt", "x y x")
    with pytest.raises(StoreError, match="2 times"):
        workdir.edit_text("a.txt", "x", "z")
    assert workdir.read_text("a.txt") == "x y x"
    assert workdir.edit_text("a.txt", "x", "z", replace_all=True) == 2
    assert workdir.read_text("a.txt") == "z y z"
    with pytest.raises(StoreError, match="not found"):
        workdir.edit_text("a.txt", "nope", "z")


def test_errors_name_only_the_virtual_path(workdir, tmp_path):
    workdir.write_text("dir/f.txt", "x")
    failures = []
    for action in (
        lambda: workdir.read_text("missing.txt"),
        lambda: workdir.read_text("dir"),
        lambda: workdir.list_dir("missing"),
        lambda: workdir.list_dir("dir/f.txt"),
        lambda: workdir.write_text("dir/f.txt/x", "y"),
        lambda: workdir.read_text("../secret"),
    ):
        with pytest.raises(StoreError) as caught:
            action()
        failures.append(str(caught.value))
    assert all(str(tmp_path) not in message for message in failures), failures


def test_reading_a_non_utf8_file_is_a_store_error(workdir, tmp_path):
    workdir.write_text("b.bin", "")
    (tmp_path / workdir.thread_id / "b.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(StoreError, match="UTF-8"):
        workdir.read_text("b.bin")


@pytest.mark.django_db
def test_workdir_for_uses_the_conversation_thread_id(settings, tmp_path, user, agent):
    from conversations.models import Conversation

    settings.WORKDIR_ROOT = tmp_path
    conversation = Conversation.objects.create(owner=user, agent=agent)
    workdir = workdir_for(conversation)
    assert workdir.thread_id == str(conversation.thread_id)
    workdir.write_text("x.txt", "x")
    assert workdir_for(conversation).read_text("x.txt") == "x"


def test_a_failed_replacement_leaves_the_previous_version_whole(workdir, monkeypatch):
    workdir.write_text("outputs/conversation_history/s.md", "section one\n")

    def refuse(source, target, **dir_fds):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("agent_platform.workdir.os.replace", refuse)
    with pytest.raises(StoreError):
        workdir.append_text("outputs/conversation_history/s.md", "section two\n")
    assert workdir.read_text("outputs/conversation_history/s.md") == "section one\n"
    assert workdir.list_dir("outputs/conversation_history") == ["outputs/conversation_history/s.md"]


def test_replacing_on_a_remote_style_storage_keeps_no_temporary_copy():
    from django.core.files.storage import InMemoryStorage

    remote = Workdir(uuid.uuid4(), storage=InMemoryStorage())
    remote.write_text("notes.md", "first")
    remote.append_text("notes.md", " second")
    assert remote.read_text("notes.md") == "first second"
    assert remote.list_dir(".") == ["notes.md"]

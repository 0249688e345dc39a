"""The workdir: path rules, and one suite of file guarantees run on local disk and on an S3 bucket
(the ``workdir_storage`` fixture: moto's S3 server on a loopback port)."""

import hashlib
import threading
import uuid

import pytest
from django.core.files.base import ContentFile

from agent_platform.workdir import Workdir, WorkdirPathError, resolve, workdir_for
from context_engine.errors import StoreError

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
def workdir(workdir_storage):
    return Workdir(uuid.uuid4())


@pytest.fixture
def local_workdir(settings, tmp_path):
    settings.WORKDIR_STORAGE = "local"
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


def test_files_live_under_the_thread_directory_or_prefix(workdir, workdir_storage, settings, s3_server):
    workdir.write_text("notes/n.md", "x")
    if workdir_storage == "local":
        assert (settings.WORKDIR_ROOT / workdir.thread_id / "notes" / "n.md").read_text() == "x"
    else:
        key = f"{settings.WORKDIR_S3_PREFIX}/{workdir.thread_id}/notes/n.md"
        assert s3_server.keys(settings.WORKDIR_S3_PREFIX) == [key]
        assert s3_server.get(key)["Body"].read() == b"x"


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


def test_errors_name_only_the_virtual_path(workdir, tmp_path, settings):
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
    hidden = [str(tmp_path), workdir.thread_id, settings.WORKDIR_S3_ENDPOINT_URL or str(tmp_path)]
    assert not [message for message in failures if any(h in message for h in hidden)], failures


def test_reading_a_non_utf8_file_is_a_store_error(workdir):
    workdir.storage.save("b.bin", ContentFile(b"\xff\xfe\x00"))
    with pytest.raises(StoreError, match="UTF-8"):
        workdir.read_text("b.bin")


@pytest.mark.django_db
def test_workdir_for_uses_the_conversation_thread_id(workdir_storage, user, agent):
    from conversations.models import Conversation

    conversation = Conversation.objects.create(owner=user, agent=agent)
    workdir = workdir_for(conversation)
    assert workdir.thread_id == str(conversation.thread_id)
    workdir.write_text("x.txt", "x")
    assert workdir_for(conversation).read_text("x.txt") == "x"


def test_a_failed_replacement_leaves_the_previous_version_whole(local_workdir, monkeypatch):
    workdir = local_workdir
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


# --- the same answers on both storages (a bucket has keys, not directories) -------------------------


def test_a_path_is_a_file_or_a_directory_never_both(workdir):
    workdir.write_text("dir/f.txt", "x")
    assert workdir.exists("dir") and workdir.exists("dir/f.txt") and not workdir.exists("di")
    with pytest.raises(StoreError, match="dir is a directory"):
        workdir.read_text("dir")
    with pytest.raises(StoreError, match="dir is a directory"):
        workdir.write_text("dir", "a file over a directory")
    with pytest.raises(StoreError, match="^Could not write dir/f.txt/x: "):
        workdir.write_text("dir/f.txt/x", "a file under a file")
    with pytest.raises(StoreError, match="dir/f.txt is a file, not a directory"):
        workdir.list_dir("dir/f.txt")
    with pytest.raises(StoreError, match="Directory not found: nothing"):
        workdir.list_dir("nothing")
    assert workdir.list_dir(".") == ["dir/"]
    assert workdir.read_text("dir/f.txt") == "x"


def test_a_reader_sees_the_old_or_the_new_version_whole_never_a_part(workdir):
    versions = [(letter * 400_000) for letter in "ab"]
    path = "outputs/conversation_history/s.md"
    workdir.write_text(path, versions[0])
    done = threading.Event()
    seen: list[str] = []

    def write_back_and_forth():
        for i in range(12):
            workdir.write_text(path, versions[(i + 1) % 2])
        done.set()

    writer = threading.Thread(target=write_back_and_forth)
    writer.start()
    while not done.is_set():
        text = workdir.read_text(path)
        seen.append("whole" if text in versions else f"partial ({len(text)} chars)")
    writer.join()
    assert seen and set(seen) == {"whole"}, seen
    assert workdir.list_dir("outputs/conversation_history") == [path]  # no temporary copy left


def test_compaction_writes_a_saved_result_once_per_content(workdir, monkeypatch):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from context_engine.compaction.tool_results import clear_caches, compact_messages
    from context_engine.config import CompressionConfig

    big = "BEGIN " + "\n".join(f"row {i}: {'data ' * 8}" for i in range(400)) + " END"
    messages = [
        HumanMessage("run it", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": "shell", "args": {}, "id": "c1"}]),
        ToolMessage(big, id="t1", tool_call_id="c1", name="shell"),
    ]
    config = CompressionConfig(trigger_tokens=4096, keep_messages=4, tool_result_token_limit=50)
    writes: list[str] = []
    write_text = Workdir.write_text

    def counted_write(self, path, content):
        writes.append(path)
        write_text(self, path, content)

    monkeypatch.setattr(Workdir, "write_text", counted_write)

    first = compact_messages(messages, config=config, store=workdir)
    clear_caches()  # as in another process: only the file's existence can tell it is already saved
    other_process = Workdir(workdir.thread_id)
    second = compact_messages(messages, config=config, store=other_process)

    digest = hashlib.sha256(big.encode()).hexdigest()
    path = f"outputs/large_tool_results/shell-{digest[:16]}.txt"
    assert [s.path for s in first.saved] == [path] and [s.written for s in first.saved + second.saved] == [
        True,
        False,
    ]
    assert writes == [path]
    assert hashlib.sha256(workdir.read_text(path).encode()).hexdigest() == digest


def test_deleting_all_removes_the_threads_files_and_no_other_threads(workdir, workdir_storage):
    neighbour = Workdir(workdir.thread_id + "0")  # shares the thread id as a name prefix
    neighbour.write_text("keep.txt", "k")
    for path in ("a.txt", "outputs/large_tool_results/x.txt", "outputs/conversation_history/s.md"):
        workdir.write_text(path, "x")
    assert workdir.delete_all() == 3
    assert workdir.list_dir(".") == [] and not workdir.exists("a.txt")
    assert neighbour.read_text("keep.txt") == "k"


@pytest.mark.django_db(transaction=True)
def test_deleting_a_thread_row_removes_its_workdir_after_commit(workdir_storage, user, agent):
    from conversations.models import Conversation

    conversation = Conversation.objects.create(owner=user, agent=agent)
    workdir_for(conversation).write_text("outputs/large_tool_results/x.txt", "x")
    conversation.delete()
    assert workdir_for(conversation).list_dir(".") == []


def test_a_storage_that_cannot_be_reached_is_a_store_error(settings, s3_workdirs, monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore's own setting: fail fast, no retries
    settings.WORKDIR_S3_ENDPOINT_URL = "http://127.0.0.1:9"  # the discard port: nothing answers
    workdir = Workdir(uuid.uuid4())
    with pytest.raises(StoreError, match="^Could not write a.txt: the object storage is unreachable$"):
        workdir.write_text("a.txt", "x")
    with pytest.raises(StoreError, match="^Could not read a.txt: the object storage is unreachable$"):
        workdir.read_text("a.txt")

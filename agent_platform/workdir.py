"""One thread's workdir, reached through Django's storage API, behind virtual relative paths.

The model (and the compression engine) only ever sees paths like ``outputs/large_tool_results/x.txt``.
Every path is validated here against the workdir boundary (``resolve``, for any storage), and no host
path appears in a result or an error message. On local disk, symbolic links are the other way out:
reads resolve the real path and refuse one outside the workdir, and writes never follow a link.
Local disk and object storage (``agent_platform.workdir_storage``) give the same answers: a bucket has
no directories, so the checks below supply what a filesystem would refuse.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError
from django.core.exceptions import SuspiciousOperation
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage

from agent_platform.threads import AgentThread
from agent_platform.workdir_storage import (
    STORAGE_ERRORS,
    is_object_storage,
    storage_delete_all,
    storage_stream,
    thread_storage,
)
from context_engine.errors import StoreError

MAX_PATH_LENGTH = 400
MAX_SEGMENT_LENGTH = 200
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE_PREFIX = re.compile(r"^[A-Za-z]:")


class WorkdirPathError(StoreError):
    """A path outside the workdir boundary or with bytes we do not accept."""


class WorkdirFileNotFound(StoreError):
    """No file at the path (a directory there is a plain ``StoreError``)."""


def resolve(path: str) -> str:
    """The normalized virtual path for ``path`` (``""`` is the workdir root), or ``WorkdirPathError``.

    Rejected: non-strings, empty paths, absolute paths (``/x``, ``C:\\x``, ``C:x``), backslashes, NUL and
    other control characters, ``..`` segments, and over-long paths or segments. ``.`` segments,
    repeated slashes and a trailing slash are dropped, so ``./a//b/`` is ``a/b`` and ``.`` is the root.
    """
    if not isinstance(path, str):
        raise WorkdirPathError("The path must be a string.")
    if problem := _whole_path_error(path):
        raise WorkdirPathError(problem)
    return "/".join(_kept_segments(path))


def _whole_path_error(path: str) -> str | None:
    """What is wrong with the path as a whole, before its segments are read; None when nothing is."""
    if path == "":
        return "The path is empty. Use '.' for the workdir root."
    if len(path) > MAX_PATH_LENGTH:
        return f"The path is longer than {MAX_PATH_LENGTH} characters."
    if _CONTROL_CHARS.search(path):
        return "The path contains a NUL or control character."
    if not _is_utf8(path):
        return "The path is not valid text (it holds a lone surrogate)."
    if "\\" in path:
        return "The path contains a backslash; use '/' between directories."
    if path.startswith("/") or path.startswith("~") or _DRIVE_PREFIX.match(path):
        return "Absolute paths are not allowed: use a path relative to the workdir, e.g. outputs/notes.md."
    return None


def _kept_segments(path: str) -> list[str]:
    """The path's segments without ``.`` and empty ones; ``WorkdirPathError`` on ``..`` or a long one."""
    segments = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            raise WorkdirPathError("'..' is not allowed: paths must stay inside the workdir.")
        if len(segment) > MAX_SEGMENT_LENGTH:
            raise WorkdirPathError(f"A path segment is longer than {MAX_SEGMENT_LENGTH} characters.")
        segments.append(segment)
    return segments


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _file_path(path: str) -> str:
    name = resolve(path)
    if not name:
        raise WorkdirPathError("The workdir root is a directory, not a file.")
    return name


class Workdir:
    """The files of one thread. Implements ``context_engine.store.ResultStore``.

    Errors are ``StoreError`` (``WorkdirPathError`` for a rejected path) whose message names only the
    virtual path. Sub-agents share their parent's ``Workdir``.
    """

    def __init__(self, thread_id: object, *, storage: Storage | None = None) -> None:
        self.thread_id = str(thread_id)
        self.storage = storage if storage is not None else thread_storage(self.thread_id)
        self._object_storage = is_object_storage(self.storage)
        self._real_root_of: tuple[Path, str] | None = None

    def __repr__(self) -> str:
        return f"<Workdir thread={self.thread_id}>"

    def exists(self, path: str) -> bool:
        name = resolve(path)
        if not name:
            return True
        try:
            self._check_local_real_path(name)
            return self.storage.exists(name) or (self._object_storage and self._is_prefix(name))
        except (*STORAGE_ERRORS, WorkdirPathError):
            return False

    def read_text(self, path: str) -> str:
        name = _file_path(path)
        data = self.read_bytes(name)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StoreError(f"{name} is not a UTF-8 text file.") from exc

    def read_bytes(self, path: str) -> bytes:
        name = _file_path(path)
        self._check_local_real_path(name)
        try:
            with self.storage.open(name, "rb") as handle:
                return handle.read()
        except FileNotFoundError as exc:
            if self._object_storage and self._is_prefix(name):
                raise StoreError(f"{name} is a directory; use ls to list it.") from exc
            raise WorkdirFileNotFound(f"File not found: {name}") from exc
        except IsADirectoryError as exc:
            raise StoreError(f"{name} is a directory; use ls to list it.") from exc
        except STORAGE_ERRORS as exc:
            raise StoreError(f"Could not read {name}: {_reason(exc)}") from exc

    def write_text(self, path: str, content: str) -> None:
        name = _file_path(path)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise StoreError(
                f"Could not write {name}: the content is not valid text (a lone surrogate, "
                f"U+{ord(exc.object[exc.start]):04X}, at character {exc.start})."
            ) from exc
        self.write_bytes(name, data)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path``, replacing any earlier version so that a reader sees the old or
        the new version whole, never a part: an atomic rename on local disk; one PUT on object storage
        (an object becomes visible only once its upload is complete); elsewhere a temporary copy is
        saved first and only removed once the new version is in place."""
        name = _file_path(path)
        try:
            root = self._local_root()
            if root is not None:
                _replace_local_nofollow(root, name, data)
                return
            if self._object_storage:
                self._refuse_what_a_filesystem_would(name)
                saved = self.storage.save(name, ContentFile(data))  # overwrites in place
            else:
                # Other storages never overwrite on save() (they pick a new name): the new version is
                # saved aside first, so a failure between delete and save loses nothing written so far.
                backup = None
                if self.storage.exists(name):
                    backup = self.storage.save(f"{name}.{uuid.uuid4().hex}.tmp", ContentFile(data))
                    self.storage.delete(name)
                saved = self.storage.save(name, ContentFile(data))
                if backup is not None:
                    self.storage.delete(backup)
        except IsADirectoryError as exc:
            raise StoreError(f"{name} is a directory.") from exc
        except STORAGE_ERRORS as exc:
            raise StoreError(f"Could not write {name}: {_reason(exc)}") from exc
        if saved != name:
            self.storage.delete(saved)
            raise StoreError(f"Could not write {name}: the storage chose another name.")

    def _refuse_what_a_filesystem_would(self, name: str) -> None:
        """A key where a directory is, or under a key that is a file, would be two truths for one path."""
        if self._is_prefix(name):
            raise IsADirectoryError(name)
        parts = name.split("/")
        for depth in range(1, len(parts)):
            if self.storage.exists("/".join(parts[:depth])):
                raise NotADirectoryError(20, "Not a directory")

    def _is_prefix(self, name: str) -> bool:
        """On object storage: whether ``name`` is a "directory" (some key starts with ``name/``)."""
        dirs, files = self.storage.listdir(name)
        return bool(dirs or files)

    def _local_root(self) -> Path | None:
        """The workdir's host directory when the storage is a local filesystem (never shown to anyone)."""
        if isinstance(self.storage, FileSystemStorage):
            return Path(self.storage.location)
        return None

    def _real_root(self, root: Path) -> str:
        """The root's real path, resolved once per instance: the operator's directory, not one a tool can
        change (a compression checks a hundred saved files against it)."""
        if self._real_root_of is None or self._real_root_of[0] != root:
            self._real_root_of = (root, os.path.realpath(root))
        return self._real_root_of[1]

    def _check_local_real_path(self, name: str) -> None:
        """On local disk, refuse ``name`` when its real path (symbolic links resolved) leaves the workdir.
        Other storages have no links: ``resolve`` is their boundary."""
        root = self._local_root()
        if root is None:
            return
        real_root = self._real_root(root)
        real = os.path.realpath(root / name)
        if real != real_root and not real.startswith(real_root + os.sep):
            raise WorkdirPathError(f"{name or '.'} leads outside the workdir (through a symbolic link).")

    def append_text(self, path: str, content: str) -> None:
        name = _file_path(path)
        try:
            existing = self.read_text(name)
        except WorkdirFileNotFound:
            existing = ""  # only a confirmed absence starts a new file; any other error stops here
        self.write_text(name, existing + content)

    def edit_text(self, path: str, old: str, new: str, *, replace_all: bool = False) -> int:
        """Replace ``old`` by ``new`` and return how many occurrences changed.

        ``old`` must occur exactly once unless ``replace_all``; otherwise nothing is written.
        """
        name = _file_path(path)
        if old == "":
            raise StoreError("old_string is empty: give the exact text to replace.")
        text = self.read_text(name)
        count = text.count(old)
        if count == 0:
            raise StoreError(f"old_string was not found in {name}.")
        if count > 1 and not replace_all:
            raise StoreError(
                f"old_string occurs {count} times in {name}: give more context to make it unique, "
                "or set replace_all."
            )
        self.write_text(name, text.replace(old, new) if replace_all else text.replace(old, new, 1))
        return count if replace_all else 1

    def list_dir(self, path: str = ".") -> list[str]:
        """Entries of a directory as virtual paths, directories first and ending in ``/``."""
        name = resolve(path)
        self._check_local_real_path(name)
        try:
            dirs, files = self.storage.listdir(name)
            if self._object_storage and name and not dirs and not files:
                # A bucket lists a file or a missing prefix as empty; a filesystem refuses both.
                if self.storage.exists(name):
                    raise NotADirectoryError(name)
                raise FileNotFoundError(name)
        except FileNotFoundError as exc:
            if not name:
                return []  # a thread that has not written anything yet
            raise StoreError(f"Directory not found: {name}") from exc
        except NotADirectoryError as exc:
            raise StoreError(f"{name} is a file, not a directory; use read_file.") from exc
        except STORAGE_ERRORS as exc:
            raise StoreError(f"Could not list {name or '.'}: {_reason(exc)}") from exc
        prefix = f"{name}/" if name else ""
        return [f"{prefix}{d}/" for d in sorted(dirs)] + [f"{prefix}{f}" for f in sorted(files)]

    def size(self, path: str) -> int:
        name = _file_path(path)
        self._check_local_real_path(name)
        try:
            return self.storage.size(name)
        except STORAGE_ERRORS as exc:
            raise StoreError(f"Could not stat {name}: {_reason(exc)}") from exc

    def open_stream(self, path: str) -> tuple[Iterator[bytes], int]:
        """The file's bytes as chunks and its size, for serving without holding it in memory."""
        name = _file_path(path)
        self._check_local_real_path(name)
        try:
            return storage_stream(self.storage, name)
        except FileNotFoundError as exc:
            raise WorkdirFileNotFound(f"File not found: {name}") from exc
        except IsADirectoryError as exc:
            raise StoreError(f"{name} is a directory.") from exc
        except STORAGE_ERRORS as exc:
            raise StoreError(f"Could not read {name}: {_reason(exc)}") from exc

    def delete_all(self) -> int:
        """Remove every file of the thread's workdir; returns how many were removed."""
        return storage_delete_all(self.storage)


def _reason(exc: BaseException) -> str:
    # OSError's str() carries the host path; strerror does not.
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, SuspiciousOperation):
        return "the path is outside the workdir"
    if isinstance(exc, ClientError):  # the server's error code (AccessDenied, NoSuchBucket, ...)
        return exc.response.get("Error", {}).get("Code") or "the object storage refused"
    if isinstance(exc, BotoCoreError):
        return "the object storage is unreachable"
    return type(exc).__name__


def workdir_for(conversation: AgentThread) -> Workdir:
    """The workdir of a conversation's thread (sub-agents reuse their parent's)."""
    return Workdir(conversation.thread_id)


_DIRECTORY_NOFOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _replace_local_nofollow(root: Path, name: str, data: bytes) -> None:
    """Write ``data`` at ``root/name`` through a temporary file renamed over it (atomic), never through
    a symbolic link: each directory is opened relative to its parent with ``O_NOFOLLOW``, so a link
    placed in the workdir (or swapped in meanwhile) cannot send the write elsewhere."""
    root.mkdir(parents=True, exist_ok=True)
    *directories, filename = name.split("/")
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # the root itself is the operator's choice
    try:
        for part in directories:
            _refuse_link(part, directory, name)
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=directory)
            child = os.open(part, _DIRECTORY_NOFOLLOW, dir_fd=directory)
            os.close(directory)
            directory = child
        if _refuse_link(filename, directory, name) == "directory":
            raise IsADirectoryError(name)
        temporary = f".{filename[:100]}.{uuid.uuid4().hex}.tmp"
        handle = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=directory
        )
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, filename, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)
            raise
    finally:
        os.close(directory)


def _refuse_link(part: str, directory: int, name: str) -> str | None:
    """``"directory"``, ``"file"`` or None (missing) for ``part`` in ``directory``; a link is refused."""
    try:
        mode = os.stat(part, dir_fd=directory, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        raise WorkdirPathError(f"Could not write {name}: {part} is a symbolic link, which is not followed.")
    return "directory" if stat.S_ISDIR(mode) else "file"

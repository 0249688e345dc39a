"""Where replaced content goes: the protocol the engine writes through, and an in-memory store for tests.

The engine only knows virtual relative paths (``outputs/large_tool_results/...``). The Django-storage
implementation, with the workdir boundary checks, lives in ``agent_platform.workdir``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Protocol

from context_engine.errors import StoreError

FLUSH_THREADS = 8


class ResultStore(Protocol):
    def exists(self, path: str) -> bool: ...

    def read_text(self, path: str) -> str: ...

    def write_text(self, path: str, content: str) -> None:
        """Write ``content`` at ``path``; raise ``StoreError`` on failure."""

    def append_text(self, path: str, content: str) -> None:
        """Append ``content`` to ``path`` (creating it); raise ``StoreError`` on failure."""

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write binary ``data`` at ``path`` (saved media); raise ``StoreError`` on failure."""


class MemoryStore:
    """A dict-backed store for tests and benchmarks."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.blobs: dict[str, bytes] = {}
        self.writes = 0

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.blobs

    def read_text(self, path: str) -> str:
        try:
            return self.files[path]
        except KeyError as exc:
            raise StoreError(f"No such file: {path}") from exc

    def write_text(self, path: str, content: str) -> None:
        self.writes += 1
        self.files[path] = content

    def append_text(self, path: str, content: str) -> None:
        self.writes += 1
        self.files[path] = self.files.get(path, "") + content

    def write_bytes(self, path: str, data: bytes) -> None:
        self.writes += 1
        self.blobs[path] = bytes(data)


class StagedStore:
    """Writes held back until ``flush()``: lets a caller decide, after compaction, whether anything
    should be written at all (a manual compression that ends as ``no_op`` writes nothing)."""

    def __init__(self, target: ResultStore) -> None:
        self.target = target
        self.staged: dict[str, str] = {}
        self.staged_bytes: dict[str, bytes] = {}

    def exists(self, path: str) -> bool:
        return path in self.staged or path in self.staged_bytes or self.target.exists(path)

    def read_text(self, path: str) -> str:
        if path in self.staged:
            return self.staged[path]
        return self.target.read_text(path)

    def write_text(self, path: str, content: str) -> None:
        self.staged[path] = content

    def append_text(self, path: str, content: str) -> None:
        base = self.staged.get(path)
        if base is None:
            base = self.target.read_text(path) if self.target.exists(path) else ""
        self.staged[path] = base + content

    def write_bytes(self, path: str, data: bytes) -> None:
        self.staged_bytes[path] = bytes(data)

    def flush(self) -> list[str]:
        """Write every staged file to the target; returns the paths written. The files are distinct, so
        they are written concurrently (file-system or object-store round trips overlap); the first
        failure is raised once all writes have ended."""
        writes = [
            *(
                (path, partial(self.target.write_bytes, path, data))
                for path, data in self.staged_bytes.items()
            ),
            *((path, partial(self.target.write_text, path, text)) for path, text in self.staged.items()),
        ]
        if len(writes) > 1:
            with ThreadPoolExecutor(max_workers=min(FLUSH_THREADS, len(writes))) as pool:
                for future in [pool.submit(write) for _, write in writes]:
                    future.result()
        elif writes:
            writes[0][1]()
        self.staged_bytes.clear()
        self.staged.clear()
        return [path for path, _ in writes]

"""The one small thread-safe LRU of the code base (estimates, receipts, warm-call memos, state graphs)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic

from typing_extensions import TypeVar

# Defaults of Any: an ``LRU(n)`` without type arguments still type-checks (and holds anything).
K = TypeVar("K", bound=Hashable, default=Any)
V = TypeVar("V", default=Any)


class LRU(Generic[K, V]):
    """Cached values are shared between callers: never mutate one. ``None`` means "not cached"."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            try:
                value = self._data[key]
            except KeyError:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

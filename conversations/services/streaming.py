"""The reply a run is streaming: its text so far, and its pieces sent to the thread's pages at most
every ``TOKEN_FLUSH_SECONDS`` (a coalesced ``run.token`` event, not one per token).

The first piece of a reply goes out at once; later ones wait for the interval, and a timer sends what
a pausing model left unsent, so a page never lags the model by more than the interval.
"""

from __future__ import annotations

import threading
import time

from conversations import events, run_signals

# A page sees the reply grow 20 times a second: smooth to read, and a few events a reply, not hundreds.
TOKEN_FLUSH_SECONDS = 0.05


class ReplyStream:
    def __init__(self, *, run_id: int, thread_id: object) -> None:
        self.run_id, self.thread_id = run_id, thread_id
        self.text = ""  # the reply streamed so far by the current model call
        self.sent = 0  # how much of it the pages were sent
        self.flushed_at = 0.0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def add(self, piece: str) -> None:
        with self._lock:
            self.text += piece
            wait = TOKEN_FLUSH_SECONDS - (time.monotonic() - self.flushed_at)
            if wait <= 0:
                self._flush()
            elif self._timer is None:
                self._timer = threading.Timer(wait, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Send what the pages have not seen yet. Buffered before it is sent: a page that loads now
        shows it, and one that saw the event can tell by the offset whether it missed a piece."""
        with self._lock:
            self._flush()

    def reset(self) -> None:
        """The reply is complete (its message is recorded): the next model call streams afresh."""
        with self._lock:
            self._flush()
            self.text, self.sent, self.flushed_at = "", 0, 0.0
            run_signals.stream_set(run_id=self.run_id, text="")

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.flushed_at = time.monotonic()
        if self.sent == len(self.text):
            return
        offset, piece, self.sent = self.sent, self.text[self.sent :], len(self.text)
        run_signals.stream_set(run_id=self.run_id, text=self.text)
        events.broadcast(self.thread_id, events.RUN_TOKEN, run_id=self.run_id, text=piece, offset=offset)

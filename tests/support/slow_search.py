"""A Tavily-compatible search provider that answers slowly: a tool that waits, for kill and Stop tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class SlowSearch:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.requests = 0
        self.received = threading.Event()
        search = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                search.requests += 1
                search.received.set()
                time.sleep(search.delay)
                body = json.dumps({"results": [{"title": "t", "url": "https://example.org", "content": "c"}]})
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body.encode())
                except OSError:  # the client went away (killed, or stopped)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@contextmanager
def slow_search(delay: float) -> Iterator[SlowSearch]:
    search = SlowSearch(delay)
    thread = threading.Thread(target=search.server.serve_forever, name="slow-search", daemon=True)
    thread.start()
    try:
        yield search
    finally:
        search.server.shutdown()
        search.server.server_close()

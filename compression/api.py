"""Thread-maintenance API: /api/threads/{thread_id}/compress ..."""

from __future__ import annotations

from ninja import Router

router = Router(tags=["compression"])

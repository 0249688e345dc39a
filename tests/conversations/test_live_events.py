"""Live events: streamed tokens are coalesced (a few events a reply, in order, nothing lost), and on
Redis every event of a process goes out over one long-lived connection pool, not a connection each."""

from __future__ import annotations

import asyncio
import time

import pytest

from conversations import events, run_signals
from conversations.services.streaming import TOKEN_FLUSH_SECONDS, ReplyStream

pytestmark = pytest.mark.services


def test_a_fast_reply_is_sent_in_a_few_coalesced_pieces_with_contiguous_offsets(monkeypatch):
    sent: list[dict] = []
    monkeypatch.setattr(events, "_send", lambda thread_id, event: sent.append(event))
    stream = ReplyStream(run_id=1, thread_id="t")
    words = [f"w{n} " for n in range(400)]
    for word in words:
        stream.add(word)
    stream.reset()  # the reply's message is recorded: the rest goes out before it
    text = "".join(words)
    pieces = [e for e in sent if e["type"] == "run.token"]
    assert "".join(p["text"] for p in pieces) == text
    assert [p["offset"] for p in pieces] == [
        sum(len(q["text"]) for q in pieces[:i]) for i in range(len(pieces))
    ]
    assert pieces[0]["text"] == "w0 "  # the first piece at once
    assert len(pieces) < 40  # not one event per token
    assert run_signals.stream_text(run_id=1) == ""


def test_what_a_pausing_model_left_unsent_goes_out_within_the_interval(monkeypatch):
    sent: list[dict] = []
    monkeypatch.setattr(events, "_send", lambda thread_id, event: sent.append(event))
    stream = ReplyStream(run_id=2, thread_id="t")
    stream.add("one ")
    stream.add("two ")  # within the interval: held back
    assert [e["text"] for e in sent] == ["one "]
    time.sleep(TOKEN_FLUSH_SECONDS * 4)  # the model pauses
    assert [e["text"] for e in sent] == ["one ", "two "]
    assert run_signals.stream_text(run_id=2) == "one two "


@pytest.mark.redis
def test_events_on_redis_reuse_one_connection_pool_per_process(settings, monkeypatch):
    import os

    from channels.layers import channel_layers, get_channel_layer
    from redis.asyncio.connection import AbstractConnection

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ["REDIS_URL"]], "prefix": "test-live-events"},
        }
    }
    channel_layers.backends.pop("default", None)
    opened: list[int] = []
    connect = AbstractConnection.connect

    async def counting_connect(self):
        if self._reader is None:
            opened.append(1)
        return await connect(self)

    monkeypatch.setattr(AbstractConnection, "connect", counting_connect)
    layer = get_channel_layer()
    try:
        received = asyncio.run(_publish_and_receive(layer, count=100))
    finally:
        channel_layers.backends.pop("default", None)
    assert [e["n"] for e in received] == list(range(100))  # every event, in order
    # The receiver's own connection, plus the publisher's pool: not one per event.
    assert len(opened) <= 4, f"{len(opened)} connections opened for 100 events"


async def _publish_and_receive(layer, *, count: int) -> list[dict]:
    channel = await layer.new_channel()
    await layer.group_add(events.thread_group("live"), channel)
    for n in range(count):
        await asyncio.to_thread(events.broadcast_now, "live", events.STATE, n=n)
    received = []
    for _ in range(count):
        message = await asyncio.wait_for(layer.receive(channel), timeout=10)
        received.append(message["event"])
    return received

"""The sync driver's ``stop``: asked before each effect and while a summary call is in flight; once it
says so, the generator is closed (nothing after the stop runs) and ``Stopped`` raised."""

from __future__ import annotations

import threading
import time

import pytest

from context_engine.errors import Stopped
from context_engine.steps import Blocking, Summarize, run_sync
from tests.context_engine.fakes import ScriptedChatModel


def _steps(after: list[str]):
    try:
        first = yield Blocking(lambda: "saved")
        summary = yield Summarize("summarize this")
        after.append(f"{first}:{summary.content[:5]}")
        return "applied"
    finally:
        after.append("closed")


def test_without_a_stop_the_steps_run_to_their_result():
    after: list[str] = []
    result = run_sync(_steps(after), handler=lambda r: r, summary_model=ScriptedChatModel(summaries=["## X"]))
    assert result == "applied" and after[0].startswith("saved:")


def test_a_stop_before_an_effect_closes_the_generator_without_running_it():
    after: list[str] = []
    ran = []
    with pytest.raises(Stopped):
        run_sync(
            _steps(after),
            handler=lambda r: r,
            summary_model=ScriptedChatModel(),
            stop=lambda: not ran.append(1),
        )
    assert after == ["closed"]


def test_a_stop_during_the_summary_call_abandons_it():
    gate, asked = threading.Event(), threading.Event()
    model = ScriptedChatModel(summaries=["## late"])
    original = model._generate

    def generate(messages, stop=None, run_manager=None, **kwargs):
        asked.set()
        gate.wait(10)
        return original(messages, stop=stop, run_manager=run_manager, **kwargs)

    object.__setattr__(model, "_generate", generate)
    after: list[str] = []
    began = time.monotonic()
    with pytest.raises(Stopped):
        run_sync(_steps(after), handler=lambda r: r, summary_model=model, stop=asked.is_set)
    assert time.monotonic() - began < 5  # not the 10 s the call would take
    assert after == ["closed"]  # nothing after the summary ran
    gate.set()


def test_a_summary_error_still_reaches_the_steps_with_a_stop():
    after: list[str] = []
    model = ScriptedChatModel(summaries=[RuntimeError("model down")])
    with pytest.raises(RuntimeError, match="model down"):
        run_sync(_steps(after), handler=lambda r: r, summary_model=model, stop=lambda: False)
    assert after == ["closed"]


def test_an_effect_that_fails_once_stop_says_so_is_a_stop_never_a_failure_the_steps_answer():
    """A streaming call its callbacks ended (the run's Stop) raises some exception: the steps must not
    see it, or they would answer it with a fallback request."""
    seen: list[str] = []

    def steps():
        try:
            yield Blocking(lambda: "first")
            try:
                yield Summarize("summarize this")
            except Exception as exc:  # a step that falls back on a failed summary
                seen.append(type(exc).__name__)
                yield Blocking(lambda: "fallback request")
        finally:
            seen.append("closed")

    pressed: list[bool] = []

    class Cancelled(Exception):
        pass

    def summarize_then_stop(*args, **kwargs):
        pressed.append(True)
        raise Cancelled()

    model = ScriptedChatModel(summaries=["## X"])
    object.__setattr__(model, "_generate", summarize_then_stop)
    with pytest.raises(Stopped):
        run_sync(steps(), handler=lambda r: r, summary_model=model, stop=lambda: bool(pressed))
    assert seen == ["closed"]


def test_the_async_driver_cancels_a_summary_call_once_stop_says_so():
    import asyncio

    from context_engine.steps import run_async

    model = ScriptedChatModel(summaries=["## late"])
    asked, cancelled = [], []

    async def agenerate(messages, stop=None, run_manager=None, **kwargs):
        asked.append(True)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    object.__setattr__(model, "_agenerate", agenerate)
    after: list[str] = []

    async def handler(request):
        return request

    began = time.monotonic()
    with pytest.raises(Stopped):
        asyncio.run(run_async(_steps(after), handler=handler, summary_model=model, stop=lambda: bool(asked)))
    assert time.monotonic() - began < 5 and cancelled == [True]  # the call itself was cancelled
    assert after == ["closed"]

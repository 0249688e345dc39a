"""The one core, two drivers: a middleware's logic is a generator that yields effects (call the model,
call the summarizer, do blocking file work) and receives their results; the sync and async twins only
differ in how they perform those effects.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar, cast

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.internal_call_transformer import internal_call_metadata
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM

from context_engine.errors import Stopped
from context_engine.formats import SUMMARY_MARKER_KEY, SUMMARY_MARKER_VALUE

R = TypeVar("R")


@dataclass(frozen=True)
class CallModel:
    request: ModelRequest


@dataclass(frozen=True)
class Summarize:
    prompt: str


@dataclass(frozen=True)
class Blocking:
    """File work (the result store); run in a worker thread on the async path."""

    fn: Callable[[], Any]


Effect = CallModel | Summarize | Blocking
Steps = Generator[Effect, Any, R]


def summary_call_config() -> RunnableConfig:
    """Tagged so the summary never reaches ``stream_mode="messages"`` (nor run.messages)."""
    return {
        "tags": [TAG_NOSTREAM],
        "metadata": {SUMMARY_MARKER_KEY: SUMMARY_MARKER_VALUE, **internal_call_metadata()},
    }


STOP_POLL_SECONDS = 0.25


def run_sync(
    steps: Steps[R],
    *,
    handler: Callable[[ModelRequest], ModelResponse],
    summary_model: BaseChatModel | None = None,
    stop: Callable[[], bool] | None = None,
) -> R:
    """Drive ``steps`` to their result. With ``stop``, asked before each effect and every
    ``STOP_POLL_SECONDS`` during a summary call: once it answers True the generator is closed and
    ``Stopped`` raised (an in-flight summary call is abandoned, its answer dropped). An effect that
    fails once ``stop`` says so (a streaming call its callbacks ended) is a stop too, never a failure
    the steps would answer with another model call."""
    value: object  # an effect's result, sent into the steps
    try:
        effect = next(steps)
        while True:
            if stop is not None and stop():
                _close_stopped(steps)
            try:
                value = _perform(effect, handler=handler, summary_model=summary_model, stop=stop)
            except Stopped:
                _close_stopped(steps)
            except Exception as exc:
                if stop is not None and stop():
                    _close_stopped(steps, exc)
                effect = steps.throw(exc)
            else:
                effect = steps.send(value)
    except StopIteration as stop:
        # What the steps returned: a Steps[R] generator returns an R, which StopIteration carries untyped.
        return cast(R, stop.value)


async def run_async(
    steps: Steps[R],
    *,
    handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    summary_model: BaseChatModel | None = None,
    stop: Callable[[], bool] | None = None,
) -> R:
    """``run_sync``'s twin; ``stop`` is asked in a worker thread (it may query a database), and a
    summary call it stops is cancelled. A cancelled task closes the steps too."""

    async def stopped() -> bool:
        return stop is not None and await asyncio.to_thread(stop)

    watch = stopped if stop is not None else None  # a summary call is watched only when it can be stopped
    value: object  # an effect's result, sent into the steps
    try:
        effect = next(steps)
        while True:
            if await stopped():
                _close_stopped(steps)
            try:
                value = await _aperform(effect, handler=handler, summary_model=summary_model, stopped=watch)
            except Stopped:
                _close_stopped(steps)
            except asyncio.CancelledError:
                steps.close()
                raise
            except Exception as exc:
                if await stopped():
                    _close_stopped(steps, exc)
                effect = steps.throw(exc)
            else:
                effect = steps.send(value)
    except StopIteration as stop:
        # What the steps returned: a Steps[R] generator returns an R, which StopIteration carries untyped.
        return cast(R, stop.value)


def _perform(
    effect: Effect,
    *,
    handler: Callable[[ModelRequest], ModelResponse],
    summary_model: BaseChatModel | None,
    stop: Callable[[], bool] | None,
) -> object:
    if isinstance(effect, CallModel):
        return handler(effect.request)
    if isinstance(effect, Summarize):
        return _summarize(_model(summary_model), effect.prompt, stop=stop)
    return effect.fn()


async def _aperform(
    effect: Effect,
    *,
    handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    summary_model: BaseChatModel | None,
    stopped: Callable[[], Awaitable[bool]] | None,
) -> object:
    """``_perform``'s twin; with ``stopped``, a summary call is watched and cancelled once it says so."""
    if isinstance(effect, CallModel):
        return await handler(effect.request)
    if isinstance(effect, Summarize):
        call = _model(summary_model).ainvoke(effect.prompt, config=summary_call_config())
        return await (_watched(call, stopped) if stopped is not None else call)
    return await asyncio.to_thread(effect.fn)


def _close_stopped(steps: Steps[Any], cause: BaseException | None = None) -> NoReturn:
    """Close the steps (they see ``GeneratorExit`` where they wait, so nothing after it runs) and stop."""
    steps.close()
    raise Stopped() from cause


async def _watched(call: Awaitable[Any], stopped: Callable[[], Awaitable[bool]]) -> Any:
    task = asyncio.ensure_future(call)
    while True:
        finished, _pending = await asyncio.wait({task}, timeout=STOP_POLL_SECONDS)
        if finished:
            return task.result()
        if await stopped():
            task.cancel()  # the HTTP request is closed, not only abandoned
            raise Stopped()


def _summarize(model: BaseChatModel, prompt: str, *, stop: Callable[[], bool] | None) -> Any:
    """The summary call; with ``stop``, in a helper thread watched until it answers or ``stop`` says so."""
    if stop is None:
        return model.invoke(prompt, config=summary_call_config())
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["value"] = model.invoke(prompt, config=summary_call_config())
        except BaseException as exc:  # noqa: BLE001 - handed to the driving thread
            outcome["error"] = exc

    # In the run's context: the run's HTTP transport sees its stop check and closes the request.
    context = contextvars.copy_context()
    caller = threading.Thread(target=context.run, args=(call,), name="summary-call", daemon=True)
    caller.start()
    while caller.is_alive():
        caller.join(STOP_POLL_SECONDS)
        if caller.is_alive() and stop():
            raise Stopped()  # the daemon thread finishes on its own; nobody reads its answer
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _model(model: BaseChatModel | None) -> BaseChatModel:
    if model is None:  # pragma: no cover - a wiring error
        raise RuntimeError("This middleware has no summary model.")
    return model

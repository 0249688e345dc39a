"""The only reader and writer of agent checkpoints: through the compiled graph's get/update_state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot


class CheckpointMoved(Exception):
    """A compare-and-swap update found another checkpoint than the one it expected; nothing written."""


class AgentStateRepository:
    """A thread's checkpointed agent state. Never touches the checkpoint tables directly."""

    def __init__(self, graph: CompiledStateGraph, thread_id: object) -> None:
        if not graph.checkpointer:
            raise ValueError("AgentStateRepository needs a graph compiled with a checkpointer.")
        self.graph = graph
        self.config: dict[str, Any] = {"configurable": {"thread_id": str(thread_id)}}

    def snapshot(self) -> StateSnapshot:
        return self.graph.get_state(self.config)

    def version(self) -> str:
        """The id of the thread's latest checkpoint ("" before the first): what a compare-and-swap
        compares. One checkpoint read, without the reducers and tasks ``get_state`` adds."""
        saved = self.graph.checkpointer.get_tuple(self.config)
        return _checkpoint_id(saved)

    @staticmethod
    def version_of(snapshot: StateSnapshot) -> str:
        return (snapshot.config or {}).get("configurable", {}).get("checkpoint_id") or ""

    def get_values(self) -> dict[str, Any]:
        return dict(self.snapshot().values or {})

    def update(
        self, values: dict[str, Any], *, as_node: str = "model", expected_version: str | None = None
    ) -> dict[str, Any]:
        """Apply ``values`` through the channels' reducers as if ``as_node`` wrote them. With
        ``expected_version``, a compare-and-swap: only onto that checkpoint (else ``CheckpointMoved``,
        nothing written), checked on the very read ``update_state`` builds on, so the latest checkpoint
        is loaded once (a separate ``version()`` first would load it twice)."""
        graph = self.graph
        if expected_version is not None:
            graph = graph.copy({"checkpointer": _Expecting(graph.checkpointer, expected_version)})
        return graph.update_state(self.config, values, as_node=as_node)

    def fork_before(self, message_id: str) -> str | None:
        """Fork the thread at the checkpoint from before ``message_id`` first entered the model's view
        (LangGraph time travel: ``update_state`` on a past config, ``__copy__``). The fork becomes the
        thread's latest checkpoint; the old branch stays in the history. Returns the checkpoint id
        forked from, or None when the message never was in the model's view (an answer to
        ``ask_user``, say).

        The lineage is walked back from the latest checkpoint through its parents, only as far as
        the message's entry: a summary made after the message folded it (so the newest checkpoints
        may not hold it), and a fork never starts from a summary written after the message.
        """
        snapshot: StateSnapshot | None = self.snapshot()
        seen_it = False
        root = snapshot
        while snapshot is not None and snapshot.config:
            holds = _holds(snapshot, message_id)
            if seen_it and not holds:
                break  # older than the message's entry: never holds it again
            seen_it = seen_it or holds
            root = snapshot
            snapshot = self.graph.get_state(snapshot.parent_config) if snapshot.parent_config else None
        if not seen_it:
            return None
        # ``snapshot`` is the turn's input checkpoint (the message still in ``__start__``): the fork
        # copies the state that turn began from, its parent; at the thread's first turn, the input
        # checkpoint itself (empty of messages; a new input replaces what it waits to start with).
        entry = snapshot if snapshot is not None else root
        base = self.graph.get_state(entry.parent_config) if entry.parent_config else entry
        self.graph.update_state(base.config, None, as_node="__copy__")
        return self.version_of(base)

    def checkpoint_matching(self, transcript_ids: list[str], known: set[str]) -> str | None:
        """The newest checkpoint of the thread's whole history (every branch) whose messages, counting
        only the ids in ``known`` (the transcript's), are ``transcript_ids`` in that order: the model's
        view of a branch, as it was when that branch was last current. One at rest (no step pending)
        is preferred; None when no checkpoint ever held exactly that branch."""
        pending: str | None = None
        for snapshot in self.graph.get_state_history(self.config):
            messages = (snapshot.values or {}).get("messages", [])
            ids = [m.id for m in messages if getattr(m, "id", None) in known]
            if ids != transcript_ids:
                continue
            if not snapshot.next:
                return self.version_of(snapshot)
            pending = pending or self.version_of(snapshot)
        return pending

    def values_at(self, checkpoint_id: str) -> dict[str, Any]:
        """The state values of one past checkpoint of the thread."""
        config = {"configurable": {**self.config["configurable"], "checkpoint_id": checkpoint_id}}
        return dict(self.graph.get_state(config).values or {})

    def fork_at(self, checkpoint_id: str) -> str:
        """Copy the past checkpoint ``checkpoint_id`` as the thread's latest (LangGraph time travel, as
        ``fork_before`` does); returns the new latest checkpoint's id."""
        config = {"configurable": {**self.config["configurable"], "checkpoint_id": checkpoint_id}}
        base = self.graph.get_state(config)
        written = self.graph.update_state(base.config, None, as_node="__copy__")
        return (written or {}).get("configurable", {}).get("checkpoint_id") or ""


def _checkpoint_id(saved: CheckpointTuple | None) -> str:
    return saved.config["configurable"]["checkpoint_id"] if saved else ""


class _Expecting(BaseCheckpointSaver):
    """The thread's saver, lent to one ``update_state``, that refuses to read a latest checkpoint other
    than ``version``. Everything else goes to the saver it wraps."""

    def __init__(self, saver: BaseCheckpointSaver, version: str) -> None:
        super().__init__(serde=saver.serde)
        self._saver = saver
        self._version = version

    def __getattr__(self, name: str) -> Any:
        return getattr(self._saver, name)

    @property
    def config_specs(self) -> list:
        return self._saver.config_specs

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        saved = self._saver.get_tuple(config)
        if not config["configurable"].get("checkpoint_id") and _checkpoint_id(saved) != self._version:
            raise CheckpointMoved()
        return saved

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        return self._saver.list(config, **kwargs)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._saver.put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: RunnableConfig, writes: Any, task_id: str, task_path: str = "") -> None:
        return self._saver.put_writes(config, writes, task_id, task_path)

    def get_delta_channel_history(self, *args: Any, **kwargs: Any) -> Any:
        return self._saver.get_delta_channel_history(*args, **kwargs)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self._saver.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Any) -> _Expecting:
        """Strict msgpack: the graph narrows its saver's deserializer; the wrapped saver is the one reading."""
        return _Expecting(self._saver.with_allowlist(extra_allowlist), self._version)


def _holds(snapshot: StateSnapshot, message_id: str) -> bool:
    return any(getattr(m, "id", None) == message_id for m in (snapshot.values or {}).get("messages", []))

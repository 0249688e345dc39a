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

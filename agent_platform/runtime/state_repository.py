"""The only reader and writer of agent checkpoints: through the compiled graph's get/update_state."""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot


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
        return saved.config["configurable"]["checkpoint_id"] if saved else ""

    @staticmethod
    def version_of(snapshot: StateSnapshot) -> str:
        return (snapshot.config or {}).get("configurable", {}).get("checkpoint_id") or ""

    def get_values(self) -> dict[str, Any]:
        return dict(self.snapshot().values or {})

    def update(self, values: dict[str, Any], *, as_node: str = "model") -> dict[str, Any]:
        """Apply ``values`` through the channels' reducers as if ``as_node`` wrote them."""
        return self.graph.update_state(self.config, values, as_node=as_node)

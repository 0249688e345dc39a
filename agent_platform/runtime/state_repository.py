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

    def fork_before(self, message_id: str) -> str | None:
        """Fork the thread at the checkpoint from before ``message_id`` first entered the model's view
        (LangGraph time travel: ``update_state`` on a past config). The fork becomes the thread's latest
        checkpoint; the old branch stays in the history. Returns the checkpoint id forked from, or None
        when the message never was in the model's view (an answer to ``ask_user``, say).

        A summary made after the message folded it: the lineage is walked back to where it entered,
        so a fork never starts from a summary written after the message.
        """
        history = {self.version_of(s): s for s in self.graph.get_state_history(self.config)}
        lineage: list[StateSnapshot] = []
        snapshot = history.get(self.version())
        while snapshot is not None:
            lineage.append(snapshot)  # newest first
            snapshot = history.get(self.version_of_parent(snapshot))
        holding = [i for i, s in enumerate(lineage) if _holds(s, message_id)]
        if not holding:
            return None
        # The settled state just before the message came in: the previous turn's end.
        base = next((s for s in lineage[holding[-1] + 1 :] if not s.next), None)
        if base is None:  # the thread's first turn: the fork is its input checkpoint, empty of messages
            base = lineage[-1]
        self.graph.update_state(base.config, None, as_node="__copy__")
        return self.version_of(base)

    @staticmethod
    def version_of_parent(snapshot: StateSnapshot) -> str:
        return (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id") or ""


def _holds(snapshot: StateSnapshot, message_id: str) -> bool:
    return any(getattr(m, "id", None) == message_id for m in (snapshot.values or {}).get("messages", []))

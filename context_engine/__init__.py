"""The context engine: pure Python, message lists in, message lists out. No Django, no ORM, no network
and no first-party import; LangChain and LangGraph types are fine. ``policy/`` decides, ``compaction/``
and ``summary/`` carry out, ``tokens/`` measures, ``manual/`` is the forced (manual, bulk) path and
``middleware/`` wires them into the agent loop."""

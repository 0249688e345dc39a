"""Deterministic compaction: tool results saved to files behind receipts with previews, long tool-call arguments, inline media, overflow clipping. No model call."""

"""Decisions: when a request is compressed and how (the trigger), what counts as a context overflow, and the pressure figures of a thread."""

"""Forced compression (manual, bulk, admin) over the engine: applying it and previewing it."""

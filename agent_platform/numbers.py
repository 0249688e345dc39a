"""Whole numbers typed by people (admin fields, query strings) or chosen by a model (tool arguments):
read with their digits bounded first, so five thousand digits never reach ``int()`` (Python refuses
past 4,300) nor a database column (a 64-bit integer at most)."""

from __future__ import annotations

ROW_ID_MAX = 2**63 - 1  # a BigAutoField's ceiling (PostgreSQL's bigint, SQLite's INTEGER)


def whole_number(raw: object, *, maximum: int = ROW_ID_MAX) -> int | None:
    """``raw`` (text) as a whole number from 0 to ``maximum``; None for anything else."""
    text = str(raw or "").strip()
    if not (text.isascii() and text.isdigit()):  # "²".isdigit() is true, but int("²") fails
        return None
    if len(text.lstrip("0")) > len(str(maximum)):
        return None
    value = int(text)
    return value if value <= maximum else None

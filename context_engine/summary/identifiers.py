"""Identifiers a summary must not silently drop, and the loss report of one summary (issue 14 item 3).

One extractor finds URLs, file paths, e-mail addresses, UUIDs, hashes, ticket-style ids
(``ABC-1234``), record ids (``"user_id": "mia_li_3668"``, ``ZFA04Y``) and numbers with units
(``12.5 MB``, ``300ms``, ``$1,200``). The loss report sorts the identifiers of the folded messages
into reach tiers: in the summary, in view, one read away (a saved file the view names), two reads (the
history file the view names), unreachable. Pure: text in, counts out.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from context_engine.lines import split_lines
from context_engine.lru import LRU

KIND_URL = "url"
KIND_EMAIL = "email"
KIND_UUID = "uuid"
KIND_HASH = "hash"
KIND_TICKET = "ticket"
KIND_RECORD_ID = "record_id"
KIND_PATH = "path"
KIND_QUANTITY = "quantity"

LOST_LIST_MAX = 50  # lost identifiers kept in the audit record (the counts are always complete)
MAX_IDENTIFIER_CHARS = 200
MIN_IDENTIFIER_CHARS = 4

_TRAILING = ".,;:!?'\")]}>"
# Several patterns open with a lookahead on their first character: it changes no match, and lets the
# regex engine pass over most positions at once (about twice as fast on the shared trajectories).
_URL = re.compile(r"\bhttps?://[^\s\"'<>()\[\]{}\\|^`]+", re.I)
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
)
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# Git short hashes up to SHA-256: hex with at least one digit and one letter (so neither a plain
# number nor an English word like "deadbeef" or "facade" counts).
_HASH = re.compile(r"(?=[0-9a-f])(?<![\w-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}(?![\w-])")
_TICKET = re.compile(
    r"(?=[A-Z])(?<![\w-])(?!(?:SHA|UTF|ISO|GPT|MD|CP|TLS|SSL|HTTP)-)[A-Z][A-Z0-9]{1,9}-\d{1,7}(?![\w-])"
)
# Upper-case codes with letters and digits (reservation / flight / order codes): ZFA04Y, HAT001.
_CODE = re.compile(r"(?=[A-Z0-9])(?<![\w-])(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6,20}(?![\w-])")
# Values of id-named keys in JSON or key=value text: "user_id": "mia_li_3668", id=42a.
# The key is the whole word before the value: letters-and-underscore parts ending in the id word
# (``user_id``, ``orderNumber`` is not); the regex finds the id word, ``_keyed_prefix_ok`` the rest.
_KEYED_ID = re.compile(
    r"""(?=[iksrn])(?:id|ids|key|sku|ref|number)["']?\s*[:=]\s*["']([^"'\s,}\]]{3,80})["']""",
    re.I,
)
_KEY_PREFIX = re.compile(r"(?:[A-Za-z]+_)*", re.I)
_PATH = re.compile(
    r"(?<![\w.:/@-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*[\w-](?:\.[A-Za-z][A-Za-z0-9]{0,7})?(?![\w/])"
)
_FILE_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|mjs|cjs|json|jsonl|yaml|yml|toml|ini|cfg|conf|md|rst|txt|csv|tsv|html|htm|css|"
    "scss|xml|sql|sh|bash|zsh|go|rs|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|m|pony|lock|log|ipynb|"
    "pdf|png|jpg|jpeg|gif|svg|zip|gz|tar|whl|env|dockerfile|traj|patch|diff"
)
# A dotted name standing alone; it is a file name when its last part is a known extension (checked in
# Python: one scan instead of the regex engine trying every extension at every word).
_DOTTED_NAME = re.compile(r"(?<![\w./-])[\w-]+(?:\.[\w-]+)+(?![\w/.-])")
_EXTENSIONS = frozenset(_FILE_EXTENSIONS.split("|"))
_UNITS = (
    "ms|us|µs|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    "B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|kB|bytes?|tokens?|chars?|characters?|lines?|rows?|"
    "px|em|rem|pt|%|kg|g|mg|lb|lbs|km|m|cm|mm|mi|ft|in|°C|°F|K|Hz|kHz|MHz|GHz|"
    "USD|EUR|GBP|CNY|JPY|dollars?|euros?|x"
)
_QUANTITY = re.compile(
    rf"(?=[$€£¥\d])(?<![\w.])(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:{_UNITS}))(?![\w])",
)
_SPACES = re.compile(r"\s+")
_DIGIT = re.compile(r"\d")  # what ``\d`` in the patterns above matches (any Unicode digit)


def _clean(value: str) -> str:
    return value.rstrip(_TRAILING)


def _is_path(value: str) -> bool:
    # A path needs a directory part and either an extension or an absolute / relative root; "and/or"
    # and "km/h" are not paths.
    if "/" not in value.strip("/") or not re.search(r"[A-Za-z]", value):
        return False  # "17/09/2025" is a date
    head = value.lstrip("~.")
    last = value.rsplit("/", 1)[-1]
    return head.startswith("/") or "." in last or value.count("/") >= 2


def _keyed_prefix_ok(text: str, start: int) -> bool:
    """Whether the word run that ends at ``start`` (before an id word) is empty or ``[A-Za-z]+_``
    parts, so the key is a whole word such as ``id``, ``user_id`` or ``Order_REF``."""
    begin = start
    while begin and (text[begin - 1].isalnum() or text[begin - 1] == "_"):  # what ``\w`` matches
        begin -= 1
    return _KEY_PREFIX.fullmatch(text, begin, start) is not None


# URLs, e-mail addresses and UUIDs, each with the substring it cannot match without: taken first, in
# this order, and blanked out of the text the later patterns search.
_MASKED = ((_URL, KIND_URL, "://"), (_EMAIL, KIND_EMAIL, "@"), (_UUID, KIND_UUID, "-"))


def _add(found: dict[str, str], value: str, kind: str) -> None:
    value = _clean(value)
    if MIN_IDENTIFIER_CHARS <= len(value) <= MAX_IDENTIFIER_CHARS and value not in found:
        found[value] = kind


def _add_matches(found: dict[str, str], pattern: re.Pattern[str], text: str, kind: str) -> None:
    for match in pattern.finditer(text):
        _add(found, match.group(0), kind)


def _add_masked(found: dict[str, str], text: str) -> str:
    """Add the URLs, e-mail addresses and UUIDs of ``text``; the text with each of them blanked out."""
    for pattern, kind, needle in _MASKED:
        if needle in text:
            _add_matches(found, pattern, text, kind)
            text = pattern.sub(" ", text)
    return text


def _add_paths(found: dict[str, str], text: str) -> None:
    for match in _PATH.finditer(text):
        if _is_path(match.group(0)):
            _add(found, match.group(0), KIND_PATH)


def _add_file_names(found: dict[str, str], text: str) -> None:
    for match in _DOTTED_NAME.finditer(text):
        name = match.group(0)
        if name.rsplit(".", 1)[1].lower() in _EXTENSIONS:
            _add(found, name, KIND_PATH)


def _add_keyed_ids(found: dict[str, str], text: str) -> None:
    for match in _KEYED_ID.finditer(text):
        if _keyed_prefix_ok(text, match.start()):
            _add(found, match.group(1), KIND_RECORD_ID)


def _add_quantities(found: dict[str, str], text: str) -> None:
    for match in _QUANTITY.finditer(text):
        _add(found, _SPACES.sub(" ", match.group(0)), KIND_QUANTITY)


def extract_identifiers(text: str) -> dict[str, str]:
    """The identifiers in ``text``, each mapped to its kind, in order of first appearance.

    URLs and e-mail addresses are taken first and their characters are not searched again, so a URL's
    path is not also reported as a file path.
    """
    found: dict[str, str] = {}
    if not text:
        return found
    # Each pattern is skipped where the character it cannot match without is absent (a quick ``in``).
    rest = _add_masked(found, text)
    if "/" in rest:
        _add_paths(found, rest)
    if "." in rest:
        _add_file_names(found, rest)
    # Hashes, tickets, codes and quantities all hold a digit: one scan for one spares four on the many
    # short texts (a history line, a sentence) that hold none.
    digits = _DIGIT.search(rest) is not None
    if digits:
        _add_matches(found, _HASH, rest, KIND_HASH)
    if digits and "-" in rest:
        _add_matches(found, _TICKET, rest, KIND_TICKET)
    if ":" in rest or "=" in rest:
        _add_keyed_ids(found, rest)
    if digits:
        _add_matches(found, _CODE, rest, KIND_RECORD_ID)
        _add_quantities(found, rest)
    return found


class Haystack:
    """Texts an identifier is looked up in: exact substring, case-insensitive for the kinds whose case
    carries no meaning, and spacing-insensitive for quantities ("12 MB" matches "12MB")."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.text = "\n".join(t for t in texts if t)
        self._lower: str | None = None
        self._squeezed: str | None = None

    def __contains__(self, item: tuple[str, str]) -> bool:
        value, kind = item
        if not self.text:
            return False
        if value in self.text:
            return True
        if kind in (KIND_EMAIL, KIND_UUID, KIND_HASH, KIND_URL):
            if self._lower is None:
                self._lower = self.text.lower()
            return value.lower() in self._lower
        if kind == KIND_QUANTITY:
            if self._squeezed is None:
                self._squeezed = _SPACES.sub("", self.text)
            return _SPACES.sub("", value) in self._squeezed
        return False


# The reach tiers, nearest first: where a reader of the model's view finds a folded identifier.
TIER_SUMMARY = "in_summary"
TIER_VIEW = "in_view"  # not in the summary, but still verbatim in the view (tail, pinned)
TIER_ONE_READ = "one_read"  # in a saved tool-result file the view names (a receipt, or its path)
TIER_TWO_READS = "two_reads"  # only through the history file the view names: in it, or a file it names
TIER_UNREACHABLE = "unreachable"  # in none of these: the view points nowhere that holds it
TIERS = (TIER_SUMMARY, TIER_VIEW, TIER_ONE_READ, TIER_TWO_READS, TIER_UNREACHABLE)


class Reach:
    """The tier of an identifier, given the texts of each tier: the summary, the rest of the view, the
    saved files the view names, the history file(s) the view names. The caller decides what the view
    names (``context_engine.summary.loss``); a file the view does not name is passed in no tier."""

    def __init__(
        self,
        *,
        summary: str,
        kept: Iterable[str] = (),
        one_read: Iterable[str] = (),
        two_reads: Iterable[str] = (),
    ) -> None:
        self._tiers = (
            (TIER_SUMMARY, Haystack([summary])),
            (TIER_VIEW, Haystack(kept)),
            (TIER_ONE_READ, Haystack(one_read)),
            (TIER_TWO_READS, Haystack(two_reads)),
        )

    def tier(self, value: str, kind: str) -> str:
        for tier, texts in self._tiers:
            if (value, kind) in texts:
                return tier
        return TIER_UNREACHABLE


@dataclass(frozen=True)
class LossReport:
    """Where each identifier of the folded messages ended up after a summary (or a drop): one count per
    reach tier (``TIERS``), which partition them. ``lost`` are those beyond one read (two reads or
    unreachable): what a repair pass asks the summary to keep, listed (bounded) unreachable first."""

    in_summary: int = 0
    in_view: int = 0
    one_read: int = 0
    two_reads: int = 0
    unreachable: int = 0
    lost_identifiers: tuple[str, ...] = ()
    lost_kinds: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.in_summary + self.in_view + self.one_read + self.two_reads + self.unreachable

    @property
    def lost(self) -> int:
        return self.two_reads + self.unreachable

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            **{tier: getattr(self, tier) for tier in TIERS},
            "lost": self.lost,
            "lost_identifiers": list(self.lost_identifiers),
            "lost_kinds": dict(self.lost_kinds),
        }

    @classmethod
    def from_dict(cls, value: Any) -> LossReport:
        """A report as a record or an event carries it (garbage reads as zero). A record from before the
        tiers (``in_saved_file``, ``lost``) reads as it was reported then: its saved-file count as one
        read, its "only in the history file" count (the summary message named that file) as two reads."""
        if not isinstance(value, Mapping):
            return cls()
        if TIER_ONE_READ in value or TIER_TWO_READS in value or TIER_UNREACHABLE in value:
            one, two, unreachable = (_count(value.get(t)) for t in TIERS[2:])
        else:
            one, two, unreachable = _count(value.get("in_saved_file")), _count(value.get("lost")), 0
        listed = value.get("lost_identifiers")
        kinds = value.get("lost_kinds")
        return cls(
            in_summary=_count(value.get(TIER_SUMMARY)),
            in_view=_count(value.get(TIER_VIEW)),
            one_read=one,
            two_reads=two,
            unreachable=unreachable,
            lost_identifiers=tuple(str(i) for i in listed) if isinstance(listed, list) else (),
            lost_kinds={str(k): _count(n) for k, n in kinds.items()} if isinstance(kinds, Mapping) else {},
        )


# No report counts more identifiers than this; a bigger figure (from a query string, say) is garbage.
MAX_COUNT = 10**12


def _count(value: Any) -> int:
    """A non-negative count from JSON (an int, or its digits as a string), else 0; garbage (a float such
    as ``1e999``, thousands of digits) reads as 0 rather than raising."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, str):
        digits = value.strip()  # ASCII only: "²".isdigit() is true, but int() refuses it
        value = int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 13 else 0
    if isinstance(value, int):
        return max(value, 0) if value <= MAX_COUNT else 0
    return 0


# The loss report of a compression that folded nothing (compaction, no-op, undo): nothing was lost.
NO_LOSS: dict[str, Any] = {**LossReport().as_dict(), "repair_calls": 0, "repaired": False}


# Identifiers per line and per text: the loss report, the reference index and a preview before the
# apply all read the same lines, and a history section repeats its folded messages' lines, so each
# distinct line is extracted once. A short line is its own key (``functools.lru_cache``: no lock to
# take, tens of thousands of lookups per compression); a longer one is keyed by its digest, so the
# cache keeps no copy of it.
_LINE_KEY_CHARS = 256
_by_long_line: LRU[bytes, dict[str, str]] = LRU(4096)  # line digest -> its identifiers
_by_text: LRU[bytes, dict[str, str]] = LRU(4096)  # text digest -> its identifiers


@functools.lru_cache(maxsize=32768)
def _short_line_identifiers(line: str) -> dict[str, str]:
    return extract_identifiers(line)


def clear_cache() -> None:
    _short_line_identifiers.cache_clear()
    _by_long_line.clear()
    _by_text.clear()


def text_digest(text: str) -> bytes:
    """A text's cache key (lone surrogates included: a tool may return them)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def line_identifiers(line: str) -> dict[str, str]:
    """The identifiers of one line (``extract_identifiers``, cached). Treat as read-only."""
    if len(line) < MIN_IDENTIFIER_CHARS:
        return {}
    if len(line) <= _LINE_KEY_CHARS:
        return _short_line_identifiers(line)
    key = text_digest(line)
    found = _by_long_line.get(key)
    if found is None:
        found = extract_identifiers(line)
        _by_long_line.put(key, found)
    return found


def text_identifiers(text: str) -> dict[str, str]:
    """The identifiers of ``text``, line by line: an identifier lies within one line (so a reference
    index can point at the line that holds it whole), in order of first appearance. Treat as read-only."""
    key = text_digest(text)
    found = _by_text.get(key)
    if found is None:
        found = {}
        for line in split_lines(text):
            for value, kind in line_identifiers(line).items():
                found.setdefault(value, kind)
        _by_text.put(key, found)
    return found


def identifiers_of(texts: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for text in texts:
        for value, kind in text_identifiers(text).items():
            found.setdefault(value, kind)
    return found


def loss_report(
    identifiers: dict[str, str],
    *,
    summary: str,
    kept: Iterable[str] = (),
    one_read: Iterable[str] = (),
    two_reads: Iterable[str] = (),
    limit: int = LOST_LIST_MAX,
) -> LossReport:
    """Sort each identifier into its nearest tier (see ``Reach``): ``one_read`` are the texts of the saved
    files the view names, ``two_reads`` of the history file when the view names it."""
    reach = Reach(summary=summary, kept=kept, one_read=one_read, two_reads=two_reads)
    counts = dict.fromkeys(TIERS, 0)
    beyond: dict[str, list[str]] = {TIER_UNREACHABLE: [], TIER_TWO_READS: []}
    lost_kinds: dict[str, int] = {}
    for value, kind in identifiers.items():
        tier = reach.tier(value, kind)
        counts[tier] += 1
        if tier in beyond:
            beyond[tier].append(value)
            lost_kinds[kind] = lost_kinds.get(kind, 0) + 1
    lost = [*beyond[TIER_UNREACHABLE], *beyond[TIER_TWO_READS]]
    return LossReport(**counts, lost_identifiers=tuple(lost[:limit]), lost_kinds=lost_kinds)


def better_summary(first: LossReport, second: LossReport) -> int:
    """0 when the first summary is at least as good as the second (fewer lost identifiers wins; a tie
    keeps the first), else 1."""
    return 1 if second.lost < first.lost else 0

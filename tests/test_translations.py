"""The Simplified Chinese catalogue is complete: no untranslated or fuzzy entry, every string the code
and templates mark for translation is in it, and the committed .mo is compiled from the .po."""

from __future__ import annotations

import ast
import gettext
import re
import shutil
from pathlib import Path

from django.core.management import call_command

from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
PO = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")
SOURCES = (
    "config",
    "context_engine",
    "agent_platform",
    "conversations",
    "compression",
    "templates",
    "manage.py",
)


def _unquote(block: str) -> str:
    return "".join(ast.literal_eval(f'"{part}"') for part in re.findall(r'"((?:[^"\\]|\\.)*)"', block))


def po_entries(text: str) -> list[dict]:
    """The entries of a .po file: ``msgid``, ``plural``, ``msgstrs`` and ``flags`` (header excluded)."""
    entries = []
    for block in text.split("\n\n"):
        msgid = re.search(r'^msgid ((?:".*"\n?)+)', block, re.M)
        if not msgid or block.lstrip().startswith("#~"):
            continue
        plural = re.search(r'^msgid_plural ((?:".*"\n?)+)', block, re.M)
        msgstrs = [_unquote(m) for m in re.findall(r'^msgstr(?:\[\d+\])? ((?:".*"\n?)+)', block, re.M)]
        flags = {f.strip() for line in re.findall(r"^#, (.*)$", block, re.M) for f in line.split(",")}
        entry = {"msgid": _unquote(msgid.group(1)), "plural": plural and _unquote(plural.group(1))}
        if entry["msgid"]:
            entries.append({**entry, "msgstrs": msgstrs, "flags": flags})
    return entries


def test_the_catalogue_check_finds_untranslated_and_fuzzy_entries():
    sample = 'msgid "a"\nmsgstr ""\n\n#, fuzzy, python-format\nmsgid "b %(x)s"\nmsgstr "乙 %(x)s"\n\nmsgid "c"\nmsgstr "丙"\n'
    assert _incomplete(po_entries(sample)) == ["untranslated: 'a'", "fuzzy: 'b %(x)s'"]


def _incomplete(entries: list[dict]) -> list[str]:
    problems = []
    for entry in entries:
        if not all(entry["msgstrs"]):
            problems.append(f"untranslated: {entry['msgid']!r}")
        elif "fuzzy" in entry["flags"]:
            problems.append(f"fuzzy: {entry['msgid']!r}")
    return problems


def test_every_entry_is_translated_and_none_is_fuzzy():
    assert _incomplete(po_entries(PO.read_text(encoding="utf-8"))) == []


def test_the_committed_mo_is_compiled_from_the_po():
    with MO.open("rb") as handle:
        catalog = gettext.GNUTranslations(handle)._catalog
    for entry in po_entries(PO.read_text(encoding="utf-8")):
        if entry["plural"]:
            assert catalog.get((entry["msgid"], 0)) == entry["msgstrs"][0], entry["msgid"]
        else:
            assert catalog.get(entry["msgid"]) == entry["msgstrs"][0], entry["msgid"]


def test_every_string_marked_for_translation_is_in_the_po(tmp_path, settings, monkeypatch):
    """``makemessages`` over a copy of the sources (it writes work files beside the templates), run in
    this process: one xgettext call over every file, no Django start-up of its own."""
    if not shutil.which("xgettext"):
        skip_or_fail("needs GNU gettext (xgettext) to extract the strings", tool=True)
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, tmp_path / name)
    (tmp_path / "locale").mkdir()
    settings.LOCALE_PATHS = [tmp_path / "locale"]
    monkeypatch.chdir(tmp_path)
    call_command("makemessages", locale=["zh_Hans"], no_obsolete=True, verbosity=0)
    extracted = {
        e["msgid"] for e in po_entries((tmp_path / PO.relative_to(ROOT)).read_text(encoding="utf-8"))
    }
    committed = {e["msgid"] for e in po_entries(PO.read_text(encoding="utf-8"))}
    assert {"Stop", "agent run", "The %(field)s is longer than %(max_length)d characters."} <= extracted
    assert sorted(extracted - committed) == [], "strings missing from the .po: run makemessages and translate"

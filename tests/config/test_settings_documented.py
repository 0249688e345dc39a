"""docs/settings.md documents every environment variable the platform reads, once, and nothing else; every
Django setting taken from the environment is read by something. Static: the sources are parsed, not run."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from django.conf import global_settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "compression", "conversations", "agent_platform", "context_engine")
SETTINGS = ROOT / "config" / "settings.py"
# Only overrides for the test run; the variables it reads belong to the test harness (docs/testing.md).
TEST_SETTINGS = ROOT / "config" / "test_settings.py"
DOC = ROOT / "docs" / "settings.md"
HEADING = re.compile(r"^### `([A-Z][A-Z0-9_]*)`[ \t]*$", re.M)
# Names read outside first-party code: Django's own settings, Celery's (config/celery.py loads the
# CELERY_ namespace) and django-axes' (its AXES_ prefix).
LIBRARY_PREFIXES = ("CELERY_", "AXES_")


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _sources() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != TEST_SETTINGS
    ]


def _constant_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _env_variable(node: ast.AST) -> str | None:
    """The variable a django-environ read names: env("X"), env.int("X", default=...), env.db("X")..."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        func = func.value
    if isinstance(func, ast.Name) and func.id == "env":
        return _constant_name(node.args[0])
    return None


def _is_os_environ(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _environ_variable(node: ast.AST) -> str | None:
    """The variable an os.environ.get("X") / os.environ["X"] / os.getenv("X") read names."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        if node.func.attr == "get" and _is_os_environ(node.func.value):
            return _constant_name(node.args[0])
        if node.func.attr == "getenv":
            return _constant_name(node.args[0])
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_os_environ(node.value):
        return _constant_name(node.slice)
    return None


def settings_from_environment(tree: ast.Module) -> dict[str, set[str]]:
    """Each environment variable settings.py reads, with the settings its value is assigned to."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
        for inner in ast.walk(node.value):
            if variable := _env_variable(inner):
                found.setdefault(variable, set()).update(targets)
    return found


def environment_variables_read() -> set[str]:
    read = set(settings_from_environment(_parse(SETTINGS)))
    for path in _sources():
        read.update(filter(None, map(_environ_variable, ast.walk(_parse(path)))))
    return read


def documented_variables(text: str) -> list[str]:
    return HEADING.findall(text)


def _settings_reads(tree: ast.Module) -> tuple[set[str], list[re.Pattern[str]]]:
    """settings.X and getattr(settings, "X") in a module; getattr(settings, f"A_{b}_C") as a pattern."""
    names: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "settings"
        ):
            names.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "settings"
        ):
            key = node.args[1]
            if name := _constant_name(key):
                names.add(name)
            elif isinstance(key, ast.JoinedStr):
                parts = [
                    re.escape(part.value) if isinstance(part, ast.Constant) else "[A-Z0-9_]+"
                    for part in key.values
                ]
                patterns.append(re.compile("".join(parts)))
    return names, patterns


def _used_by_other_settings(tree: ast.Module) -> set[str]:
    """Names another setting's value is computed from (LOGGING from LOG_FORMAT, ...)."""
    return {
        inner.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for inner in ast.walk(node.value)
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load)
    }


def unread_settings(
    environment_settings: set[str], sources: list[ast.Module], settings_tree: ast.Module
) -> set[str]:
    names = _used_by_other_settings(settings_tree)
    patterns: list[re.Pattern[str]] = []
    for tree in sources:
        more_names, more_patterns = _settings_reads(tree)
        names |= more_names
        patterns += more_patterns
    return {
        setting
        for setting in environment_settings
        if setting not in names
        and not hasattr(global_settings, setting)
        and not setting.startswith(LIBRARY_PREFIXES)
        and not any(pattern.fullmatch(setting) for pattern in patterns)
    }


def test_every_environment_variable_read_is_documented_once_and_nothing_else():
    read = environment_variables_read()
    documented = documented_variables(DOC.read_text(encoding="utf-8"))
    assert len(read) > 40  # the parser found the reads (a broken parser must not pass on nothing)
    assert sorted(n for n, count in Counter(documented).items() if count > 1) == []
    assert sorted(read - set(documented)) == [], "read but not documented in docs/settings.md"
    assert sorted(set(documented) - read) == [], "documented in docs/settings.md but read nowhere"


def test_every_setting_taken_from_the_environment_is_read():
    settings_tree = _parse(SETTINGS)
    from_environment = set().union(*settings_from_environment(settings_tree).values())
    sources = [_parse(path) for path in _sources() if path != SETTINGS]
    assert unread_settings(from_environment, sources, settings_tree) == set()


def test_the_checks_fail_on_an_undocumented_or_unread_setting():
    # A setting read from the environment and used by nobody, and a heading for a variable nobody reads.
    tree = ast.parse(
        'UNUSED_KNOB = env.int("UNUSED_KNOB", default=1)\n'
        'LOG_FORMAT = env.str("LOG_FORMAT", default="text")\n'
        'LOGGING = {"formatter": LOG_FORMAT}\n'
    )
    consumer = ast.parse(
        'from django.conf import settings\nlimit = getattr(settings, f"THROTTLE_{name}_PER_MINUTE")\n'
    )
    from_environment = set().union(*settings_from_environment(tree).values()) | {"THROTTLE_SEND_PER_MINUTE"}
    assert set(settings_from_environment(tree)) == {"UNUSED_KNOB", "LOG_FORMAT"}
    assert unread_settings(from_environment, [consumer], tree) == {"UNUSED_KNOB"}
    assert documented_variables("### `LOG_FORMAT`\ntext\n### `NOBODY_READS_ME`\n") == [
        "LOG_FORMAT",
        "NOBODY_READS_ME",
    ]
    assert _environ_variable(ast.parse('os.environ.get("X_DIR")').body[0].value) == "X_DIR"
    assert _environ_variable(ast.parse('os.environ["Y_DIR"]').body[0].value) == "Y_DIR"

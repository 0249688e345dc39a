"""Migrations are in step with models; the demo seed is idempotent; deploy checks pass."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from agent_platform.models import Agent

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db
def test_migrations_are_up_to_date():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db
def test_seed_is_idempotent_and_prints_the_login(django_user_model, settings):
    settings.DEBUG = True
    out = StringIO()
    call_command("seed_demo", stdout=out)
    call_command("seed_demo", stdout=out)
    assert django_user_model.objects.filter(username="admin", is_superuser=True).count() == 1
    assert Agent.objects.filter(slug="demo").count() == 1
    assert "Admin login: admin / admin" in out.getvalue()
    assert ":8000" not in out.getvalue()  # the server prints its own address, on its real port


def test_check_deploy_passes_with_a_production_environment():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "SECRET_KEY": "x" * 64 + "-production-like-secret-key-with-enough-entropy-0123456789",
        "ALLOWED_HOSTS": "agents.example.com",
        "DATABASE_URL": "sqlite:////tmp/deploy-check.sqlite3",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_migrate_works_when_the_sqlite_directory_does_not_exist_yet(tmp_path):
    # A fresh clone has no var/: `make run` must still migrate the embedded SQLite database.
    database = tmp_path / "fresh-clone" / "var" / "db.sqlite3"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{database}",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert database.is_file()

"""The engine's tests need no Django: ``make test`` runs this package first with pytest-django off."""

from __future__ import annotations

import sys

import pytest


def test_django_is_not_loaded_while_the_engine_tests_run_alone(request):
    if request.config.pluginmanager.hasplugin("django"):
        pytest.skip("inside the full suite, where pytest-django loads Django for the other packages")
    assert not [name for name in sys.modules if name == "django" or name.startswith("django.")]

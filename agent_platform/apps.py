from django.apps import AppConfig
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models.signals import post_migrate


def _checkpoint_tables(*, using: str = "default", **_kwargs) -> None:
    """After ``migrate``: the LangGraph checkpoint tables live in the same PostgreSQL database."""
    from agent_platform.runtime.checkpointer import checkpointer_setup

    db = connections[using].settings_dict
    if db["ENGINE"] == "django.db.backends.postgresql":
        checkpointer_setup(db=db)


def _key_bindings_check(**_kwargs) -> list[checks.CheckMessage]:
    """A malformed ``MODEL_KEY_BINDINGS`` stops the server at start, not at the first model call."""
    from agent_platform.key_bindings import key_bindings

    try:
        key_bindings()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="agent_platform.E001")]
    return []


class AgentPlatformConfig(AppConfig):
    name = "agent_platform"
    verbose_name = "Platform"

    def ready(self) -> None:
        checks.register(_key_bindings_check)
        post_migrate.connect(_checkpoint_tables, sender=self, dispatch_uid="agent_platform.checkpoint_tables")

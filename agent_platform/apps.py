from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate


def _checkpoint_tables(*, using: str = "default", **_kwargs) -> None:
    """After ``migrate``: the LangGraph checkpoint tables live in the same PostgreSQL database."""
    from agent_platform.runtime.checkpointer import checkpointer_setup

    db = connections[using].settings_dict
    if db["ENGINE"] == "django.db.backends.postgresql":
        checkpointer_setup(db=db)


class AgentPlatformConfig(AppConfig):
    name = "agent_platform"
    verbose_name = "Platform"

    def ready(self) -> None:
        post_migrate.connect(_checkpoint_tables, sender=self, dispatch_uid="agent_platform.checkpoint_tables")

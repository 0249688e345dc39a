"""The Django project package and the "platform" app (agents, knowledge bases, agent runtime).

Named ``agent_platform`` because a top-level ``platform`` package would shadow the standard library.
"""

from agent_platform.celery import app as celery_app

__all__ = ["celery_app"]

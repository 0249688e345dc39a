"""The project package: settings, URLs, ASGI, the Celery app, the NinjaAPI root and the HTTP error
middleware. It sits on the top floor: it imports the apps, and no app imports it."""

from config.celery import app as celery_app

__all__ = ["celery_app"]

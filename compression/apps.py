from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "compression"

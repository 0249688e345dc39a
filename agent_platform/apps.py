from django.apps import AppConfig


class AgentPlatformConfig(AppConfig):
    name = "agent_platform"
    verbose_name = "Platform"

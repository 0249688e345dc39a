"""The demo seed behind `manage.py seed_demo` (idempotent)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction

from agent_platform.knowledge.demo import (
    DEMO_DOCUMENTS,
    DEMO_KB_DESCRIPTION,
    DEMO_KB_NAME,
    DEMO_KB_SLUG,
)
from agent_platform.knowledge.services import document_ingest
from agent_platform.models import Agent, KnowledgeBase

DEMO_AGENT_SLUG = "demo"


@dataclass
class SeedResult:
    username: str
    password: str
    created: list[str] = field(default_factory=list)

    def report_lines(self) -> list[str]:
        return [f"created {item}" for item in self.created] or ["demo data already present"]


@transaction.atomic
def demo_seed(*, password: str | None = None) -> SeedResult:
    password = password or os.environ.get("DEMO_ADMIN_PASSWORD") or "admin"
    user_model = get_user_model()
    result = SeedResult(username="admin", password=password)
    admin = user_model.objects.filter(username="admin").first()
    if admin is None:
        user_model.objects.create_superuser("admin", "admin@example.com", password)
        result.created.append("admin login")
    else:
        admin.set_password(password)
        admin.save(update_fields=["password"])

    _agent, created = Agent.objects.get_or_create(
        slug=DEMO_AGENT_SLUG,
        defaults={
            "name": "Demo agent",
            "description": "Offline demo agent with every tool; a small budget so compression is easy to see.",
            "system_prompt": "You are the demo agent of a self-hosted agent platform. Use tools when they help.",
            "summary_threshold": 4,
            "summary_keep_messages": 6,
        },
    )
    if created:
        result.created.append("demo agent")
    _seed_knowledge_base(result)
    return result


def _seed_knowledge_base(result: SeedResult) -> None:
    kb, created = KnowledgeBase.objects.get_or_create(
        slug=DEMO_KB_SLUG, defaults={"name": DEMO_KB_NAME, "description": DEMO_KB_DESCRIPTION}
    )
    if created:
        result.created.append(f"knowledge base {DEMO_KB_SLUG}")
    for title, source, text in DEMO_DOCUMENTS:
        if not kb.documents.filter(title=title).exists():
            document_ingest(kb=kb, title=title, source=source, text=text)
            result.created.append(f"document {title!r}")

"""The compression audit is read-only in the admin, filterable, and never editable."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compression.models import CompressionRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def record(user, agent):
    from conversations.services import thread_create

    thread = thread_create(user=user, agent_slug=agent.slug)
    return CompressionRecord.objects.create(
        conversation=thread,
        trigger="manual",
        level="summary",
        status="completed",
        before_tokens=9000,
        after_tokens=900,
    )


def test_records_list_with_filters(client, admin_user, record):
    client.force_login(admin_user)
    page = client.get(reverse("admin:compression_compressionrecord_changelist"), {"trigger__exact": "manual"})
    assert page.status_code == 200
    assert "9,000 → 900 (8,100 saved)" in page.content.decode()
    empty = client.get(reverse("admin:compression_compressionrecord_changelist"), {"trigger__exact": "bulk"})
    assert "9,000 → 900" not in empty.content.decode()


def test_records_cannot_be_added_changed_or_deleted(client, admin_user, record):
    client.force_login(admin_user)
    change = reverse("admin:compression_compressionrecord_change", args=[record.pk])
    assert client.get(reverse("admin:compression_compressionrecord_add")).status_code == 403
    assert 'name="after_tokens"' not in client.get(change).content.decode()
    client.post(change, {"after_tokens": 1})
    record.refresh_from_db()
    assert record.after_tokens == 900
    assert (
        client.post(reverse("admin:compression_compressionrecord_delete", args=[record.pk])).status_code
        == 403
    )
    assert CompressionRecord.objects.filter(pk=record.pk).exists()


def test_the_list_and_the_record_show_the_loss_report_by_reach_tier(client, admin_user, record):
    record.loss_report = {
        "total": 12,
        "in_summary": 7,
        "in_view": 1,
        "one_read": 2,
        "two_reads": 1,
        "unreachable": 1,
        "lost": 2,
        "lost_identifiers": ["ABC-1234", "https://example.com/spec"],
        "lost_kinds": {"ticket": 1, "url": 1},
        "repair_calls": 1,
        "repaired": True,
        "indexed": 1,
    }
    record.save()
    client.force_login(admin_user)
    listing = client.get(reverse("admin:compression_compressionrecord_changelist")).content.decode()
    assert "in view / one read / two reads / unreachable" in listing
    assert "8 / 2 / 1 / 1 of 12 (1 in the reference index) (repaired)" in listing
    detail = client.get(
        reverse("admin:compression_compressionrecord_change", args=[record.pk])
    ).content.decode()
    assert "ABC-1234, https://example.com/spec" in detail


def test_the_list_reads_a_record_from_before_the_tiers(client, admin_user, record):
    # Written before issue 24: a saved-file count (read as one read) and "only in the history file"
    # (read as two reads: the summary message named that file).
    record.loss_report = {"total": 12, "in_summary": 7, "in_view": 1, "in_saved_file": 2, "lost": 2}
    record.save()
    client.force_login(admin_user)
    listing = client.get(reverse("admin:compression_compressionrecord_changelist")).content.decode()
    assert "8 / 2 / 2 / 0 of 12" in listing

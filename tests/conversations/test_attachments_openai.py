"""A thread with a 2 MB image and a 300 KB log, through the real OpenAI client against a local stub:
the vision model sees the image once, compression saves it to outputs/media/, both files stay
recoverable byte for byte, and no summary call ever carries base64."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agent_platform.models import Agent, ModelEndpoint
from agent_platform.workdir import workdir_for
from context_engine.compaction.media import media_path
from conversations.models import AgentRun
from conversations.services import message_intake, thread_create
from tests.context_engine.chats import as_summary
from tests.support.files import png_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def vision_agent(openai_stub, monkeypatch):
    monkeypatch.setenv("STUB_API_KEY", "sk-test")
    endpoint = ModelEndpoint.objects.create(
        name="vision stub", base_url=openai_stub.base_url, api_key_env="STUB_API_KEY", supports_vision=True
    )
    return Agent.objects.create(
        name="Vision",
        slug="vision",
        endpoint=endpoint,
        model_name="gpt-4o-mini",
        temperature=0.0,
        tools=[],  # the history tools' schemas only: the compacted second request stays below T
        summary_threshold=1,  # 1,024 tokens: the second request is over it
        summary_keep_messages=2,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_image_and_log_compress_recoverably_with_no_base64_in_any_summary_call(
    client, user, vision_agent, openai_stub, django_capture_on_commit_callbacks
):
    image = png_bytes(noise=2_000_000)
    log = "".join(
        f"2026-11-30T10:{i % 60:02d}:00Z worker-{i % 7} job {i} done\n" for i in range(7000)
    ).encode()
    assert len(image) >= 2_000_000 and len(log) >= 300_000
    payload = base64.b64encode(image).decode()
    thread = thread_create(user=user, agent_slug=vision_agent.slug)
    client.force_login(user)

    openai_stub.reply("A bar chart and a worker log.")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages/upload",
            {
                "content": "What do these show?",
                "files": [SimpleUploadedFile("chart.png", image), SimpleUploadedFile("workers.log", log)],
            },
        )
    assert response.status_code == 202, response.content
    first = json.dumps(openai_stub.requests[0])
    assert f"data:image/png;base64,{payload}" in first  # the vision model sees the image itself
    assert "workers.log" in first and len(first) < len(payload) + 20_000  # the log as a note

    openai_stub.reply("Jobs finished on seven workers.")
    with django_capture_on_commit_callbacks(execute=True):
        second_run = message_intake(thread_id=thread.thread_id, user=user, content="Summarize the log.").run
    second_run.refresh_from_db()
    assert second_run.status == AgentRun.Status.SUCCEEDED, second_run.error
    second = json.dumps(openai_stub.requests[1])
    image_path = media_path("image/png", _sha(image))
    assert "base64," not in second and image_path in second  # compacted: the image is a receipt now

    openai_stub.reply(as_summary("## SESSION INTENT\nReview a chart and a worker log."))
    compressed = client.post(f"/api/threads/{thread.thread_id}/compress?wait=true")
    assert compressed.status_code == 200, compressed.content
    assert compressed.json()["status"] == "completed"
    summary_call = json.dumps(openai_stub.requests[-1])
    assert "Rewrite the conversation" in summary_call
    assert "base64," not in summary_call and payload[:200] not in summary_call

    workdir = workdir_for(thread)
    assert _sha(workdir.read_bytes(image_path)) == _sha(image)
    [log_attachment] = thread.attachments.filter(name="workers.log")
    assert _sha(workdir.read_bytes(log_attachment.path)) == _sha(log)
    history = workdir.read_text(compressed.json()["file_path"])
    assert "base64," not in history and image_path in history


def test_a_model_without_vision_is_sent_a_note_not_the_image(
    client, user, vision_agent, openai_stub, django_capture_on_commit_callbacks
):
    vision_agent.endpoint.supports_vision = False
    vision_agent.endpoint.save()
    image = png_bytes(32, 32)
    thread = thread_create(user=user, agent_slug=vision_agent.slug)
    client.force_login(user)
    openai_stub.reply("I can only read about it.")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/threads/{thread.thread_id}/messages/upload",
            {"content": "What is this?", "files": [SimpleUploadedFile("chart.png", image)]},
        )
    assert response.status_code == 202, response.content
    [user_message] = [m for m in openai_stub.requests[0]["messages"] if m["role"] == "user"]
    sent = json.dumps(user_message)
    assert "base64" not in sent and "image_url" not in sent
    assert "chart.png" in sent and "image/png" in sent and _sha(image) in sent and "cannot see images" in sent

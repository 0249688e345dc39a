"""The thread's saved files: owner-only, escaped, byte-for-byte downloads streamed, nothing outside the
workdir; run on local disk and on the loopback S3 bucket (``workdir_storage``)."""

from __future__ import annotations

import pytest

from agent_platform.workdir import workdir_for
from tests.conversations.page_support import file_url

pytestmark = pytest.mark.django_db


# --- saved files -------------------------------------------------------------------------------


def test_owner_sees_a_saved_file_with_its_size_and_sha256_escaped_never_run(
    owner_client, thread, workdir_storage
):
    import hashlib

    text = "<script>full output</script> 中文"
    workdir_for(thread).write_text("outputs/large_tool_results/x.txt", text)
    response = owner_client.get(file_url(thread, "outputs/large_tool_results/x.txt"))
    assert response.status_code == 200
    assert response["X-Content-Type-Options"] == "nosniff"
    html = response.content.decode()
    assert hashlib.sha256(text.encode()).hexdigest() in html
    assert "&lt;script&gt;full output&lt;/script&gt; 中文" in html and "<script>full output" not in html
    assert f"{len(text.encode())} bytes" in html
    assert 'href="?download=1"' in html


def test_a_saved_file_downloads_byte_for_byte_as_an_attachment(owner_client, thread, workdir_storage):
    text = "<script>full output</script> 中文"
    workdir_for(thread).write_text("outputs/large_tool_results/x.txt", text)
    response = owner_client.get(file_url(thread, "outputs/large_tool_results/x.txt") + "?download=1")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == 'attachment; filename="x.txt"'
    assert response.getvalue() == text.encode()
    raw = owner_client.get(file_url(thread, "outputs/large_tool_results/x.txt") + "?raw=1")
    assert raw["Content-Type"] == "text/plain; charset=utf-8" and raw.getvalue() == text.encode()


def test_a_large_saved_file_is_streamed_in_chunks_byte_exact(owner_client, thread, workdir_storage):
    # ~700 KB of UTF-8 whose chunk boundaries fall inside multi-byte characters.
    text = "".join(f"行 {i}: {'données ' * 20}\n" for i in range(4000))
    workdir_for(thread).write_text("outputs/conversation_history/s.md", text)
    response = owner_client.get(file_url(thread, "outputs/conversation_history/s.md") + "?download=1")
    assert response.streaming and response["Content-Type"] == "text/plain; charset=utf-8"
    chunks = list(response.streaming_content)
    assert len(chunks) > 1 and int(response["Content-Length"]) == len(text.encode())
    assert b"".join(chunks) == text.encode()
    page = owner_client.get(file_url(thread, "outputs/conversation_history/s.md"))
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert f"{len(text.encode())} bytes" in page.content.decode()


@pytest.mark.parametrize(
    ("data", "content_type", "disposition"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "image/png", 'inline; filename="f"'),
        (b"%PDF-1.4\n" + b"\0" * 64, "application/pdf", 'inline; filename="f"'),  # the browser's viewer
        (b"\x00\x01binary", "application/octet-stream", 'attachment; filename="f"'),
    ],
)
def test_files_that_are_not_text_are_streamed_with_their_type(
    owner_client, thread, workdir_storage, data, content_type, disposition
):
    workdir_for(thread).write_bytes("outputs/media/f", data)
    response = owner_client.get(file_url(thread, "outputs/media/f"))
    assert (response["Content-Type"], response["Content-Disposition"]) == (content_type, disposition)
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.getvalue() == data


def test_another_user_and_staff_get_404_for_a_saved_file(
    client, other_user, staff_user, thread, workdir_storage
):
    workdir_for(thread).write_text("outputs/secret.txt", "secret")
    for someone in (other_user, staff_user):
        client.force_login(someone)
        assert client.get(file_url(thread, "outputs/secret.txt")).status_code == 404


@pytest.mark.parametrize(
    "path", ["../other/outputs/x.txt", "outputs/../../x.txt", "outputs/missing.txt", "outputs"]
)
def test_paths_outside_the_workdir_or_missing_are_404(owner_client, thread, path, workdir_storage):
    workdir_for(thread).write_text("outputs/present.txt", "here")
    assert owner_client.get(f"/threads/{thread.thread_id}/files/{path}").status_code == 404


def test_traversal_is_404_even_where_the_target_file_exists(owner_client, thread, settings, tmp_path):
    settings.WORKDIR_ROOT = root = tmp_path
    (root / "other" / "outputs").mkdir(parents=True, exist_ok=True)
    (root / "other" / "outputs" / "x.txt").write_text("another thread's file")
    (root / "x.txt").write_text("a file beside the workdirs")
    workdir_for(thread).write_text("outputs/present.txt", "here")
    for path in ("../other/outputs/x.txt", "outputs/../../x.txt", "%2e%2e/other/outputs/x.txt"):
        response = owner_client.get(f"/threads/{thread.thread_id}/files/{path}")
        assert response.status_code == 404, path
        assert b"another thread" not in response.content and b"beside" not in response.content


def test_a_deleted_threads_files_are_gone(owner_client, user, thread):
    from conversations.services import thread_soft_delete

    workdir_for(thread).write_text("outputs/x.txt", "x")
    thread_soft_delete(thread_id=thread.thread_id, user=user)
    assert owner_client.get(file_url(thread, "outputs/x.txt")).status_code == 404

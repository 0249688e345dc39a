import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agent_platform.knowledge.chunking import chunk_text
from agent_platform.knowledge.models import Chunk, Document, KnowledgeBase
from agent_platform.knowledge.ranking import query_terms, tokenize
from agent_platform.knowledge.services import document_ingest

ENGLISH = " ".join(
    f"Sentence number {i} talks about topic {i % 7} and keeps going for a while." for i in range(60)
)
CHINESE = "".join(f"这是第{i}句话，讲的是上下文压缩和令牌预算的第{i % 5}个方面。" for i in range(80))


@pytest.mark.parametrize("text", [ENGLISH, CHINESE], ids=["english", "chinese"])
def test_chunks_overlap_stay_under_the_size_and_cover_the_text(text):
    chunks = chunk_text(text, size=300, overlap=60)
    assert len(chunks) > 3
    assert all(len(chunk.content) <= 300 for chunk in chunks)
    for previous, current in zip(chunks, chunks[1:], strict=False):
        overlap = previous.end - current.start
        assert 20 <= overlap <= 60, overlap
        assert current.content[:20] in previous.content
    covered = "".join(chunk.content for chunk in chunks)
    assert all(
        piece in covered for piece in text.replace("。", "。|").replace(". ", ".|").split("|") if piece
    )


def test_chunks_prefer_paragraph_boundaries():
    text = "First paragraph about compression. " * 8 + "\n\n" + "Second paragraph about budgets. " * 8
    chunks = chunk_text(text, size=400, overlap=50)
    assert chunks[0].content.endswith("compression.")
    # The overlap begins at a sentence start, never mid-word.
    assert chunks[1].content.startswith(("First paragraph", "Second paragraph"))


def test_tokenize_uses_cjk_bigrams_and_stems_words():
    assert tokenize("Compression budgets 上下文") == ["compress", "budget", "上下", "下文"]
    assert query_terms("search the knowledge base for compression") == [
        "search",
        "knowledge",
        "base",
        "compress",
    ]


@pytest.mark.django_db
def test_reingesting_a_document_replaces_its_chunks():
    kb = KnowledgeBase.objects.create(name="KB", slug="kb")
    document = document_ingest(kb=kb, title="Doc", text=ENGLISH, source="notes")
    first = list(document.chunks.values_list("pk", flat=True))
    assert len(first) > 1
    document_ingest(kb=kb, title="Doc", text="Short now.", source="notes", document=document)
    assert list(document.chunks.values_list("content", flat=True)) == ["Short now."]
    assert not Chunk.objects.filter(pk__in=first).exists()
    chunk = document.chunks.get()
    assert chunk.kb_id == kb.pk
    assert chunk.metadata["chunk_index"] == 0 and chunk.metadata["source"] == "notes"


@pytest.mark.django_db
def test_ingesting_a_file_reads_utf8_and_rejects_other_extensions_and_bytes():
    kb = KnowledgeBase.objects.create(name="KB", slug="kb")
    upload = SimpleUploadedFile("guide.md", "\ufeff# 指南\r\n\r\nHello".encode())
    document = document_ingest(kb=kb, title="Guide", file=upload)
    assert document.text == "# 指南\n\nHello"
    assert document.filename == "guide.md"
    assert document.chunks.count() == 1
    with pytest.raises(ValidationError):
        document_ingest(kb=kb, title="Bin", file=SimpleUploadedFile("x.pdf", b"%PDF"))
    with pytest.raises(ValidationError):
        document_ingest(kb=kb, title="Latin1", file=SimpleUploadedFile("x.txt", "café".encode("latin-1")))
    with pytest.raises(ValidationError):
        document_ingest(kb=kb, title="Empty", text="  ")


@pytest.mark.django_db
def test_document_upload_through_the_admin_ingests_chunks(client, django_user_model):
    admin_user = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin_user)
    kb = KnowledgeBase.objects.create(name="KB", slug="kb")
    upload = SimpleUploadedFile("notes.txt", ("Context compression keeps runs small. " * 40).encode())
    response = client.post(
        reverse("admin:agent_platform_document_add"),
        {"kb": kb.pk, "title": "Notes", "source": "", "file": upload, "text": ""},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    document = Document.objects.get(title="Notes")
    assert document.filename == "notes.txt"
    assert document.text.startswith("Context compression")
    assert document.chunks.count() >= 2

    bad = SimpleUploadedFile("notes.exe", b"MZ")
    response = client.post(
        reverse("admin:agent_platform_document_add"), {"kb": kb.pk, "title": "Bad", "file": bad, "text": ""}
    )
    assert response.status_code == 200
    assert not Document.objects.filter(title="Bad").exists()
    changelist = client.get(reverse("admin:agent_platform_document_changelist"))
    assert changelist.status_code == 200


@pytest.mark.django_db
def test_document_inline_on_the_knowledge_base_admin_ingests(client, django_user_model):
    admin_user = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:agent_platform_knowledgebase_add"),
        {
            "name": "Guide",
            "slug": "guide",
            "description": "",
            "documents-TOTAL_FORMS": "1",
            "documents-INITIAL_FORMS": "0",
            "documents-MIN_NUM_FORMS": "0",
            "documents-MAX_NUM_FORMS": "1000",
            "documents-0-title": "Budget",
            "documents-0-source": "",
            "documents-0-text": "The budget is one number.",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    kb = KnowledgeBase.objects.get(slug="guide")
    assert list(kb.chunks.values_list("content", flat=True)) == ["The budget is one number."]
    assert client.get(reverse("admin:agent_platform_knowledgebase_changelist")).status_code == 200


@pytest.mark.django_db
def test_demo_seed_creates_the_knowledge_base_once():
    from agent_platform.seed import demo_seed

    first = demo_seed(password="pw")
    kb = KnowledgeBase.objects.get(slug="platform-guide")
    count = kb.chunks.count()
    assert count >= 5 and any("knowledge base" in line for line in first.report_lines())
    second = demo_seed(password="pw")
    assert kb.chunks.count() == count
    assert not any("document" in item for item in second.created)

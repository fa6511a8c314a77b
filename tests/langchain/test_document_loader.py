"""OpenKoiDocumentLoader: the core's loaders as LangChain Documents, with ingest's metadata and failures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_openkoi import OpenKoiDocumentLoader, OpenKoiVectorStore
from shared_core.config import KnowledgeBaseConfig
from shared_core.documents import DocumentError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from docfiles import make_docx, make_pdf, truncate  # noqa: E402

FILE_KEYS = {"source", "file_name", "content_type", "size_bytes"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    make_pdf(root / "report.pdf", ["Invoices are due within 30 days", "Webhooks are signed with HMAC"],
             title="Quarterly report", author="Ada Lovelace")
    make_docx(root / "handbook.docx")
    write(root / "people.csv", "name,team\nGrace,compilers\nLinus,kernels\n")
    write(root / "notes" / "deploy.md", "---\ntitle: Deploy guide\n---\n# Staging\n\nDeploy to staging first.\n\n"
                                        "# Production\n\nThe release captain promotes the build.\n")
    write(root / "notes" / "todo.txt", "Renew the TLS certificate before March.")
    write(root / ".hidden" / "secret.txt", "not read")
    write(root / "picture.png", "not a document")
    return root


def test_file_documents_carry_what_ingest_records(store, folder):
    documents = OpenKoiDocumentLoader(folder).load()
    by_name = {d.metadata["file_name"]: d for d in documents}
    assert sorted(by_name) == ["deploy.md", "handbook.docx", "people.csv", "report.pdf", "todo.txt"]
    report = store.documents.ingest(folder)
    assert report.ok and len(report.added) == 5
    for stored in report.added:  # the document record ingest writes, field for field
        doc = by_name[stored.file_name]
        assert isinstance(doc, Document) and doc.page_content == store.documents.get_full_document(stored.id)
        assert {k: v for k, v in doc.metadata.items() if k not in FILE_KEYS} == stored.metadata
        assert doc.metadata["source"] == stored.blob_path == doc.id
        assert doc.metadata["content_type"] == stored.content_type
        assert doc.metadata["size_bytes"] == stored.size_bytes
    pdf = by_name["report.pdf"]
    assert pdf.metadata["title"] == "Quarterly report" and pdf.metadata["page_count"] == 2
    assert pdf.metadata["format"] == "pdf" and pdf.metadata["author"] == "Ada Lovelace"


def test_chunks_are_the_knowledge_base_chunks(store, folder):
    settings = KnowledgeBaseConfig(chunk_size=40, chunk_overlap=10)
    chunks = OpenKoiDocumentLoader(folder / "notes" / "deploy.md", mode="chunks", knowledge_base=settings).load()
    store.config.knowledge_base.chunk_size, store.config.knowledge_base.chunk_overlap = 40, 10
    (document,) = store.documents.ingest(folder / "notes" / "deploy.md").added
    stored = store.documents.get_chunks(document.id)
    assert [c.page_content for c in chunks] == [c.content for c in stored] and len(chunks) > 2
    indexed = [store.get(f"{document.id}:{c.chunk_index}") for c in stored]
    for chunk, memory in zip(chunks, indexed, strict=True):
        # the chunk metadata ingest puts on the index entry (less the document id), plus the file's
        expected = {k: v for k, v in memory.metadata.items() if k != "document_id"}
        assert {k: chunk.metadata[k] for k in expected} == expected
        assert chunk.metadata["title"] == "Deploy guide" and chunk.metadata["format"] == "markdown"
        assert chunk.id == f"{folder / 'notes' / 'deploy.md'}:{chunk.metadata['chunk_index']}"
    assert chunks[-1].metadata["heading"] == "Production"


def test_sections_give_one_document_per_page_or_heading(folder):
    pages = OpenKoiDocumentLoader(folder / "report.pdf", mode="sections").load()
    assert [d.page_content for d in pages] == ["Invoices are due within 30 days", "Webhooks are signed with HMAC"]
    assert [d.metadata["page"] for d in pages] == [1, 2] and all(d.metadata["title"] == "Quarterly report"
                                                                  for d in pages)
    assert [d.id for d in pages] == [f"{folder / 'report.pdf'}:{i}" for i in range(2)]
    sections = OpenKoiDocumentLoader(folder / "notes" / "deploy.md", mode="sections").load()
    assert [d.metadata.get("heading") for d in sections][-2:] == ["Staging", "Production"]
    # a text file has no sections: one document
    (todo,) = OpenKoiDocumentLoader(folder / "notes" / "todo.txt", mode="sections").load()
    assert todo.page_content == "Renew the TLS certificate before March."


def test_folders_are_walked_like_ingest(folder):
    loader = OpenKoiDocumentLoader(folder, include="*.md")
    assert [d.metadata["file_name"] for d in loader.load()] == ["deploy.md"]
    assert any(why == "not matched by --include" for _, why in loader.skipped)
    flat = OpenKoiDocumentLoader([folder], recursive=False, exclude=["*.csv"])
    assert sorted(d.metadata["file_name"] for d in flat.load()) == ["handbook.docx", "report.pdf"]
    assert (str(folder / "picture.png"), "unsupported type") in flat.skipped


def test_bad_files_are_reported_per_file_as_ingest_reports_them(store, tmp_path, folder):
    bad = tmp_path / "bad"
    write(bad / "empty.txt", "")
    write(bad / "old.doc", "binary word")
    write(bad / "fake.pdf", "plain text pretending")
    truncate(bad / "cut.pdf", folder / "report.pdf")
    write(bad / "fine.txt", "This one is fine.")
    paths = [bad / "empty.txt", bad / "old.doc", bad / "fake.pdf", bad / "cut.pdf", bad / "missing.md", bad / "fine.txt"]
    loader = OpenKoiDocumentLoader(paths)
    assert [d.page_content for d in loader.load()] == ["This one is fine."]  # the others did not stop it
    report = store.documents.ingest(paths)
    assert sorted((f.path, f.reason, f.message) for f in loader.failed) == sorted(
        (f.path, f.reason, f.message) for f in report.failed)
    assert {f.reason for f in loader.failed} == {"empty", "unsupported", "wrong-extension", "corrupt", "unreadable"}
    assert str(loader.failed[0]).startswith(str(bad))  # "<path>: <what is wrong and what to do>"


def test_raise_on_error_and_bad_arguments(tmp_path):
    write(tmp_path / "old.doc", "binary word")
    with pytest.raises(DocumentError, match=r"old\.doc: is an old binary Word file; open it and save it as \.docx"):
        OpenKoiDocumentLoader(tmp_path / "old.doc", raise_on_error=True).load()
    with pytest.raises(ValueError, match="mode must be one of file, sections, chunks"):
        OpenKoiDocumentLoader(tmp_path, mode="pages")
    with pytest.raises(ValueError, match="at least one"):
        OpenKoiDocumentLoader([])
    write(tmp_path / "big.txt", "x" * 5000)
    small = OpenKoiDocumentLoader(tmp_path / "big.txt", knowledge_base=KnowledgeBaseConfig(max_file_bytes=1000))
    assert small.load() == [] and small.failed[0].reason == "too-large"


def test_lazy_loading_reads_one_file_at_a_time(folder, monkeypatch):
    import shared_core.documents.loaders as loaders  # the walk every reader shares

    loaded = []
    original = loaders.load_document
    monkeypatch.setattr(loaders, "load_document", lambda path, **kw: loaded.append(path) or original(path, **kw))
    documents = OpenKoiDocumentLoader(folder).lazy_load()
    first = next(documents)
    assert isinstance(first, Document) and len(loaded) == 1
    assert len(list(documents)) == 4 and len(loaded) == 5


async def test_async_loading_and_a_vector_store(folder, store):
    documents = [d async for d in OpenKoiDocumentLoader(folder / "notes", mode="chunks").alazy_load()]
    assert sorted(d.metadata["file_name"] for d in documents) == ["deploy.md", "todo.txt"]
    vectors = OpenKoiVectorStore(store=store, namespace="kb")
    vectors.add_documents(documents)
    vectors.add_documents(OpenKoiDocumentLoader(folder / "notes", mode="chunks").load())  # ids upsert
    assert store.count(namespace="kb") == len(documents)
    found = vectors.similarity_search("The release captain promotes the build.", k=1)[0]
    assert "release captain" in found.page_content and found.metadata["file_name"] == "deploy.md"

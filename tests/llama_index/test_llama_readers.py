"""OpenKoiReader: the core's loaders as LlamaIndex Documents, with the knowledge base's metadata and failures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from llama_index.core.schema import Document, MetadataMode

from llama_index_openkoi import OpenKoiReader
from shared_core.documents import DocumentError, Limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from docfiles import make_docx, make_pdf, truncate  # noqa: E402

FILE_KEYS = {"file_path", "file_name", "file_type", "file_size"}


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


def test_documents_carry_the_knowledge_base_metadata(store, folder):
    documents = OpenKoiReader().load_data(folder)
    by_name = {d.metadata["file_name"]: d for d in documents}
    assert sorted(by_name) == ["deploy.md", "handbook.docx", "people.csv", "report.pdf", "todo.txt"]
    report = store.documents.ingest(folder)
    assert report.ok and len(report.added) == 5
    for stored in report.added:  # what ingest records about a file is exactly what the reader attaches
        doc = by_name[stored.file_name]
        assert {k: v for k, v in doc.metadata.items() if k not in FILE_KEYS} == stored.metadata
        assert doc.metadata["file_path"] == stored.blob_path == doc.id_
        assert doc.metadata["file_type"] == stored.content_type and doc.metadata["file_size"] == stored.size_bytes
        assert doc.text == store.documents.get_full_document(stored.id)
    pdf = by_name["report.pdf"]
    assert pdf.metadata["title"] == "Quarterly report" and pdf.metadata["page_count"] == 2
    assert by_name["deploy.md"].metadata["title"] == "Deploy guide"


def test_the_llm_and_the_embedder_see_title_and_location_not_bookkeeping(folder):
    (pdf,) = OpenKoiReader().load_data(folder / "report.pdf", extra_info={"project": "falcon"})
    shown = pdf.get_content(metadata_mode=MetadataMode.LLM)
    assert "title: Quarterly report" in shown and "project: falcon" in shown
    assert "file_path" not in shown and "page_count" not in shown
    assert pdf.get_content(metadata_mode=MetadataMode.EMBED).count("file_size") == 0
    assert pdf.metadata["project"] == "falcon"


def test_split_sections_gives_one_document_per_page_or_heading(folder):
    pages = OpenKoiReader(split_sections=True).load_data(folder / "report.pdf")
    assert [d.text for d in pages] == ["Invoices are due within 30 days", "Webhooks are signed with HMAC"]
    assert [d.metadata["page"] for d in pages] == [1, 2]
    assert [d.id_ for d in pages] == [f"{folder / 'report.pdf'}_part_{i}" for i in range(2)]
    sections = OpenKoiReader(split_sections=True).load_data(folder / "notes" / "deploy.md")
    assert [d.metadata.get("heading") for d in sections][-2:] == ["Staging", "Production"]
    assert "release captain" in sections[-1].text
    assert "heading: Production" in sections[-1].get_content(metadata_mode=MetadataMode.LLM)


def test_folders_are_walked_like_ingest(folder):
    reader = OpenKoiReader(include="*.md")
    assert [d.metadata["file_name"] for d in reader.load_data(folder)] == ["deploy.md"]
    assert any(why == "not matched by --include" for _, why in reader.skipped)
    flat = OpenKoiReader(recursive=False, exclude=["*.csv"])
    assert sorted(d.metadata["file_name"] for d in flat.load_data([folder])) == ["handbook.docx", "report.pdf"]
    assert (str(folder / "picture.png"), "unsupported type") in flat.skipped
    assert (str(folder / "people.csv"), "matched by --exclude") in flat.skipped


def test_bad_files_are_reported_as_ingest_reports_them(store, tmp_path, folder):
    bad = tmp_path / "bad"
    write(bad / "empty.txt", "")
    write(bad / "old.doc", "binary word")
    write(bad / "fake.pdf", "plain text pretending")
    truncate(bad / "cut.pdf", folder / "report.pdf")
    write(bad / "fine.txt", "This one is fine.")
    paths = [bad / "empty.txt", bad / "old.doc", bad / "fake.pdf", bad / "cut.pdf", bad / "missing.md", bad / "fine.txt"]
    reader = OpenKoiReader()
    documents = reader.load_data(paths)
    assert [d.text for d in documents] == ["This one is fine."]  # the others did not stop it
    report = store.documents.ingest(paths)
    assert sorted((f.path, f.reason, f.message) for f in reader.failed) == sorted(
        (f.path, f.reason, f.message) for f in report.failed)
    assert {f.reason for f in reader.failed} == {"empty", "unsupported", "wrong-extension", "corrupt", "unreadable"}
    assert all(f.message for f in reader.failed)


def test_raise_on_error_raises_the_loader_error(tmp_path):
    write(tmp_path / "old.doc", "binary word")
    with pytest.raises(DocumentError, match=r"old\.doc: is an old binary Word file; open it and save it as \.docx") as info:
        OpenKoiReader(raise_on_error=True).load_data(tmp_path / "old.doc")
    assert info.value.reason == "unsupported"
    with pytest.raises(DocumentError, match="does not exist"):
        OpenKoiReader(raise_on_error=True).load_data(tmp_path / "nope.txt")


def test_limits_apply(tmp_path, store):
    write(tmp_path / "big.txt", "x" * 5000)
    reader = OpenKoiReader(limits=Limits(max_file_bytes=1000))
    assert reader.load_data(tmp_path / "big.txt") == [] and reader.failed[0].reason == "too-large"
    config_limits = OpenKoiReader(limits=store.config.knowledge_base)  # a store's settings work too
    assert len(config_limits.load_data(tmp_path / "big.txt")) == 1


def test_lazy_loading_reads_one_file_at_a_time(folder, monkeypatch):
    import shared_core.documents.loaders as readers  # the walk every reader shares

    loaded = []
    original = readers.load_document
    monkeypatch.setattr(readers, "load_document", lambda path, **kw: loaded.append(path) or original(path, **kw))
    documents = OpenKoiReader().lazy_load_data(folder)
    first = next(documents)
    assert isinstance(first, Document) and len(loaded) == 1
    assert len(list(documents)) == 4 and len(loaded) == 5


async def test_async_loading(folder):
    documents = await OpenKoiReader().aload_data(folder / "notes")
    assert sorted(d.metadata["file_name"] for d in documents) == ["deploy.md", "todo.txt"]

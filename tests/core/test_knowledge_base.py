"""The knowledge base: ingest, re-ingest, failures, search with the threshold, read, list, delete, erase, CLI."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from docfiles import (
    Ticks,
    docx_with_body,
    make_docx,
    make_encrypted_pdf,
    make_pdf,
    make_pptx,
    make_xlsx,
    make_zip_bomb,
    truncate,
    xlsx_rows,
)

from shared_core import HashingEmbedder, MemoryStore, NotFoundError
from shared_core.cli import main
from shared_core.documents import Document, IngestReport, KnowledgeBase, KnowledgeHit

LOREM = ("Deploys run through the staging cluster first. The release captain checks the dashboards, "
         "then promotes the build. Rollbacks use the previous tag and take about four minutes. ")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def rag_counts(store, namespace=None):
    where, params = ("WHERE namespace = ?", (namespace,)) if namespace else ("", ())
    return (store.db.scalar(f"SELECT count(*) FROM rag_documents {where}", params),
            store.db.scalar(f"SELECT count(*) FROM rag_chunks {where}", params))


def index_count(store, namespace="default"):
    return store.count(kind="document", namespace=namespace)


@pytest.fixture
def corpus(tmp_path):
    """A folder with one good file of each type, some broken files, and things a walk passes over."""
    root = tmp_path / "docs"
    root.mkdir()
    good_pdf = make_pdf(root / "report.pdf", ["Invoices are due within 30 days", "HMAC signatures protect webhooks"],
                        title="Quarterly report", author="Ada Lovelace")
    make_docx(root / "handbook.docx")
    make_xlsx(root / "budget.xlsx")
    make_pptx(root / "launch.pptx")
    write(root / "people.csv", "name,team\nGrace,compilers\nLinus,kernels\n")
    write(root / "notes" / "deploy.md", "# Deploy guide\n\n" + LOREM * 12)
    write(root / "notes" / "todo.txt", "Renew the TLS certificate before March.")
    broken = root / "broken"
    broken.mkdir()
    truncate(broken / "cut.pdf", good_pdf)
    make_encrypted_pdf(broken / "locked.pdf", good_pdf, user_password="secret")
    make_zip_bomb(broken / "bomb.docx", "word/document.xml")
    write(broken / "empty.txt", "")
    write(broken / "fake.pdf", "this is not a PDF at all")
    write(root / "image.png", "not read")
    write(root / ".hidden" / "secret.txt", "never ingested")
    return root


# -- ingest ----------------------------------------------------------------------------------------


def test_store_documents_is_one_knowledge_base(store):
    assert isinstance(store.documents, KnowledgeBase) and store.documents is store.documents


def test_ingest_folder_reports_each_bad_file_and_keeps_the_rest(store, corpus):
    report = store.documents.ingest(corpus)
    assert isinstance(report, IngestReport)
    assert sorted(d.file_name for d in report.added) == [
        "budget.xlsx", "deploy.md", "handbook.docx", "launch.pptx", "people.csv", "report.pdf", "todo.txt"]
    assert {f.path.rsplit("/", 1)[-1]: f.reason for f in report.failed} == {
        "cut.pdf": "corrupt", "locked.pdf": "encrypted", "bomb.docx": "zip-bomb", "empty.txt": "empty",
        "fake.pdf": "wrong-extension"}
    assert all(f.message for f in report.failed) and not report.ok
    assert [s[1] for s in report.skipped] == ["unsupported type"]  # image.png; .hidden is never walked
    # nothing of a failed file is stored, and the three places agree
    total_chunks = sum(d.total_chunks for d in report.added)
    assert report.chunks == total_chunks == index_count(store)
    assert rag_counts(store) == (7, total_chunks)
    assert report.pages == 2 and report.characters > 1000
    assert "7 added" in report.summary() and "5 failed" in report.summary()


def test_document_rows_carry_seed_003_fields(store, corpus, clock):
    store.documents.ingest(corpus / "report.pdf")
    row = store.db.query(
        "SELECT id, namespace, file_name, content_type, size_bytes, total_chunks, blob_path, uploaded_at, metadata "
        "FROM rag_documents")[0]
    doc_id, namespace, file_name, content_type, size, total, blob, uploaded, metadata = row
    assert (namespace, file_name, content_type) == ("default", "report.pdf", "application/pdf")
    assert size == (corpus / "report.pdf").stat().st_size and total == 1
    assert blob == str((corpus / "report.pdf").resolve())
    assert uploaded == "2026-01-01T00:00:00.000000Z"  # the core's ISO form
    meta = json.loads(metadata)
    assert (meta["title"], meta["author"], meta["page_count"], meta["format"]) == (
        "Quarterly report", "Ada Lovelace", 2, "pdf")
    chunk_row = store.db.query("SELECT id, document_id, namespace, chunk_index, metadata FROM rag_chunks")[0]
    assert chunk_row[1] == doc_id and chunk_row[3] == 0 and json.loads(chunk_row[4])["page_end"] == 2
    memory = store.get(chunk_row[0])
    assert memory.kind == "document" and memory.owner_id == doc_id and memory.source == "report.pdf"
    assert memory.metadata["document_id"] == doc_id and memory.metadata["page"] == 1
    assert memory.metadata["title"] == "Quarterly report"


def test_unchanged_file_is_a_no_op(store, corpus, clock):
    first = store.documents.ingest(corpus / "notes")
    rowids = {m.id: m.rowid for m in store.list(kind="document")}
    clock.advance(days=1)
    again = store.documents.ingest(corpus / "notes")
    assert not again.added and not again.updated and not again.failed
    assert sorted(d.id for d in again.unchanged) == sorted(d.id for d in first.added)
    assert {m.id: m.rowid for m in store.list(kind="document")} == rowids
    assert all(d.updated_at == first.added[0].updated_at for d in store.documents.list_documents())


def test_changed_file_replaces_its_chunks_and_keeps_its_id(store, tmp_path, clock):
    path = write(tmp_path / "policy.md", "# Policy\n\nThe office closes at 6pm on weekdays.")
    (original,) = store.documents.ingest(path).added
    clock.advance(days=2)
    write(path, "# Policy\n\nThe office closes at 8pm, and on Saturdays at noon. " + LOREM * 10)
    report = store.documents.ingest(path)
    (changed,) = report.updated
    assert changed.id == original.id and changed.total_chunks > 1
    assert changed.uploaded_at == original.uploaded_at and changed.updated_at > original.updated_at
    assert index_count(store) == changed.total_chunks == rag_counts(store)[1]
    assert not store.search("6pm", kind="document", fusion="keyword")
    assert store.documents.search_knowledge_base("Saturdays noon")[0].document_id == original.id
    assert "8pm" in store.documents.get_full_document(original.id)


def test_a_failing_write_leaves_the_old_version_whole(store, tmp_path, monkeypatch):
    path = write(tmp_path / "plan.txt", "Plan A: migrate the database on Monday.")
    (document,) = store.documents.ingest(path).added
    write(path, "Plan B: migrate the database on Friday. " + LOREM * 20)

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(store.memories, "add_many", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.documents.ingest(path)
    assert store.documents.get_document(document.id).content_hash == document.content_hash
    assert store.documents.get_full_document(document.id).startswith("Plan A")
    assert [c.content for c in store.documents.get_chunks(document.id)] == ["Plan A: migrate the database on Monday."]
    assert index_count(store) == 1 and rag_counts(store) == (1, 1)
    new = write(tmp_path / "new.txt", "A brand new file")
    with pytest.raises(RuntimeError):
        store.documents.ingest(new)
    assert rag_counts(store) == (1, 1) and index_count(store) == 1


def test_chunks_are_written_in_batches_and_a_document_is_never_split(tmp_path, clock, monkeypatch):
    config = {"knowledge_base": {"batch_size": 3, "chunk_size": 60, "chunk_overlap": 0}}
    with MemoryStore.open(":memory:", clock=clock, config=config) as store:
        sentences = lambda n: " ".join(f"Sentence {i} is about topic {i}." for i in range(n))  # noqa: E731
        for name, n in (("a", 3), ("b", 3), ("c", 14), ("d", 1)):
            write(tmp_path / "in" / f"{name}.txt", sentences(n))
        batches = []
        original = KnowledgeBase._write

        def spy(self, batch, *args):
            batches.append([len(item.chunks) for item in batch])
            return original(self, batch, *args)

        monkeypatch.setattr(KnowledgeBase, "_write", spy)
        report = store.documents.ingest(tmp_path / "in")
        sizes = [sum(b) for b in batches if b]
        assert len(sizes) >= 3 and all(size >= 3 for size in sizes[:-1])
        assert [n for b in batches for n in b] == [d.total_chunks for d in report.added]
        assert max(d.total_chunks for d in report.added) > 3  # the big one went in a batch of its own
        assert index_count(store) == sum(sizes)


def test_changing_the_chunking_re_chunks_on_the_next_ingest(tmp_path, clock):
    path = write(tmp_path / "long.txt", LOREM * 30)
    db = tmp_path / "kb.db"
    with MemoryStore.open(db, clock=clock, config={}) as store:
        (first,) = store.documents.ingest(path).added
    with MemoryStore.open(db, clock=clock, config={"knowledge_base": {"chunk_size": 400, "chunk_overlap": 50}}) as store:
        (again,) = store.documents.ingest(path).updated
        assert again.id == first.id and again.chunker == "characters:400/50"
        assert again.total_chunks > first.total_chunks
        assert index_count(store) == again.total_chunks


def test_force_re_reads_unchanged_files(store, tmp_path):
    path = write(tmp_path / "a.txt", "some text")
    store.documents.ingest(path)
    assert len(store.documents.ingest(path, force=True).updated) == 1


def test_include_exclude_recursive_and_missing_paths(store, corpus, tmp_path):
    report = store.documents.ingest(corpus, include=["*.md", "notes/*"], exclude="todo*")
    assert [d.file_name for d in report.added] == ["deploy.md"]
    report = store.documents.ingest(corpus, recursive=False, include="*.csv")
    assert [d.file_name for d in report.added] == ["people.csv"]
    report = store.documents.ingest([tmp_path / "nowhere", corpus / "image.png"])
    assert [(f.path.rsplit("/", 1)[-1], f.reason) for f in report.failed] == [
        ("nowhere", "unreadable"), ("image.png", "unsupported")]
    with pytest.raises(ValueError, match="glob"):
        store.documents.ingest(corpus, include=[""])


def test_progress_is_reported_and_the_library_prints_nothing(store, corpus, capsys):
    calls = []
    report = store.documents.ingest(corpus / "notes", progress=lambda *args: calls.append(args))
    assert [c[:2] for c in calls] == [(1, 2), (2, 2)]
    assert calls[0][2].endswith("deploy.md")
    assert len(report.added) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_ingest_text_adds_and_replaces_by_name(store, clock):
    document = store.documents.ingest_text("Focus people: Grace. Topics: compilers.", name="memory.txt",
                                           metadata={"kind": "insight-settings"})
    assert document.file_name == "memory.txt" and document.metadata["kind"] == "insight-settings"
    assert store.documents.ingest_text("Focus people: Grace. Topics: compilers.", name="memory.txt").id == document.id
    clock.advance(hours=1)
    replaced = store.documents.ingest_text("Focus people: Linus. Topics: kernels.", name="memory.txt")
    assert replaced.id == document.id and store.documents.count_documents() == 1
    assert store.documents.search_knowledge_base("kernels")[0].document_id == document.id
    with pytest.raises(ValueError, match="empty"):
        store.documents.ingest_text("  ", name="x.txt")


# -- query -------------------------------------------------------------------------------------------


def test_search_finds_the_right_chunk_with_its_place(store, corpus):
    store.documents.ingest(corpus)
    (hit, *_) = store.documents.search_knowledge_base("HMAC signatures webhooks")
    assert isinstance(hit, KnowledgeHit)
    assert hit.file_name == "report.pdf" and hit.metadata["page"] == 1 and hit.metadata["page_end"] == 2
    assert hit.keyword == 1.0 and hit.similarity is not None and hit.hit is not None
    launch = store.documents.search_knowledge_base("weather constraints")[0]
    assert launch.file_name == "launch.pptx" and launch.metadata["slide"] == 1
    budget = store.documents.search_knowledge_base("Laptops cost")[0]
    assert budget.file_name == "budget.xlsx" and budget.metadata["sheet"] == "Budget"
    handbook = store.documents.search_knowledge_base("VPN helpdesk")[0]
    assert handbook.file_name == "handbook.docx"
    assert (handbook.metadata["heading"], handbook.metadata["heading_end"]) == ("Onboarding", "Policies")


def test_search_limit_and_document_filter(store, tmp_path):
    ids = {}
    for name in ("a", "b", "c"):
        path = write(tmp_path / f"{name}.txt", "\n\n".join(f"Shared deploy note {i} for {name}. " + LOREM for i in range(30)))
        ids[name] = store.documents.ingest(path).added[0].id
    assert len(store.documents.search_knowledge_base("deploy note")) == 5
    assert len(store.documents.search_knowledge_base("deploy note", limit=12)) == 12
    only_b = store.documents.search_knowledge_base("deploy note", limit=20, document_ids=[ids["b"]])
    assert only_b and {h.document_id for h in only_b} == {ids["b"]}
    assert store.documents.search_knowledge_base("deploy note", document_ids=[]) == []
    assert store.documents.search_knowledge_base("deploy note", limit=0) == []
    with pytest.raises(ValueError, match="query"):
        store.documents.search_knowledge_base("   ")


def test_threshold_is_per_embedder_and_configurable(store, tmp_path, fake_embedder):
    assert store.documents.similarity_threshold == 0.65  # the default static embedder's measured value
    with MemoryStore.open(":memory:", embedder=HashingEmbedder()) as other:
        assert other.documents.similarity_threshold == 0.35  # the hashing embedder's
    with MemoryStore.open(":memory:", embedder=fake_embedder, config={}) as other:
        assert other.documents.similarity_threshold == 0.7  # seed 003, for sentence models
    with MemoryStore.open(":memory:", config={"knowledge_base": {"similarity_threshold": 0.5}}) as other:
        assert other.documents.similarity_threshold == 0.5


def test_strong_keyword_match_survives_a_threshold_its_vector_misses(store, tmp_path):
    store.documents.ingest(write(tmp_path / "sec.txt", "Webhook payloads carry an HMAC signature. " + LOREM * 4))
    store.config.knowledge_base.similarity_threshold = 1.0
    (hit,) = store.documents.search_knowledge_base("HMAC signature")
    assert hit.similarity < 1.0 and hit.keyword == 1.0


def test_weak_keyword_match_is_dropped_unless_the_vector_side_vouches(store, tmp_path):
    words = ["alpha bravo charlie", "delta echo foxtrot", "golf hotel india", "juliet kilo lima", "mike november"]
    for i, text in enumerate(words):
        store.documents.ingest_text(text, name=f"{i}.txt")
    store.config.knowledge_base.similarity_threshold = 1.0
    hits = store.documents.search_knowledge_base("alpha delta echo foxtrot")
    assert [h.text for h in hits] == ["delta echo foxtrot"]  # alpha alone is a quarter of the query
    assert hits[0].keyword == pytest.approx(0.75)
    store.config.knowledge_base.keyword_strength = 0.2
    assert [h.text for h in store.documents.search_knowledge_base("alpha delta echo foxtrot")] == [
        "delta echo foxtrot", "alpha bravo charlie"]


class TopicEmbedder:
    """Words of one topic share a direction; everything else is a per-word direction of its own."""

    name = "topic-embedder"
    dims = 32
    topics = {"cat": 0, "cats": 0, "kitten": 0, "feline": 0, "rocket": 1, "launch": 1, "liftoff": 1}

    def embed(self, texts):
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, self.topics.get(word, 2 + sum(map(ord, word)) % (self.dims - 2))] += 1.0
            out[i] /= np.linalg.norm(out[i]) or 1.0
        return out


def test_vector_side_admits_only_above_the_threshold():
    with MemoryStore.open(":memory:", embedder=TopicEmbedder(), config={}) as store:
        store.documents.ingest_text("cats purr", name="pets.txt")
        store.documents.ingest_text("rocket liftoff", name="space.txt")
        similarity = float(store.embed(["kitten"])[0] @ store.embed(["cats purr"])[0])
        assert 0.5 < similarity < 0.9
        store.config.knowledge_base.similarity_threshold = similarity - 0.01
        (hit,) = store.documents.search_knowledge_base("kitten")  # no shared word: the vector side found it
        assert hit.file_name == "pets.txt" and hit.keyword == 0.0
        store.config.knowledge_base.similarity_threshold = similarity + 0.01
        assert store.documents.search_knowledge_base("kitten") == []


def test_search_tracks_access_only_for_returned_chunks(store, tmp_path):
    store.documents.ingest_text("alpha beta", name="a.txt")
    store.documents.ingest_text("gamma delta", name="b.txt")
    store.documents.search_knowledge_base("alpha")
    counts = {m.text: m.access_count for m in store.list(kind="document")}
    assert counts == {"alpha beta": 1, "gamma delta": 0}


def test_namespaces_are_separate(store, tmp_path):
    path = write(tmp_path / "shared.txt", "The launch code is tangerine.")
    a = store.documents.ingest(path, namespace="user:alice").added[0]
    b = store.documents.ingest(path, namespace="user:bob").added[0]
    assert a.id != b.id
    assert store.documents.search_knowledge_base("tangerine", namespace="user:alice")[0].document_id == a.id
    assert store.documents.search_knowledge_base("tangerine") == []
    assert [d.id for d in store.documents.list_documents(namespace="user:bob")] == [b.id]
    assert len(store.documents.list_documents(namespace=None)) == 2
    with pytest.raises(NotFoundError):
        store.documents.get_document(a.id, namespace="user:bob")


# -- read, list, delete, erase --------------------------------------------------------------------


def test_full_document_chunks_list_and_delete(store, corpus, clock):
    pdf = store.documents.ingest(corpus / "report.pdf").added[0]
    clock.advance(minutes=5)
    md = store.documents.ingest(corpus / "notes" / "deploy.md").added[0]
    assert store.documents.get_full_document(pdf.id) == "Invoices are due within 30 days\n\nHMAC signatures protect webhooks"
    chunks = store.documents.get_chunks(md.id)
    text = store.documents.get_full_document(md.id)
    assert [c.chunk_index for c in chunks] == list(range(md.total_chunks))
    assert all(text[c.start:c.end] == c.content for c in chunks)
    assert [d.id for d in store.documents.list_documents()] == [md.id, pdf.id]  # most recent first
    assert [d.id for d in store.documents.list_documents(1)] == [md.id]
    assert isinstance(store.documents.get_document(pdf.id), Document)
    assert store.documents.delete_document(md.id) is True
    assert index_count(store) == pdf.total_chunks and rag_counts(store) == (1, pdf.total_chunks)
    assert not store.search("release captain", kind="document", fusion="keyword")
    with pytest.raises(NotFoundError, match="list_documents"):
        store.documents.get_full_document(md.id)
    assert store.documents.delete_document(md.id, missing_ok=True) is False
    with pytest.raises(NotFoundError):
        store.documents.delete_document("nope")


def test_erase_namespace_removes_knowledge_base_rows_in_a_fresh_process(tmp_path, clock):
    db = tmp_path / "kb.db"
    with MemoryStore.open(db, clock=clock, config={}) as store:
        store.documents.ingest(write(tmp_path / "alice.txt", "Alice is allergic to penicillin."), namespace="user:alice")
        store.documents.ingest(write(tmp_path / "bob.txt", "Bob drinks green tea."), namespace="user:bob")
    with MemoryStore.open(db, clock=clock, config={}) as store:  # .documents never touched before the erase
        store.erase_namespace("user:alice")
        assert rag_counts(store, "user:alice") == (0, 0)
        assert rag_counts(store, "user:bob") == (1, 1)
    if store.db.dialect == "sqlite":  # the file's bytes (PostgreSQL: test_postgres_backend.py)
        leftovers = b"".join(p.read_bytes() for p in tmp_path.rglob("*")  # the vector file in the data folder too
                             if p.is_file() and (p.name.startswith("kb.db") or "kb.db.files" in p.parts))
        assert b"penicillin" not in leftovers and b"green tea" in leftovers


# -- CLI ---------------------------------------------------------------------------------------------


def test_cli_ingest_and_kb_commands(tmp_path, corpus):
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    result = runner.invoke(main, ["--db", db, "ingest", str(corpus / "notes"), str(corpus / "broken" / "fake.pdf")])
    assert result.exit_code == 1, result.output
    assert "added" in result.output and "deploy.md" in result.output and "2 added" in result.output
    assert "fake.pdf" in result.output and "wrong-extension" in result.output
    result = runner.invoke(main, ["--db", db, "ingest", str(corpus / "notes")])
    assert result.exit_code == 0 and "2 unchanged" in result.output
    result = runner.invoke(main, ["--db", db, "kb", "search", "TLS certificate"])
    assert result.exit_code == 0 and "todo.txt" in result.output and "Renew the TLS" in result.output
    doc_id = re.search(r"\[doc:(\w+)\] todo\.txt", result.output).group(1)
    result = runner.invoke(main, ["--db", db, "kb", "list"])
    assert result.exit_code == 0 and "deploy.md" in result.output and "todo.txt" in result.output
    result = runner.invoke(main, ["--db", db, "kb", "show", doc_id])
    assert result.output.strip() == "Renew the TLS certificate before March."
    result = runner.invoke(main, ["--db", db, "kb", "show", doc_id, "--metadata"])
    assert json.loads(result.output)["file_name"] == "todo.txt"
    result = runner.invoke(main, ["--db", db, "kb", "delete", doc_id])
    assert result.exit_code == 0 and "deleted 1" in result.output
    result = runner.invoke(main, ["--db", db, "kb", "show", doc_id])
    assert result.exit_code == 1 and "NotFoundError" in result.output
    result = runner.invoke(main, ["--db", db, "ingest", str(corpus / "notes"), "--json"])
    assert json.loads(result.stdout)["added"][0]["file_name"] == "todo.txt"


def test_two_writers_ingesting_the_same_files_do_not_duplicate_them(tmp_path, clock):
    import threading

    db = tmp_path / "shared.db"
    for i in range(6):
        write(tmp_path / "in" / f"{i}.txt", f"Note {i}: " + LOREM * 3)
    MemoryStore.open(db, clock=clock, config={}).close()
    reports, errors = [], []

    def work():
        try:
            with MemoryStore.open(db, clock=clock, config={}) as store:
                reports.append(store.documents.ingest(tmp_path / "in"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(len(r.added) for r in reports) == 6
    assert sum(len(r.unchanged) for r in reports) == 6
    with MemoryStore.open(db, clock=clock, config={}) as store:
        assert store.documents.count_documents() == 6
        assert index_count(store) == rag_counts(store)[1] == sum(d.total_chunks for d in store.documents.list_documents())


def test_file_names_that_are_not_utf8_are_skipped_with_a_reason(store, tmp_path):
    import os

    folder = tmp_path / "names"
    write(folder / "fine.txt", "a fine file")
    with open(os.path.join(os.fsencode(folder), b"bad\xff.txt"), "wb") as fh:
        fh.write(b"bytes")
    report = store.documents.ingest(folder)
    assert [d.file_name for d in report.added] == ["fine.txt"]
    assert [why for _, why in report.skipped] == ["file name is not valid UTF-8; rename it"]


# -- bounded work per file (issue 25) ------------------------------------------------------------------


def test_files_past_the_limits_are_refused_with_the_setting_and_the_rest_is_ingested(tmp_path, clock):
    root = tmp_path / "inbox"
    root.mkdir()
    make_docx(root / "handbook.docx")
    make_xlsx(root / "budget.xlsx")
    write(root / "notes.txt", "Renew the TLS certificate before March.")
    docx_with_body(root / "blank.docx", "<w:p/>" * 5_000)  # 5,000 empty paragraphs in a 20 KB file
    xlsx_rows(root / "wide.xlsx", rows=100, columns=30)
    config = {"knowledge_base": {"max_paragraphs": 1_000, "max_cells": 1_000}}
    with MemoryStore.open(":memory:", clock=clock, config=config) as store:
        report = store.documents.ingest(root)
        assert sorted(d.file_name for d in report.added) == ["budget.xlsx", "handbook.docx", "notes.txt"]
        failed = {Path(f.path).name: f for f in report.failed}
        assert sorted(failed) == ["blank.docx", "wide.xlsx"]
        assert failed["blank.docx"].reason == failed["wide.xlsx"].reason == "too-large"
        assert failed["blank.docx"].message == ("has more than 1,000 paragraphs (limit 1,000); split the file, "
                                                "or raise knowledge_base.max_paragraphs")
        assert failed["wide.xlsx"].message.startswith("has more than 1,000 cells (limit 1,000);")
        assert str(failed["wide.xlsx"]).startswith(f"{root / 'wide.xlsx'}: has more than")  # the report names the file
        assert rag_counts(store) == (3, sum(d.total_chunks for d in report.added)) == (3, index_count(store))


def test_the_time_budget_is_per_file(tmp_path, clock):
    root = tmp_path / "inbox"
    root.mkdir()
    docx_with_body(root / "long.docx", "<w:p><w:r><w:t>one more line</w:t></w:r></w:p>" * 200)
    write(root / "short.txt", "A short note that reads in one step.")
    with MemoryStore.open(":memory:", clock=clock, config={"knowledge_base": {"max_seconds_per_file": 50}}) as store:
        store.documents.timer = Ticks()  # one second each time a budget looks at it
        report = store.documents.ingest(root)
        assert [d.file_name for d in report.added] == ["short.txt"]  # a new budget for each file
        (failure,) = report.failed
        assert failure.path.endswith("long.docx") and failure.reason == "too-large"
        assert failure.message.startswith("took more than 50 s to read")
        assert failure.message.endswith("raise knowledge_base.max_seconds_per_file")


def _hold_reading(monkeypatch, name: str) -> tuple[threading.Event, threading.Event, list[bool]]:
    """Make the ingest of the file ``name`` wait, in the middle of reading it, until released.

    Returns (reading: set once it waits, release: set it to let it go on, waited: [True] when it
    was released rather than given up on after 60 s).
    """
    from shared_core.documents import knowledge_base

    reading, release, waited = threading.Event(), threading.Event(), []
    real = knowledge_base.load_document

    def load_document(path, **kwargs):  # noqa: ANN001, ANN003, ANN202
        if Path(path).name == name:
            reading.set()
            waited.append(release.wait(60))
        return real(path, **kwargs)

    monkeypatch.setattr(knowledge_base, "load_document", load_document)
    return reading, release, waited


def _in_thread(run) -> tuple[threading.Thread, dict]:  # noqa: ANN001
    out: dict = {}

    def target() -> None:
        try:
            out["result"] = run()
        except BaseException as exc:  # pragma: no cover - reported by the test
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


def test_reading_a_file_holds_no_lock_other_threads_search_and_add_meanwhile(store, tmp_path, monkeypatch):
    write(tmp_path / "in" / "slow.md", "# Runbook\n\n" + LOREM)
    store.add("The staging cluster runs in Frankfurt", namespace="tenant-b")
    reading, release, waited = _hold_reading(monkeypatch, "slow.md")
    ingest, out = _in_thread(lambda: store.documents.ingest(tmp_path / "in", namespace="tenant-a"))
    assert reading.wait(60)
    try:  # the ingest is stopped in the middle of reading slow.md: everything else must go on
        added = store.add("Frankfurt has two racks", namespace="tenant-b")
        hits = store.search("Frankfurt", namespace="tenant-b")
        kb_hits = store.documents.search_knowledge_base("Frankfurt", namespace="tenant-b")
        listed = store.documents.list_documents(namespace="tenant-a")
    finally:
        release.set()
        ingest.join(60)
    assert waited == [True]  # it was let go by this thread, after the calls above had returned
    assert added.created and {h.memory.text for h in hits} == {"The staging cluster runs in Frankfurt",
                                                               "Frankfurt has two racks"}
    assert kb_hits == [] and listed == []
    assert "error" not in out and [d.file_name for d in out["result"].added] == ["slow.md"]


def test_another_tenants_ingest_is_written_while_a_file_is_still_being_read(store, tmp_path, monkeypatch):
    write(tmp_path / "a" / "slow.md", "# Tenant A\n\n" + LOREM)
    write(tmp_path / "b" / "fast.md", "# Tenant B\n\nThe backup window is at 02:00 UTC.")
    reading, release, waited = _hold_reading(monkeypatch, "slow.md")
    ingest, out = _in_thread(lambda: store.documents.ingest(tmp_path / "a", namespace="tenant-a"))
    assert reading.wait(60)
    try:
        report = store.documents.ingest(tmp_path / "b", namespace="tenant-b")
        found = store.documents.search_knowledge_base("backup window", namespace="tenant-b")
    finally:
        release.set()
        ingest.join(60)
    assert waited == [True]
    assert [d.file_name for d in report.added] == ["fast.md"] and found[0].file_name == "fast.md"
    assert "error" not in out and [d.file_name for d in out["result"].added] == ["slow.md"]

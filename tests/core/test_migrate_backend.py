"""``openkoi-memory migrate-backend``: a whole memory from SQLite to PostgreSQL and back, resumable."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from shared_core import ManualClock, MemoryStore
from shared_core.cli import main
from shared_core.db.transfer import TransferError, migrate_backend, verify

pytestmark = pytest.mark.postgres_only


def _fill(path, tmp_path):
    """A memory with something in every domain: facts, archive, messages, tasks, insights, kv, documents..."""
    clock = ManualClock("2026-01-01T00:00:00Z")
    with MemoryStore.open(path, clock=clock) as s:
        ids = s.add_many([{"text": f"fact {i} about the harbour crane {i % 5}", "tags": [f"t{i % 3}"],
                           "metadata": {"n": i, "team": ["ops", "dev"][i % 2]}, "namespace": "user:ann"}
                          for i in range(120)])
        s.reinforce(ids[0], namespace="user:ann")
        s.archive(ids[1:4], namespace="user:ann")
        s.search("harbour crane", namespace="user:ann")  # access counts and Hebbian links
        for i in range(12):
            s.conversations.append("chat-1", "user" if i % 2 == 0 else "assistant", f"message {i} about tides",
                                   namespace="user:ann")
        with s.tasks.start("Port the importer", category="refactor", namespace="user:ann") as task:
            task.cycle(0.6, "continue")
            task.finding("major", "tests", "flaky test")
            task.complete(final_score=0.8)
        s.learnings.add("Always pin the numpy version", type="heuristic", namespace="user:ann")
        s.insights.upsert("Budget review due", "numbers for Q3", namespace="user:ann")
        s.kv.put("settings", {"theme": "dark"}, namespace="user:ann")
        s.episodes.add("Deployed v2 to production", namespace="user:ann")
        doc = tmp_path / "handbook.txt"
        doc.write_text("The staging database is backed up nightly at 02:00.\n\nLunch is on Fridays.")
        s.documents.ingest(doc, namespace="user:ann")
        return {name: n for name, n in s.namespaces().items()}


def _snapshot(store):
    memories = sorted((m.to_dict() for m in store.list(namespace_prefix="", limit=None, include_superseded=True)),
                      key=lambda d: d["id"])
    archived = sorted(m.id for m in store.kernel.archive.select(
        __import__("shared_core").memories.scope_for(
            namespace=None, namespace_prefix="", kind=None, ids=None, where=None, tags=None, category=None,
            source=None, since=None, until=None, live_at=None, current_only=False)))
    return memories, archived


def test_sqlite_to_postgres_and_back(tmp_path, pg_url, sqlite_paths):
    source = tmp_path / "source.db"
    namespaces = _fill(source, tmp_path)
    report = migrate_backend(str(source), pg_url, batch_size=50)
    assert report.ok and not report.resumed, str(report)
    assert {c.table for c in report.checks} >= {"memory_chunks", "memory_archive", "raw_messages", "tasks",
                                                "insights", "kv_entries", "rag_documents", "memory_links"}
    with MemoryStore.open(source) as a, MemoryStore.open(pg_url) as b:
        assert b.namespaces() == namespaces == a.namespaces()
        assert _snapshot(a) == _snapshot(b)  # every field of every memory, archive included
        query = dict(namespace="user:ann", limit=10, track_access=False)
        assert b.search("harbour crane 3", fusion="vector", **query).ids == a.search(
            "harbour crane 3", fusion="vector", **query).ids  # the same vectors
        assert set(b.search("tides", fusion="keyword", **query).ids) == set(
            a.search("tides", fusion="keyword", **query).ids)
        assert b.archive.search("harbour", namespace="user:ann").ids
        assert b.conversations.count("chat-1") == 12 and b.kv.get("settings", namespace="user:ann") == {"theme": "dark"}
        assert b.documents.search_knowledge_base("when is staging backed up", namespace="user:ann")
        fresh = b.add("a new fact written after the move", namespace="user:ann")  # counters continue past the copy
        assert b.get(fresh).text.startswith("a new fact")
    back = tmp_path / "back.db"
    report = migrate_backend(pg_url, str(back))
    assert report.ok, str(report)
    with MemoryStore.open(back) as c, MemoryStore.open(pg_url) as b:
        assert _snapshot(c) == _snapshot(b)
        assert c.search("harbour crane 3", fusion="vector", namespace="user:ann", limit=5, track_access=False).ids == \
            b.search("harbour crane 3", fusion="vector", namespace="user:ann", limit=5, track_access=False).ids


def test_an_interrupted_copy_resumes_where_it_stopped(tmp_path, pg_url, sqlite_paths):
    source = tmp_path / "source.db"
    _fill(source, tmp_path)
    calls = []

    class Stop(Exception):
        pass

    def stop_after_seven(table, done, total):
        calls.append(table)
        if len(calls) == 7:
            raise Stop

    with pytest.raises(Stop):
        migrate_backend(str(source), pg_url, batch_size=20, progress=stop_after_seven)
    with MemoryStore.open(pg_url) as partial:  # part of it is there, committed batch by batch
        assert 0 < partial.db.scalar("SELECT count(*) FROM memory_chunks") < 130
    report = migrate_backend(str(source), pg_url, batch_size=20)
    assert report.resumed and report.ok, str(report)
    assert sum(report.copied.values()) < sum(c.source_rows for c in report.checks)  # only the rest was copied
    assert all(c.ok for c in verify(str(source), pg_url))
    with MemoryStore.open(pg_url) as done:
        ids = [r[0] for r in done.db.query("SELECT id FROM memory_chunks")]
        assert len(ids) == len(set(ids)) == done.db.scalar("SELECT count(*) FROM memory_vec")


def test_a_target_with_other_data_is_refused(tmp_path, pg_url, sqlite_paths):
    source = tmp_path / "source.db"
    with MemoryStore.open(source) as s:
        s.add("one fact")
    with MemoryStore.open(pg_url) as other:
        other.add("someone else's memory")
    with pytest.raises(TransferError, match="already holds a memory"):
        migrate_backend(str(source), pg_url)


def test_the_command(tmp_path, pg_url, sqlite_paths):
    source = tmp_path / "cli.db"
    with MemoryStore.open(source) as s:
        s.add_many([f"note {i}" for i in range(30)])
    result = CliRunner().invoke(main, ["migrate-backend", str(source), pg_url, "--batch-size", "7"])
    assert result.exit_code == 0, result.output
    assert "verified: counts and checksums match" in result.output and "memory_chunks" in result.output
    again = CliRunner().invoke(main, ["migrate-backend", str(source), pg_url, "--verify-only"])
    assert again.exit_code == 0 and "verified" in again.output
    with MemoryStore.open(pg_url) as s:
        s.add("only on one side now")
    differs = CliRunner().invoke(main, ["migrate-backend", str(source), pg_url, "--verify-only"])
    assert differs.exit_code == 1 and "MISMATCH" in differs.output

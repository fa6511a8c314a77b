"""Files on disk: migrations, bad files, embedders, other connections, erase, crashes, threads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from shared_core import (
    EmbedderMismatchError,
    HashingEmbedder,
    MemoryStore,
    SchemaError,
    StorageError,
)
from shared_core.db import Database, apply_migrations, latest_version
from shared_core.db.migrations import available_migrations
from shared_core.db.sqlite.database import _Template
from shared_core.db.sqlite.migrate import newest_schema
from shared_core.embed import StaticEmbedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.sqlite_only  # sqlite_master; test_postgres_backend.py checks the PostgreSQL schema
def test_migrations_from_an_empty_file(tmp_path):
    path = tmp_path / "new.db"
    with MemoryStore.open(path) as store:
        versions = [r[0] for r in store.db.query("SELECT version FROM _migrations ORDER BY version")]
        assert versions == [m.version for m in available_migrations()]
        tables = {r[0] for r in store.db.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        seed_tables = {"sessions", "tasks", "iteration_cycles", "findings", "learnings", "skill_effectiveness",
                       "memory_chunks", "memory_vec", "memory_fts", "usage_events", "usage_patterns", "_migrations"}
        assert seed_tables <= tables
        indexes = {r[0] for r in store.db.query("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"idx_events_day", "idx_learnings_type", "idx_tasks_category"} <= indexes
        assert store.db.get_meta("embedder_name") == StaticEmbedder().name  # the default for new files



@pytest.mark.sqlite_only  # sqlite_master
def test_a_new_in_memory_store_is_the_schema_every_migration_builds(tmp_path, clock, fake_embedder):
    """A new ``:memory:`` store copies a database this process migrated before: the same tables,
    indexes, triggers and versions as migrating a file, its own rows, and the vector size of its
    embedder."""
    def schema(store):
        return sorted(store.db.query("SELECT type, name, tbl_name, sql FROM sqlite_master"))

    with MemoryStore.open(tmp_path / "m.db", clock=clock) as migrated:
        expected = schema(migrated)
        [made] = {at for (at,) in migrated.db.query("SELECT applied_at FROM _migrations")}
    clock.advance(hours=1)
    with MemoryStore.open(":memory:", clock=clock) as first, MemoryStore.open(":memory:", clock=clock) as second:
        assert schema(first) == schema(second) == expected
        versions = first.db.query("SELECT version, applied_at FROM _migrations ORDER BY version")
        assert [v for v, _ in versions] == [m.version for m in available_migrations()]
        [at] = {at for _, at in versions}  # when this memory was made, not the copied one
        assert datetime.fromisoformat(at) - datetime.fromisoformat(made) == timedelta(hours=1)
        first.add("only in the first memory")
        assert second.count() == 0 and first.count() == 1
        assert first.search("first memory")[0].text == "only in the first memory"
    with MemoryStore.open(":memory:", embedder=fake_embedder) as small:  # another vector size
        vec = small.db.scalar("SELECT sql FROM sqlite_master WHERE name = 'memory_vec'")
        assert f"float[{fake_embedder.dims}]" in vec
        small.add("sixteen numbers a vector")
        assert small.search("sixteen numbers")[0].text == "sixteen numbers a vector"

@pytest.mark.sqlite_only  # sqlite_master
def test_a_new_file_is_built_in_one_go_to_the_schema_every_migration_builds(tmp_path, clock):
    """A new file runs the statements that build the newest schema at once, not the migrations' history:
    the same objects, FTS5 options and versions as running each migration, and it stores and finds."""
    def contents(db):
        objects = db.query("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name <> 'sqlite_sequence'")
        options = db.query("SELECT k, v FROM memory_fts_config UNION ALL SELECT k, v FROM memory_archive_fts_config")
        return sorted(objects), sorted(options), sorted(db.query("SELECT version, name FROM _migrations"))

    stepwise = Database(str(tmp_path / "stepwise.db"))
    applied = apply_migrations(stepwise, dims=384, now_iso="2026-01-01T00:00:00Z")  # each migration's statements
    assert applied == [m.version for m in available_migrations()]
    assert ("automerge", 16) in contents(stepwise)[1]  # an FTS5 option a migration set
    schema = _Template.of(stepwise.driver, 384, "2026-01-01T00:00:00Z").schema()
    assert schema is not None and len(schema) < sum(len(Database.migration_statements(m, 384))
                                                    for m in available_migrations())
    with MemoryStore.open(tmp_path / "new.db", embedder=HashingEmbedder(), clock=clock) as store:  # 384 numbers
        assert contents(store.db) == contents(stepwise)
        assert store.db.scalar("PRAGMA integrity_check") == "ok"
        store.add("built in one go")
        assert store.search("one go")[0].text == "built in one go"
    stepwise.close()


@pytest.mark.sqlite_only  # sqlite_master
def test_statements_that_would_not_rebuild_the_schema_exactly_are_refused(tmp_path):
    migrated, empty, another = Database(":memory:"), Database(":memory:"), Database(":memory:")
    apply_migrations(migrated, dims=384, now_iso="2026-01-01T00:00:00Z")
    assert newest_schema(migrated.conn, empty.conn)  # as migrated: rebuilt exactly
    migrated.execute("INSERT INTO memory_fts_docsize (id, sz) VALUES (7, x'00')")  # a row no statement makes
    with pytest.raises(SchemaError, match="memory_fts_docsize"):
        newest_schema(migrated.conn, another.conn)
    for db in (migrated, empty, another):
        db.close()


@pytest.mark.sqlite_only  # the SQLite migration file itself
def test_migration_1_is_the_seed_schema_sized_to_the_embedder():
    sql = Database.migration_statements(available_migrations()[0], dims=64)
    vec = next(s for s in sql if "memory_vec" in s)
    assert "embedding float[64]" in vec and "id TEXT PRIMARY KEY" in vec
    assert sum(s.startswith("CREATE TABLE") for s in sql) == 9


@pytest.mark.sqlite_only  # a file written by an older SQLite schema
def test_migration_2_carries_data_written_under_migration_1(tmp_path):
    path = str(tmp_path / "old.db")
    db = Database(path)
    migrations = available_migrations()
    db.execute("BEGIN IMMEDIATE")
    db.execute("CREATE TABLE _migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for statement in Database.migration_statements(migrations[0], dims=384):
        db.execute(statement)
    db.execute("INSERT INTO _migrations VALUES (1, 'openkoi_base', '2025-01-01')")
    db.execute("INSERT INTO memory_chunks (id, source, text, created_at) VALUES ('old-1', 'migration', 'legacy zebra fact', '2025-01-01T00:00:00.000000Z')")
    vector = HashingEmbedder().embed(["legacy zebra fact"])[0]
    db.execute("INSERT INTO memory_vec (id, embedding) VALUES ('old-1', ?)", (vector.tobytes(),))
    db.execute("COMMIT")
    db.close()
    with MemoryStore.open(path) as store:
        assert store.db.schema_version() == latest_version()
        memory = store.get("old-1")
        assert memory.text == "legacy zebra fact" and memory.kind == "fact" and memory.namespace == "default"
        assert store.search("zebra", fusion="keyword").ids == ["old-1"]
        assert store.search(vector=vector, fusion="vector").ids == ["old-1"]
        # migration 42: FTS5 merges segments 16 at a time (single adds at 100k: see the migration)
        assert store.db.scalar("SELECT v FROM memory_fts_config WHERE k = 'automerge'") == 16
        # migration 43: vec0 chunks of 256 vectors, the vectors copied over (and so after a rebuild)
        assert "chunk_size=256" in store.db.scalar("SELECT sql FROM sqlite_master WHERE name = 'memory_vec'")
        assert store.db.scalar("SELECT count(*) FROM memory_vec_chunks") == 1
        store.kernel.memories.vectors.purge_deleted()
        assert "chunk_size=256" in store.db.scalar("SELECT sql FROM sqlite_master WHERE name = 'memory_vec'")
        assert store.search(vector=vector, fusion="vector").ids == ["old-1"]


@pytest.mark.sqlite_only  # a file written before migration 43, with more vectors than one chunk holds
def test_migration_43_moves_every_vector_into_chunks_of_256(tmp_path):
    import numpy as np

    path = str(tmp_path / "v42.db")
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:  # 384 dims, as the table below
        store.add_many([{"text": f"fact number {i}", "namespace": "n"} for i in range(700)])
    db = Database(path)
    db.execute("BEGIN IMMEDIATE")
    vectors = db.query("SELECT chunk_rowid, embedding FROM memory_vec ORDER BY chunk_rowid")
    db.execute("DROP TABLE memory_vec")  # as migrations 2-42 left it: chunks of 1,024
    db.execute("CREATE VIRTUAL TABLE memory_vec USING vec0(chunk_rowid INTEGER PRIMARY KEY, "
               "embedding float[384] distance_metric=cosine)")
    db.executemany("INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)", vectors)
    db.execute("DELETE FROM _migrations WHERE version = 43")
    db.execute("COMMIT")
    assert db.scalar("SELECT count(*) FROM memory_vec_chunks") == 1
    db.close()
    with MemoryStore.open(path) as store:
        assert store.db.schema_version() == latest_version()
        assert store.db.scalar("SELECT count(*) FROM memory_vec_chunks") == 3  # 700 vectors, 256 to a chunk
        assert store.db.query("SELECT chunk_rowid, embedding FROM memory_vec ORDER BY chunk_rowid") == vectors
        query = np.frombuffer(vectors[500][1], dtype=np.float32)
        assert store.search(vector=query, namespace="n", fusion="vector", limit=1).ids == [
            store.list(namespace="n", order_by="chunk_rowid", limit=None)[500].id]


@pytest.mark.sqlite_only  # writes _migrations through Database(path); PostgreSQL: test_postgres_backend.py
def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "future.db"
    MemoryStore.open(path).close()
    db = Database(str(path))
    db.execute("INSERT INTO _migrations VALUES (9999, 'from_the_future', 'later')")
    db.close()
    with pytest.raises(SchemaError, match="newer openkoi-memory.*9999"):
        MemoryStore.open(path)


@pytest.mark.sqlite_only  # files
def test_not_an_sqlite_file(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is a text file, not a database" * 100)
    with pytest.raises(SchemaError, match="not an SQLite database"):
        MemoryStore.open(path)


@pytest.mark.sqlite_only  # files; PostgreSQL: test_postgres_backend.py
def test_someone_elses_sqlite_file_with_clashing_tables(tmp_path):
    path = tmp_path / "other.db"
    db = Database(str(path))
    db.execute("CREATE TABLE learnings (x)")
    db.close()
    with pytest.raises(SchemaError, match="did not create"):
        MemoryStore.open(path)


@pytest.mark.sqlite_only  # file locations
def test_a_directory_or_unwritable_location(tmp_path, monkeypatch):
    with pytest.raises(StorageError, match="is a directory"):
        MemoryStore.open(tmp_path)
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with pytest.raises(StorageError, match="cannot create the directory"):
        MemoryStore.open(blocked / "sub" / "mem.db")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(readonly) else real_access(p, mode))
    with pytest.raises(StorageError, match="not writable"):
        MemoryStore.open(readonly / "mem.db")


def test_read_only_store_refuses_writes(tmp_path):
    path = tmp_path / "ro.db"
    with MemoryStore.open(path) as s:
        mid = s.add("readable fact")
    with MemoryStore.open(path, read_only=True) as s:
        assert s.get(mid).text == "readable fact"
        assert s.search("readable").ids == [mid]
        with pytest.raises(StorageError, match="read-only"):
            s.add("nope")


def test_embedder_mismatch_names_both(tmp_path, fake_embedder):
    path = tmp_path / "e.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as s:
        s.add("built with hashing")
    with pytest.raises(EmbedderMismatchError) as info:
        MemoryStore.open(path, embedder=fake_embedder)
    message = str(info.value)
    assert HashingEmbedder().name in message and fake_embedder.name in message and "reembed=True" in message
    with MemoryStore.open(path) as s:  # no embedder given: the recorded one is rebuilt by name
        assert s.embedder.name == HashingEmbedder().name


def test_reembed_switches_embedder_and_dims(tmp_path, fake_embedder):
    path = tmp_path / "e.db"
    with MemoryStore.open(path) as s:
        mid = s.add("switch me to another model")
        s.add("and me too")
    with MemoryStore.open(path, embedder=fake_embedder, reembed=True) as s:
        assert s.db.get_meta("embedder_name") == fake_embedder.name
        assert s.db.get_meta("embedder_dims") == str(fake_embedder.dims)
        assert s.search("switch me to another model", fusion="vector").ids[0] == mid
        assert s.get(mid).embedding_model == fake_embedder.name
    with MemoryStore.open(path, embedder=fake_embedder) as s:
        assert s.count() == 2


def test_reembed_redoes_only_what_changed(store):
    a = store.add("first text")
    b = store.add("second text")
    assert store.reembed() == 0
    store.db.execute("UPDATE memory_chunks SET content_hash = 'stale' WHERE id = ?", (a,))
    assert store.reembed() == 1
    assert store.reembed() == 0
    assert store.get(b).embedded_at is not None


def test_other_connections_see_writes_through_the_mirror(tmp_path):
    path = tmp_path / "shared.db"
    with MemoryStore.open(path) as reader, MemoryStore.open(path) as writer:
        assert reader.search("anything at all", fusion="vector").ids == []  # loads the empty mirror
        first = writer.add("the first shared memory about gardening")
        assert reader.search("shared memory about gardening", fusion="vector").ids == [first]
        writer.update(first, "now it is about cooking pasta")
        assert reader.search("cooking pasta", fusion="vector").ids[0] == first
        writer.delete(first)
        assert reader.search("cooking pasta", fusion="vector").ids == []
        ids = writer.add_many([f"bulk memory {i}" for i in range(50)])
        assert set(reader.search("bulk memory", fusion="vector", limit=100).ids) == set(ids)


@pytest.mark.sqlite_only  # the in-process mirror is the SQLite backend's
def test_a_mirror_far_behind_maps_the_saved_file_and_one_close_behind_catches_up(tmp_path, monkeypatch):
    path = tmp_path / "shared.db"
    with MemoryStore.open(path) as reader, MemoryStore.open(path) as writer:
        first = writer.add("a memory about the garden shed")
        assert reader.search("garden shed", fusion="vector").ids == [first]
        keeper = reader.kernel.memories.vectors._keeper
        maps = []
        mapping = keeper._map
        monkeypatch.setattr(keeper, "_map", lambda: maps.append(1) or mapping())
        close = writer.add("a memory about the kitchen sink")
        assert reader.search("kitchen sink", fusion="vector").ids[0] == close and maps == []  # from the log
        many = writer.add_many([f"bulk memory number {i}" for i in range(5002)])  # past the 5,000-entry batch
        hits = reader.search("bulk memory number 4999", fusion="vector", limit=3).ids
        assert maps == [1] and many[4999] in hits  # the writer saved them into the file: the reader maps it
        assert keeper.last_seq == int(reader.db.scalar("SELECT max(seq) FROM index_log"))


@pytest.mark.sqlite_only  # the file's bytes; PostgreSQL: test_postgres_backend.py
def test_erase_namespace_leaves_no_byte_behind(tmp_path):
    path = tmp_path / "erase.db"
    secret = "Xylophonic-7f3a-secret-marker"
    with MemoryStore.open(path) as s:
        for i in range(20):
            s.add(f"keep this public note {i}", namespace="user:bob", dedup=False)
        s.add(f"my password hint is {secret}", namespace="user:alice", tags=[secret], metadata={"k": secret})
        s.add(f"another {secret} mention", namespace="user:alice", dedup=False)
        archived = s.add(f"old {secret} in the archive", namespace="user:alice", dedup=False)
        s.archive(archived)
        s.search(secret, namespace="user:alice")
        assert s.erase_namespace("user:alice").memories == 2
        assert s.count(namespace="user:alice") == 0 and s.archive.search(secret, namespace="user:alice").ids == []
        assert s.count(namespace="user:bob") == 20
        assert s.search("public note", namespace="user:bob", fusion="vector", limit=30).ids
    data = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())  # the vector file too
    assert secret.encode() not in data and b"user:alice" not in data
    assert secret.lower().encode() not in data


CRASH_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from shared_core import MemoryStore
    store = MemoryStore.open({path!r})
    i = 0
    while True:
        store.add_many([f"crash test memory {{i}} item {{j}}" for j in range(25)], batch_size=25)
        print(i, flush=True)
        i += 1
    """
)


@pytest.mark.sqlite_only  # WAL recovery; PostgreSQL: test_postgres_backend.py
def test_a_killed_writer_leaves_a_consistent_file(tmp_path):
    path = tmp_path / "crash.db"
    MemoryStore.open(path).close()
    proc = subprocess.Popen([sys.executable, "-c", CRASH_WRITER.format(root=str(ROOT), path=str(path))],
                            stdout=subprocess.PIPE, text=True)
    acknowledged = -1
    for line in proc.stdout:
        acknowledged = int(line)
        if acknowledged >= 5:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with MemoryStore.open(path) as s:
        db = s.db
        assert db.scalar("PRAGMA integrity_check") == "ok"
        rows = db.scalar("SELECT count(*) FROM memory_chunks")
        assert rows % 25 == 0 and rows >= (acknowledged + 1) * 25  # whole batches only, all acknowledged ones
        assert db.scalar("SELECT count(*) FROM memory_vec") == rows
        assert db.scalar("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'crash'") == rows
        db.execute("INSERT INTO memory_fts(memory_fts) VALUES ('integrity-check')")
        orphans = db.scalar("SELECT count(*) FROM memory_vec v LEFT JOIN memory_chunks c ON c.chunk_rowid = v.chunk_rowid WHERE c.chunk_rowid IS NULL")
        assert orphans == 0


def test_a_failure_mid_transaction_rolls_everything_back(store):
    store.add("before")
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.add("inside one", dedup=False)
            store.add("inside two", dedup=False)
            raise RuntimeError("boom")
    assert [m.text for m in store.list()] == ["before"]
    assert store.db.scalar("SELECT count(*) FROM memory_vec") == 1
    assert store.search("inside", fusion="keyword").ids == []
    assert store.search("inside one", fusion="vector").ids != []  # mirror only holds committed rows
    assert all(store.get(i).text == "before" for i in store.search("inside one", fusion="vector").ids)


def test_threads_share_a_store(tmp_path):
    with MemoryStore.open(tmp_path / "threads.db") as s:
        errors = []

        def work(n):
            try:
                for i in range(30):
                    s.add(f"thread {n} memory {i}", dedup=False)
                    s.search(f"thread {n}", limit=3)
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and s.count() == 120


@pytest.mark.sqlite_only  # the default file
def test_default_location_is_the_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENKOI_DATA", str(tmp_path / "xdg"))
    with MemoryStore.open() as s:
        assert Path(s.path) == tmp_path / "xdg" / "openkoi.db"
        s.add("lives in the data dir")
    assert (tmp_path / "xdg" / "openkoi.db").exists()


@pytest.mark.sqlite_only  # SQLite's runner; PostgreSQL: test_postgres_backend.py
def test_a_missing_lower_numbered_migration_still_runs(tmp_path):
    path = tmp_path / "gap.db"
    MemoryStore.open(path).close()
    highest = latest_version()
    lower = sorted(m.version for m in available_migrations())[-2]
    db = Database(str(path))
    db.execute("DELETE FROM _migrations WHERE version = ?", (lower,))
    db.close()
    db = Database(str(path))
    assert lower not in db.applied_versions() and highest in db.applied_versions()
    calls = []
    real = available_migrations()
    import shared_core.db.migrations as migrations

    original = migrations.available_migrations
    try:
        # replace the lower migration by a harmless marker so re-running it is observable
        marker = migrations.Migration(lower, "marker", "CREATE TABLE gap_marker (x);")
        migrations.available_migrations = lambda: [marker if m.version == lower else m for m in real]
        assert apply_migrations(db, dims=384, now_iso="now") == [lower]
        calls.append(db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'gap_marker'"))
    finally:
        migrations.available_migrations = original
        db.close()
    assert calls == [1]


def test_uncommitted_raw_writes_never_reach_the_vector_mirror(store):
    keep = store.add("a fact about the moon landing")
    assert store.search("moon landing", fusion="vector").ids == [keep]  # mirror loaded
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.db.execute("UPDATE memory_chunks SET valid_to = '2026-01-01T00:00:00.000000Z' WHERE id = ?", (keep,))
            store.search("moon landing", fusion="vector")  # must not pull the uncommitted state in
            raise RuntimeError("roll back")
    assert store.search("moon landing", fusion="vector").ids == [keep]


def test_a_cold_mirror_inside_a_dirty_transaction_asks_sqlite(clock):
    # the hashing embedder ranks the text sharing the most words first, which the last line relies on
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        _cold_mirror_in_a_dirty_transaction(store)


def _cold_mirror_in_a_dirty_transaction(store):
    store.add("first committed fact about tides", dedup=False)  # no search yet: the mirror is cold
    with store.transaction():
        second = store.add("second fact about tides, not committed yet", dedup=False)
        found = store.search("second fact about tides", fusion="vector").ids  # exact path, sees own write
        assert second in found
    assert store.search("second fact about tides", fusion="vector").ids[0] == second


def test_each_memory_file_has_its_own_data_folder(tmp_path):
    with MemoryStore.open(tmp_path / "openkoi.db") as default, MemoryStore.open(tmp_path / "agent.db") as other:
        assert default.data_dir == tmp_path  # seed 000: sessions/ and skills/ beside openkoi.db
        assert other.data_dir == tmp_path / "agent.db.files"
    with MemoryStore.open(":memory:") as scratch:
        folder = scratch.data_dir
        assert folder.exists() and folder != Path(scratch.config.data_dir)
    assert not folder.exists()  # a :memory: store leaves nothing behind


@pytest.mark.sqlite_only
def test_insert_many_needs_a_plain_values_list(tmp_path):
    from shared_core.db import Database

    db = Database(str(tmp_path / "x.db"))
    db.execute("CREATE TABLE t (a, b)")
    db.insert_many("INSERT INTO t (a, b) VALUES (?, ?)", [(i, str(i)) for i in range(2001)])
    assert db.scalar("SELECT count(*) FROM t") == 2001 and db.scalar("SELECT sum(a) FROM t") == 2001 * 1000
    with pytest.raises(ValueError, match="INSERT ... VALUES"):
        db.insert_many("INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT DO NOTHING", [(1, "1")])
    db.close()


@pytest.mark.sqlite_only
def test_page_cache_and_checkpoint_settings(tmp_path):
    from shared_core import ConfigError

    with MemoryStore.open(tmp_path / "a.db") as store:  # the defaults
        assert store.db.scalar("PRAGMA cache_size") == -64 * 1024
        assert store.db.scalar("PRAGMA wal_autocheckpoint") == 10_000
    with MemoryStore.open(tmp_path / "b.db", config={"database": {"cache_mb": 8, "checkpoint_pages": 500}}) as store:
        assert store.db.scalar("PRAGMA cache_size") == -8 * 1024
        assert store.db.scalar("PRAGMA wal_autocheckpoint") == 500
    with pytest.raises(ConfigError, match="cache_mb"):
        MemoryStore.open(tmp_path / "c.db", config={"database": {"cache_mb": 0}})


def _checkpoint_threads() -> list:
    import threading

    return [t for t in threading.enumerate() if t.name == "openkoi-checkpoint"]


@pytest.mark.sqlite_only
def test_background_checkpoints_copy_commits_into_the_file(tmp_path):
    """With the writer's own checkpoints out of reach, the background thread alone puts committed
    pages into the database file; it starts after enough commits and stops with the store."""
    import time


    path = tmp_path / "bg.db"
    with MemoryStore.open(path, config={"database": {"checkpoint_pages": 1_000_000}}) as store:
        checkpointer = store.db._checkpointer
        checkpointer.start_after, checkpointer.interval = store.db.conn.total_changes + 30, 0.05
        store.add("warm-up note", dedup=False)
        assert not checkpointer.running  # a few rows changed: no thread yet
        for i in range(10):
            store.add(f"the zanzibar-quokka marker {i} is in the WAL", dedup=False)
        assert checkpointer.running
        deadline = time.monotonic() + 10
        while b"zanzibar-quokka" not in path.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert b"zanzibar-quokka" in path.read_bytes()
    assert not checkpointer.running and not _checkpoint_threads()


class _FakeConnection:
    """A checkpoint connection that runs ``on_execute`` (if any) instead of SQL."""

    def __init__(self, on_execute=None):
        self.on_execute = on_execute

    def execute(self, sql):
        if self.on_execute is not None:
            self.on_execute(sql)
        return self

    def fetchall(self):
        return []

    def close(self):
        pass


def test_closing_never_hangs_on_a_stuck_background_checkpoint(caplog):
    """A checkpoint that does not return (a hung file system, say) delays close by the timeout,
    not forever, and the warning shows where the thread was."""
    import threading
    import time

    from shared_core.db.sqlite.checkpoints import BackgroundCheckpointer

    release, entered = threading.Event(), threading.Event()

    def stuck(sql):
        entered.set()
        release.wait(30)

    checkpointer = BackgroundCheckpointer("stuck.db", lambda: _FakeConnection(stuck), interval=0.0, start_after=0)
    checkpointer.committed(1)
    assert entered.wait(5)
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="shared_core.db.sqlite.checkpoints"):
        checkpointer.close(timeout=0.2)
    assert time.monotonic() - started < 5
    assert "did not stop within" in caplog.text and "release.wait(30)" in caplog.text
    release.set()
    checkpointer._thread.join(5)
    assert not checkpointer.running


def test_closing_while_the_checkpoint_thread_wakes_up_stops_it():
    """close() landing between the thread's wait and its clearing of the wake-up event: the thread
    must still see it (it used to wait for a commit that never came, and close() waited with it)."""
    import threading
    import time

    from shared_core.db.sqlite.checkpoints import BackgroundCheckpointer

    checkpointer = BackgroundCheckpointer("racing.db", _FakeConnection, interval=0.0, start_after=0)
    closer = threading.Thread(target=checkpointer.close, kwargs={"timeout": 3.0})
    closing = threading.Event()

    class _Racing(threading.Event):
        def clear(self):
            if not closing.is_set():
                closer.start()  # close() sets stopping and this event, then joins the thread
                closing.set()
                deadline = time.monotonic() + 5
                while not checkpointer._stopping.is_set() and time.monotonic() < deadline:
                    time.sleep(0.001)
            super().clear()

    checkpointer._dirty = _Racing()
    started = time.monotonic()
    checkpointer.committed(1)
    assert closing.wait(5)
    closer.join(10)
    assert not checkpointer.running and time.monotonic() - started < 2.5


@pytest.mark.sqlite_only
def test_background_checkpoints_can_be_turned_off_and_never_block_compaction(tmp_path):
    with MemoryStore.open(tmp_path / "off.db", config={"database": {"background_checkpoints": False}}) as store:
        assert store.db._checkpointer is None
    with MemoryStore.open(tmp_path / "on.db") as store:
        checkpointer = store.db._checkpointer
        checkpointer.start_after, checkpointer.interval = 0, 0.0
        for i in range(30):
            store.add(f"secret-{i} of user carol", namespace="user:carol", dedup=False)
            store.add(f"note {i} of user dave", namespace="user:dave", dedup=False)
        assert checkpointer.running
        store.erase_namespace("user:carol")  # VACUUM and a truncating checkpoint, the thread held off
        assert store.count(namespace="user:dave") == 30
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("on.db*") if p.is_file())
    assert b"secret-" not in raw and not _checkpoint_threads()


@pytest.mark.sqlite_only  # reads the file with a second sqlite3 connection while it is being created
def test_a_new_file_appears_whole_to_another_process(tmp_path, monkeypatch):
    """Several processes may create one file at once: one seeing it half-made (at version 1, the first
    schema's) took it for an old file of the hashing embedder while its creator recorded the default."""
    import sqlite3

    from shared_core.db.sqlite.migrate import SqliteMigrationSession, applied_versions

    path = tmp_path / "new.db"
    seen: list[set[int]] = []
    record = SqliteMigrationSession.record

    def record_and_look(self, migration, now_iso):
        record(self, migration, now_iso)
        with sqlite3.connect(path, timeout=30) as other:  # what another process would read now
            seen.append(applied_versions(other))

    monkeypatch.setattr(SqliteMigrationSession, "record", record_and_look)
    MemoryStore.open(path).close()
    assert len(seen) == len(available_migrations()) and all(versions == set() for versions in seen)
    with MemoryStore.open(path) as store:
        assert store.db.schema_version() == latest_version()

"""The PostgreSQL backend itself: URLs, schema, crash consistency, erasure, filtered KNN, scale-out.

The rest of the suite runs on PostgreSQL too (OPENKOI_TEST_BACKEND=postgres); these are the
properties only this backend has, or the PostgreSQL twins of SQLite-only tests.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import MemoryStore, SchemaError
from shared_core.db.migrations import available_migrations
from shared_core.db.postgres import parse_url
from shared_core.index.sanitize import STOP_WORDS, search_terms, without_stop_words

pytestmark = pytest.mark.postgres_only
psycopg = pytest.importorskip("psycopg")  # the postgres extra
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_url(pg_server):
    """A schema no one has created yet (dropped afterwards)."""
    schema = f"fresh_{uuid.uuid4().hex[:12]}"
    yield f"{pg_server}&schema={schema}" if "?" in pg_server else f"{pg_server}?schema={schema}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_server_that_dropped_every_connection_fails_no_call(pg_alone_url, pg_server):
    """A restart of the server (or one that closes idle connections) leaves the pool's connections
    dead: the next searches, reads and writes run on fresh ones instead of failing once each."""
    with MemoryStore.open(pg_alone_url) as store:
        store.add_many([f"note {i} about amber" for i in range(20)])
        searchers = [threading.Thread(target=lambda: [store.search("amber", limit=3) for _ in range(10)])
                     for _ in range(4)]
        for thread in searchers:  # several idle connections in the pool
            thread.start()
        for thread in searchers:
            thread.join()
        database = urlsplit(pg_alone_url).path.strip("/")
        with psycopg.connect(pg_server, autocommit=True) as admin:
            others = "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            killed = admin.execute(f"SELECT count(pg_terminate_backend(pid)) {others}", (database,)).fetchone()[0]
            deadline = time.monotonic() + 60
            while admin.execute(f"SELECT count(*) {others}", (database,)).fetchone()[0] and time.monotonic() < deadline:
                time.sleep(0.05)
        assert killed >= 2
        assert len(store.search("amber", limit=3)) == 3
        store.add("written after the restart")
        assert store.count() == 21
        assert store.search("restart", limit=1)[0].text == "written after the restart"


def _all_text(url: str) -> str:
    """Every text value of every table of the memory's schema, concatenated (for 'no trace' checks)."""
    target = parse_url(url)
    with psycopg.connect(target.conninfo, autocommit=True) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_schema, table_name) WHERE table_schema = %s AND data_type = 'text' "
            "AND t.table_type = 'BASE TABLE'", (target.schema,)).fetchall()
        parts = []
        for table, column in columns:
            rows = conn.execute(f'SELECT "{column}" FROM "{target.schema}"."{table}"').fetchall()
            parts += [r[0] for r in rows if r[0]]
    return "\n".join(parts)


# -- opening --------------------------------------------------------------------------------------


def test_a_url_opens_postgres_and_the_password_never_shows():
    target = parse_url("postgresql://ann:s3cret@db.example:5433/mem?sslmode=require&schema=team_a")
    assert target.schema == "team_a" and "s3cret" not in target.display and "schema=team_a" in target.display
    assert "schema" not in target.conninfo and "sslmode=require" in target.conninfo
    with pytest.raises(ValueError, match="plain PostgreSQL name"):
        parse_url("postgresql://h/db?schema=bad;name")


def test_open_by_url_or_environment(pg_url, monkeypatch):
    with MemoryStore.open(pg_url) as store:
        mid = store.add("the backup job runs at 02:00")
        assert store.db.dialect == "postgresql" and store.stats().driver == "psycopg"
        assert store.stats().vector_index == "pgvector-hnsw" and store.stats().file_bytes > 0
    monkeypatch.setenv("OPENKOI_DATABASE_URL", pg_url)
    with MemoryStore.open() as store:  # no path: the environment names the memory
        assert store.get(mid).text == "the backup job runs at 02:00"


def test_a_new_schema_gets_every_migration_and_the_hnsw_index(fresh_url):
    with MemoryStore.open(fresh_url) as store:
        db = store.db
        assert sorted(db.applied_versions()) == [m.version for m in available_migrations()]
        tables = {r[0] for r in db.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", (db.schema,))}
        assert {"memory_chunks", "memory_archive", "raw_messages", "learnings", "kv_entries", "memory_vec"} <= tables
        indexes = {r[0] for r in db.query("SELECT indexname FROM pg_indexes WHERE schemaname = ?", (db.schema,))}
        assert {f"idx_chunks_embedding_{store.embedder.dims}", "idx_chunks_search_text",
                "idx_raw_messages_message_id"} <= indexes
    with MemoryStore.open(fresh_url) as again:  # a second open migrates nothing
        assert again.db.schema_version() == max(m.version for m in available_migrations())



def test_the_translator_knows_every_table_as_information_schema_describes_it(fresh_url):
    """What the store reads from pg_catalog (keys in key order, columns, identity columns) is what the
    standard's views say: the translator writes upserts and lastrowid from it."""
    with MemoryStore.open(fresh_url) as store:
        db = store.db
        keys: dict[str, list[str]] = {}
        for table, column in db.query(
            "SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc "
            "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name "
            "AND kcu.table_schema = tc.table_schema AND kcu.table_name = tc.table_name "
            "WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = ? ORDER BY kcu.ordinal_position",
            (db.schema,),
        ):
            keys.setdefault(table, []).append(column)
        columns: dict[str, list[str]] = {}
        for table, column in db.query("SELECT table_name, column_name FROM information_schema.columns "
                                      "WHERE table_schema = ? ORDER BY ordinal_position", (db.schema,)):
            columns.setdefault(table, []).append(column)
        identity = dict(db.query("SELECT table_name, column_name FROM information_schema.columns "
                                 "WHERE table_schema = ? AND is_identity = 'YES'", (db.schema,)))
        catalog = db._catalog
        assert catalog.primary_keys == {t: tuple(c) for t, c in keys.items()}
        assert catalog.columns == {t: tuple(c) for t, c in columns.items()}
        assert catalog.identity == identity and identity
        assert any(len(key) > 1 for key in catalog.primary_keys.values())  # a composite key, in its order

def test_a_newer_schema_and_foreign_tables_are_refused(fresh_url, pg_server):
    MemoryStore.open(fresh_url).close()
    schema = parse_url(fresh_url).schema
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{schema}"._migrations VALUES (9999, %s, %s)', ("from_the_future", "later"))
    with pytest.raises(SchemaError, match="newer openkoi-memory.*9999"):
        MemoryStore.open(fresh_url)
    other = f"foreign_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{other}"; CREATE TABLE "{other}".learnings (x int)')
    try:
        with pytest.raises(SchemaError, match="did not create"):
            MemoryStore.open(fresh_url.replace(f"schema={schema}", f"schema={other}"))
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{other}" CASCADE')


def test_a_missing_lower_numbered_migration_still_runs(fresh_url, pg_server):
    MemoryStore.open(fresh_url).close()
    schema = parse_url(fresh_url).schema
    versions = [m.version for m in available_migrations()]
    lower = next(m.version for m in available_migrations() if m.name == "key_value")  # creates kv_entries
    assert lower < versions[-1]  # later migrations stay applied
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'DELETE FROM "{schema}"._migrations WHERE version = %s', (lower,))
        conn.execute(f'DROP TABLE "{schema}".kv_entries')
    with MemoryStore.open(fresh_url) as store:
        assert lower in store.db.applied_versions()
        store.kv.put("k", {"v": 1})
        assert store.kv.get("k") == {"v": 1}


def test_two_memories_in_one_database_never_see_each_other(pg_url, fresh_url):
    with MemoryStore.open(pg_url) as a, MemoryStore.open(fresh_url) as b:
        a.add("the red fox jumps", id="x")
        b.add("a blue whale sings", id="x")  # the same id: different memories
        assert a.get("x").text == "the red fox jumps" and b.get("x").text == "a blue whale sings"
        assert b.search("fox", fusion="keyword").ids == [] and a.count() == b.count() == 1


# -- writers ---------------------------------------------------------------------------------------


CRASH_WRITER = textwrap.dedent("""
    import sys
    from shared_core import MemoryStore
    store = MemoryStore.open(sys.argv[1])
    i = 0
    while True:
        store.add_many([f"crash test memory {i} item {j}" for j in range(25)], batch_size=25)
        print(i, flush=True)
        i += 1
""")


def test_a_killed_writer_leaves_no_half_written_memory(pg_url):
    MemoryStore.open(pg_url).close()
    proc = subprocess.Popen([sys.executable, "-c", CRASH_WRITER, pg_url], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    acknowledged = -1
    for line in proc.stdout:
        acknowledged = int(line)
        if acknowledged >= 5:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with MemoryStore.open(pg_url) as s:
        db = s.db
        rows = db.scalar("SELECT count(*) FROM memory_chunks")
        assert rows % 25 == 0 and rows >= (acknowledged + 1) * 25  # whole batches, every acknowledged one
        assert db.scalar("SELECT count(*) FROM memory_vec") == rows  # each row has its vector ...
        assert db.scalar("SELECT count(*) FROM memory_chunks WHERE search_text @@ to_tsquery('openkoi', 'crash')") == rows
        assert len(s.search("crash test memory", fusion="vector", limit=rows).ids) == rows


def test_erase_namespace_leaves_no_row_behind(pg_url):
    secret = "Xylophonic-7f3a-secret-marker"
    with MemoryStore.open(pg_url) as s:
        for i in range(20):
            s.add(f"keep this public note {i}", namespace="user:bob", dedup=False)
        s.add(f"my password hint is {secret}", namespace="user:alice", tags=[secret], metadata={"k": secret})
        archived = s.add(f"old {secret} in the archive", namespace="user:alice", dedup=False)
        s.archive(archived)
        s.conversations.append("chat", "user", f"the code is {secret}", namespace="user:alice")
        s.insights.upsert(f"Insight about {secret}", "details", namespace="user:alice")
        s.kv.put("k", {"v": secret}, namespace="user:alice")
        s.search(secret, namespace="user:alice")
        assert secret in _all_text(pg_url)
        s.erase_namespace("user:alice")
        assert s.count(namespace="user:bob") == 20
    assert secret not in _all_text(pg_url) and secret.lower() not in _all_text(pg_url).lower()


def test_pruning_measures_the_stored_bytes(pg_url):
    with MemoryStore.open(pg_url) as store:
        ids = store.add_many([f"note {i} about topic{i % 7} alpha beta" for i in range(60)])
        before = store.pruning.measure()
        assert before.method == "pg_column_size" and before.rows == 60
        assert before.parts["vectors"] >= 60 * store.embedder.dims * 4
        store.archive(ids[:30], reason="manual")
        after = store.pruning.measure()
        assert after.rows == 30 and after.total < 0.6 * before.total
        with pytest.raises(Exception, match="dbstat"):
            store.pruning.measure("dbstat")


# -- search ----------------------------------------------------------------------------------------


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text())
def test_no_user_text_makes_a_tsquery_syntax_error(store, text):
    query = store.kernel.keyword.prepare(text)
    assert query.terms == tuple(without_stop_words(search_terms(text), STOP_WORDS["english"]))
    if query.fts:
        store.db.query("SELECT CAST(? AS tsquery)", (query.fts,))
    store.search(text, fusion="keyword", track_access=False) if text.strip() else None


def test_bm25_weights_rare_words_over_common_ones(store):
    for i in range(30):
        store.add(f"status report {i}: the build is green", dedup=False)
    rare = store.add("status of the zeppelin hangar", dedup=False)
    hits = store.search("zeppelin status", fusion="keyword")
    assert hits.ids[0] == rare and hits[0].parts.bm25 > 5 * hits[1].parts.bm25


def test_a_small_memory_counts_document_frequencies_instead_of_trusting_statistics(store):
    """Below 10,000 rows a word's document frequency is counted: ANALYZE's element frequencies
    are estimates from whenever autovacuum last ran, and the scores must not depend on that."""
    from shared_core.index.keyword_query import idf

    for i in range(300):
        store.add(f"note {i}: the build is {'green' if i % 3 else 'red'}", dedup=False)
    store.db.execute("ANALYZE memory_chunks")  # statistics say a third of the rows hold "red" ...
    store.kernel.keyword._common = None
    for i in range(300):
        store.add(f"later note {i}: red again", dedup=False)  # ... now two thirds do
    query = store.kernel.keyword.prepare("red")
    assert query.rows == 600 and query.idf == (idf(600, 400),)


def test_a_filtered_search_returns_k_when_k_match_on_the_hnsw_path(pg_url):
    """Past exact_scan_rows the HNSW index answers; its filtered scan may find fewer than k, so the
    search asks again with more candidates and, at worst, scans the scope exactly."""
    config = {"database": {"exact_scan_rows": 50, "hnsw_ef_search": 10}}
    rng = np.random.default_rng(7)
    with MemoryStore.open(pg_url, config=config) as store:
        dims = store.embedder.dims
        vectors = rng.standard_normal((1200, dims)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add_many([{"text": f"item {i}", "id": f"m{i}", "vector": vectors[i],
                         "metadata": {"rare": i % 40 == 0, "half": i % 2}} for i in range(1200)], batch_size=400)
        query = vectors[3] + 0.1 * rng.standard_normal(dims).astype(np.float32)
        for where, matching in [({"rare": True}, 30), ({"half": 1}, 600), (None, 1200)]:
            hits = store.search(vector=query, fusion="vector", where=where, limit=25)
            assert len(hits) == 25, where  # k results whenever k match
            ids = [int(h.id[1:]) for h in hits]
            allowed = [i for i in range(1200) if where is None or (
                (where.get("rare") and i % 40 == 0) or (where.get("half") == 1 and i % 2 == 1))]
            assert len(allowed) == matching and set(ids) <= set(allowed)
            sims = vectors[allowed] @ query
            exact = {allowed[j] for j in np.argsort(-sims)[:25]}
            assert len(exact & set(ids)) >= 20  # recall@25 of the index path, checked against numpy


def test_switching_embedder_rebuilds_the_hnsw_index(pg_url, fake_embedder):
    with MemoryStore.open(pg_url) as store:
        store.add_many(["solar panels on the roof", "the heat pump is new"])
    with MemoryStore.open(pg_url, embedder=fake_embedder, reembed=True) as store:
        names = {r[0] for r in store.db.query(
            "SELECT indexname FROM pg_indexes WHERE schemaname = ? AND indexname LIKE 'idx_chunks_embedding_%'",
            (store.db.schema,))}
        assert names == {f"idx_chunks_embedding_{fake_embedder.dims}"}
        assert store.search("heat pump", fusion="vector").ids[0] == store.list()[1].id


@pytest.mark.postgres_only
def test_a_new_size_is_indexed_while_another_session_still_sees_the_old_rows(pg_url, pg_server, fake_embedder):
    """An index build also reads rows deleted since the oldest open snapshot of the database (another
    client's, autovacuum's); casting their vectors of the old size to the new one must not fail it."""
    with MemoryStore.open(pg_url) as store:
        store.add_many(["solar panels on the roof", "the heat pump is new"])
    with psycopg.connect(pg_server) as other:
        other.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        other.execute("SELECT 1")  # its snapshot still sees the rows deleted next
        with MemoryStore.open(pg_url) as store:
            for memory in store.list():
                store.delete(memory.id)
        with MemoryStore.open(pg_url, embedder=fake_embedder, reembed=True) as store:
            store.add("the heat pump is new")
            assert [h.memory.text for h in store.search("heat pump", fusion="vector")] == ["the heat pump is new"]


@pytest.mark.postgres_only
def test_the_planner_knows_how_many_rows_hold_vectors_of_the_size(pg_url):
    """The HNSW index's predicate is in every index search; guessed, it would keep 0.5 % of the rows."""
    def estimate(store) -> int:
        plan = store.db.query(f"EXPLAIN SELECT 1 FROM memory_chunks c WHERE vector_dims(c.embedding) = {store.embedder.dims}")
        return int(re.search(r"rows=(\d+)", plan[0][0]).group(1))

    with MemoryStore.open(pg_url) as store:
        store.add_many([f"note {i} of many" for i in range(400)])
        store.db.execute("ANALYZE memory_chunks")  # as autovacuum would
        assert estimate(store) >= 300
        store.db.execute("DROP STATISTICS memory_chunks_vector_dims")  # a memory from an earlier version
        store.db.execute("ANALYZE memory_chunks")
        assert estimate(store) < 50
    with MemoryStore.open(pg_url) as store:
        assert estimate(store) >= 300


@pytest.mark.postgres_only
def test_a_user_who_may_not_create_the_statistics_still_opens_and_searches(pg_url, caplog):
    """A role that writes the memory but does not own its tables (the statistics need the owner)."""
    with MemoryStore.open(pg_url) as store:
        store.add_many(["solar panels on the roof", "the heat pump is new"])
        store.db.execute("DROP STATISTICS memory_chunks_vector_dims")  # a memory from an earlier version
        schema = store.db.schema
        role = f"app_{schema}"
        store.db.execute(f"DROP ROLE IF EXISTS {role}")
        store.db.execute(f"CREATE ROLE {role} LOGIN")
        store.db.execute(f"GRANT CREATE ON DATABASE {store.db.scalar('SELECT current_database()')} TO {role}")
        store.db.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")  # not its owner, nor its tables
        store.db.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}")
        store.db.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
    try:
        with caplog.at_level("WARNING"), MemoryStore.open(re.sub(r"//[^@/]*@", f"//{role}@", pg_url)) as app:
            assert [h.memory.text for h in app.search("heat pump", limit=1)] == ["the heat pump is new"]
        assert "may not create them" in caplog.text
    finally:
        with MemoryStore.open(pg_url) as store:
            store.db.execute(f"DROP OWNED BY {role}")
            store.db.execute(f"DROP ROLE {role}")


@pytest.mark.postgres_only
def test_a_vector_search_of_a_big_scope_uses_the_hnsw_index(pg_alone_url, sql_spy):
    # in a database of its own: the load updates rows, so PostgreSQL lets a transaction use the index
    # built after it only once every transaction older than the build has ended (pg_index.indcheckxmin),
    # and a test beside this one can hold such a transaction
    with MemoryStore.open(pg_alone_url, config={"database": {"exact_scan_rows": 50}}) as store:
        rng = np.random.default_rng(5)
        vectors = rng.standard_normal((400, store.embedder.dims)).astype(np.float32)
        store.add_many([{"text": f"note {i}", "vector": vectors[i]} for i in range(400)])
        store.db.execute("ANALYZE memory_chunks")
        with sql_spy(store.db, "query", lambda sql: "<=>" in sql and "ORDER BY" in sql) as statements:
            hits = store.search(vector=vectors[7], fusion="vector", limit=5)
        assert hits[0].memory.text == "note 7" and statements
        plan = "\n".join(r[0] for r in store.db.query("EXPLAIN " + statements[0][0], statements[0][1]))
        assert f"Index Scan using idx_chunks_embedding_{store.embedder.dims}" in plan, plan


# -- scale-out: several processes, one memory ------------------------------------------------------

WORKER = textwrap.dedent("""
    import json, sys
    from shared_core import MemoryStore
    url, worker, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    found = 0
    with MemoryStore.open(url) as store:
        for b in range(batches):
            store.add_many([{"text": f"worker {worker} batch {b} note {j} about harbour logistics",
                             "id": f"w{worker}-b{b}-n{j}", "namespace": "shared"} for j in range(20)])
            found += len(store.search("harbour logistics", namespace="shared", limit=10))
            store.add("the quarterly all-hands is on Thursday", namespace="shared")  # the same fact from everyone
            store.add(f"worker {worker} scratch {b}", namespace=f"own:{worker}", dedup=False)
    print(json.dumps({"worker": worker, "found": found}))
""")


@pytest.mark.slow
def test_several_processes_write_and_search_one_memory(pg_url):
    MemoryStore.open(pg_url).close()
    workers, batches = 4, 10
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, pg_url, str(w), str(batches)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for w in range(workers)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    reports = [json.loads(out) for out, _ in outs]
    assert all(r["found"] > 0 for r in reports)  # every process searched while the others wrote
    with MemoryStore.open(pg_url) as store:
        notes = store.list(namespace="shared", where={"@text": {"$text_match": "harbour"}}, limit=None)
        assert len(notes) == workers * batches * 20  # exact: nothing lost ...
        assert len({m.id for m in notes}) == len(notes)  # ... nothing twice
        assert {m.id for m in notes} == {f"w{w}-b{b}-n{j}" for w in range(workers) for b in range(batches)
                                         for j in range(20)}
        shared_fact = store.list(namespace="shared", where={"@text": {"$text_match": "all-hands"}})
        assert len(shared_fact) == 1  # 40 adds of one fact: one memory, reinforced 39 times
        assert shared_fact[0].score == 3.0 * (workers * batches - 1)
        for w in range(workers):
            assert store.count(namespace=f"own:{w}") == batches
        assert len(store.search("harbour logistics", namespace="shared", limit=50)) == 50


def test_a_nul_in_a_value_to_look_for_is_a_clear_error(store):
    """PostgreSQL text cannot hold NUL, not even in a parameter to compare with: a 400 over REST,
    found by the REST fuzz test as a 503 (GET /api/usage/events?event_type=...%00...)."""
    store.usage.log("deploy", namespace="default")
    with pytest.raises(ValueError, match=r"NUL character .*remove it"):
        store.usage.events(namespace="default", event_type="dep\x00loy")
    assert [e.event_type for e in store.usage.events(namespace="default")] == ["deploy"]  # the store still works

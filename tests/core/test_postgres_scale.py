"""PostgreSQL at scale: the bulk ingest path (COPY, the HNSW index built after a load), the keyword
side's top-k plan, vectors kept in their rows, and namespace-scoped searches that use an index."""

from __future__ import annotations

import json
import multiprocessing
import os
import re

import numpy as np
import pytest

from shared_core import MemoryStore, NewMemory, StorageError
from shared_core.index.keyword_plan import at_least, either, every, rarest, steps
from shared_core.index.scope import Scope

psycopg = pytest.importorskip("psycopg")  # the postgres extra

PG = pytest.mark.postgres_only
WORDS = "amber basil cedar delta ember fjord garnet harbor indigo juniper kelp lotus".split()


def _hnsw_indexes(store: MemoryStore) -> set[str]:
    return {r[0] for r in store.db.query(
        "SELECT indexname FROM pg_indexes WHERE schemaname = ? AND indexname LIKE 'idx_chunks_embedding_%'",
        (store.db.schema,))}


def _vectors(n: int, dims: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = rng.standard_normal((n, dims)).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _row(memory) -> tuple:
    return (memory.text, memory.kind, list(memory.tags), memory.category, memory.source, memory.metadata,
            memory.importance, memory.confidence, memory.pinned, memory.created_at, memory.updated_at,
            memory.expires_at, memory.content_hash, memory.embedding_model)


# -- the bulk path ------------------------------------------------------------------------------


@PG
def test_add_many_writes_what_single_adds_write(pg_url, clock, monkeypatch):
    """add_many's rows go in one COPY (no statement per row) and come out as add() writes them."""
    with MemoryStore.open(pg_url, clock=clock) as store:
        dims = store.embedder.dims
        vectors = _vectors(30, dims)
        items = [dict(text=f"{WORDS[i % 12]} note {i} about {WORDS[(i * 5) % 12]}", kind="note",
                      tags=[WORDS[i % 3]], category="misc" if i % 2 else None, metadata={"i": i, "ok": i % 3 == 0},
                      importance=0.5 if i % 4 else None, pinned=i % 5 == 0, ttl=3600 if i % 6 == 0 else None)
                 for i in range(30)]
        for item, vector in zip(items, vectors, strict=True):
            store.add(**item, vector=vector, namespace="one")

        def no_statement_per_row(*args, **kwargs):
            raise AssertionError("add_many ran an INSERT per row instead of COPY")

        monkeypatch.setattr(store.db, "executemany", no_statement_per_row)
        store.add_many([NewMemory(**item, vector=vector, namespace="many") for item, vector in
                        zip(items, vectors, strict=True)], batch_size=7)
        monkeypatch.undo()
        one = store.list(namespace="one", limit=100)
        many = store.list(namespace="many", limit=100)
        assert [_row(m) for m in one] == [_row(m) for m in many]
        for a, b in zip(one, many, strict=True):
            assert np.allclose(store.db.query("SELECT embedding FROM memory_chunks WHERE id = ?", (a.id,))[0][0],
                               store.db.query("SELECT embedding FROM memory_chunks WHERE id = ?", (b.id,))[0][0])
        for query in ("amber note", "cedar", "harbor about lotus"):
            assert ([h.text for h in store.search(query, namespace="one", limit=10)]
                    == [h.text for h in store.search(query, namespace="many", limit=10)])


@PG
def test_a_failed_batch_leaves_nothing_half_written(pg_url):
    """A batch whose COPY fails is rolled back whole; the batches before it stay; the HNSW index a big
    load dropped is built again all the same."""
    config = {"database": {"index_after_load_rows": 20}}
    with MemoryStore.open(pg_url, config=config) as store:
        store.db.execute("ALTER TABLE memory_chunks ADD CONSTRAINT no_boom CHECK (position('boom' in text) = 0)")
        texts = [f"ordinary memory {i}" for i in range(30)]
        texts[15] = "this one goes boom"
        with pytest.raises(StorageError):
            store.add_many(texts, batch_size=10)
        assert sorted(m.text for m in store.list(limit=100)) == sorted(texts[:10])
        assert _hnsw_indexes(store) == {f"idx_chunks_embedding_{store.embedder.dims}"}
        store.db.execute("ALTER TABLE memory_chunks DROP CONSTRAINT no_boom")


@PG
def test_a_big_load_builds_the_hnsw_index_after_it_and_a_small_one_keeps_it(pg_url):
    config = {"database": {"index_after_load_rows": 100}}
    with MemoryStore.open(pg_url, config=config) as store:
        name = f"idx_chunks_embedding_{store.embedder.dims}"
        vectors = _vectors(400, store.embedder.dims)
        seen: list[set[str]] = []
        store.add_many([NewMemory(text=f"memory {i}", vector=vectors[i]) for i in range(300)], batch_size=100,
                       progress=lambda done, total: seen.append(_hnsw_indexes(store)))
        assert seen == [set(), set(), set()]  # no index kept current while the rows arrived
        assert _hnsw_indexes(store) == {name}  # built once, after
        seen.clear()
        store.add_many([NewMemory(text=f"memory {i}", vector=vectors[i]) for i in range(300, 400)], batch_size=50,
                       progress=lambda done, total: seen.append(_hnsw_indexes(store)))
        assert seen == [{name}, {name}]  # a load that does not double the memory keeps the index current
        hits = store.search(vector=vectors[123], fusion="vector", limit=3)
        assert hits[0].text == "memory 123"


@pytest.mark.slow
@PG
def test_a_build_whose_graph_outgrows_maintenance_work_mem_says_what_to_set(pg_url, caplog):
    """pgvector builds on disk, several times slower, once its graph outgrows maintenance_work_mem (1 MB
    here: some 600 rows): the load says so, and how much memory the build needs, which pgvector confirms."""
    config = {"database": {"index_after_load_rows": 100, "hnsw_build_memory_mb": 1}}
    with MemoryStore.open(pg_url, config=config) as store:
        vectors = _vectors(1500, store.embedder.dims)
        with caplog.at_level("WARNING", logger="openkoi.store"):
            store.add_many([NewMemory(text=f"memory {i}", vector=vectors[i], namespace="a") for i in range(300)])
        assert not caplog.records  # 300 rows fit
        with caplog.at_level("WARNING", logger="openkoi.store"):
            store.add_many([NewMemory(text=f"memory {i}", vector=vectors[i], namespace="b") for i in range(300, 1500)])
        [record] = caplog.records
        message = record.getMessage()
        assert "building the HNSW index of 1,500 memories" in message and "maintenance_work_mem is 1 MB" in message
        needed = int(re.search(r"hnsw_build_memory_mb = (\d+)", message).group(1))
        assert _hnsw_indexes(store) == {f"idx_chunks_embedding_{store.embedder.dims}"}
        # pgvector agrees: its own notice at 1 MB, none at the memory the warning asks for
        with store.db.connection() as conn:
            notices: list[str] = []
            conn.add_notice_handler(lambda notice: notices.append(notice.message_primary or ""))
            for mb in (1, needed):
                notices.append(f"-- {mb} MB")
                conn.execute(f"SET maintenance_work_mem = '{mb}MB'")
                conn.execute("CREATE INDEX probe ON memory_chunks USING hnsw "
                             f"((embedding::vector({store.embedder.dims})) vector_cosine_ops) "
                             "WITH (m = 16, ef_construction = 128)")
                conn.execute("DROP INDEX probe")
            conn.execute("RESET maintenance_work_mem")
            conn.commit()
        at_1mb, at_needed = " ".join(notices).split(f"-- {needed} MB")
        assert "no longer fits into maintenance_work_mem" in at_1mb
        assert "no longer fits" not in at_needed


@PG
def test_a_load_of_a_few_hundred_into_a_new_memory_builds_the_index_after_it(pg_url):
    """At the default settings: inserting rows one by one into the graph took 0.29 s for 200
    memories and 42 s for 9,000, against 0.04 s and 3.5 s loaded, then built."""
    with MemoryStore.open(pg_url) as store:
        vectors = _vectors(300, store.embedder.dims)
        seen: list[set[str]] = []
        store.add_many([NewMemory(text=f"memory {i}", vector=vectors[i]) for i in range(300)], batch_size=100,
                       progress=lambda done, total: seen.append(_hnsw_indexes(store)))
        assert seen == [set(), set(), set()]
        assert _hnsw_indexes(store) == {f"idx_chunks_embedding_{store.embedder.dims}"}
        assert store.search(vector=vectors[42], fusion="vector", limit=1)[0].text == "memory 42"


def _all_visible_share(store: MemoryStore) -> float:
    pages, visible = store.db.query("SELECT relpages, relallvisible FROM pg_class WHERE oid = 'memory_chunks'::regclass")[0]
    return visible / max(pages, 1)


def _vacuums(store: MemoryStore) -> tuple[int, int]:
    """The VACUUMs and ANALYZEs run on ``memory_chunks`` by a command (autovacuum's are counted apart)."""
    return tuple(store.db.query("SELECT vacuum_count, analyze_count FROM pg_stat_user_tables "
                                "WHERE relid = 'memory_chunks'::regclass")[0])


@pytest.fixture
def vacuumable_url(pg_alone_url):
    """A memory whose pages VACUUM can mark all-visible: no snapshot of a test beside it holds its
    rows back (a database of its own), and its commits wait for the disk (the test server commits
    asynchronously, and VACUUM cannot mark rows whose commits are not on disk yet)."""
    return pg_alone_url + "&options=-csynchronous_commit%3Don"


@PG
def test_a_load_that_doubles_the_memory_is_vacuumed_and_analysed_after_it(vacuumable_url):
    """VACUUM (ANALYZE) runs after it: its pages all-visible (a word's rows are then counted on the GIN
    index alone, not a table page per row) and the planner's statistics there."""
    with MemoryStore.open(vacuumable_url) as store:
        store.add("a first note")
        before = _vacuums(store)
        store.add_many([f"amber note {i}" for i in range(1000)])
        after = _vacuums(store)
        assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
        assert _all_visible_share(store) > 0.9  # 0 before; a few pages VACUUM leaves (here 10 of 210)
        assert store.db.scalar("SELECT count(*) FROM pg_stats WHERE schemaname = ? AND tablename = 'memory_chunks' "
                               "AND attname = 'search_text'", (store.db.schema,)) == 1


@PG
def test_a_small_load_or_one_in_a_transaction_is_left_to_autovacuum(pg_url, monkeypatch):
    """A load that does not double the memory, or runs inside the caller's transaction (its rows not
    committed yet, so VACUUM could not mark them), is not settled."""
    from shared_core.memories import service

    monkeypatch.setattr(service, "_MERGE_AFTER_LOAD", 10)
    with MemoryStore.open(pg_url) as store:
        settled: list[int] = []
        monkeypatch.setattr(store.db, "settle_after_load", lambda: settled.append(store.count()))
        with store.transaction():
            store.add_many([f"amber note {i}" for i in range(30)])
        store.add_many([f"basil note {i}" for i in range(20)])  # 50 rows: not doubled
        assert settled == []
        store.add_many([f"cedar note {i}" for i in range(60)])
        assert settled == [110]


@PG
def test_the_hnsw_index_and_its_searches_take_the_configured_settings(pg_url, monkeypatch):
    """The index is built with the config's m and ef_construction, and a search past the exact scan's
    limit asks it for the config's ef_search candidates."""
    config = {"database": {"hnsw_m": 12, "hnsw_ef_construction": 40, "hnsw_ef_search": 80, "exact_scan_rows": 10}}
    with MemoryStore.open(pg_url, config=config) as store:
        options = store.db.scalar(
            "SELECT array_to_string(c.reloptions, ',') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ? AND c.relname LIKE 'idx_chunks_embedding_%'", (store.db.schema,))
        assert options == "m=12,ef_construction=40"
        vectors = _vectors(60, store.embedder.dims)
        store.add_many([NewMemory(text=f"{WORDS[i % 12]} {i}", vector=vectors[i]) for i in range(60)])
        executed: list[str] = []
        execute = store.db.execute
        monkeypatch.setattr(store.db, "execute", lambda sql, params=(): executed.append(sql) or execute(sql, params))
        hits = store.search(vector=vectors[5], fusion="vector", limit=5)
        assert hits[0].memory.text == f"{WORDS[5]} 5"
        assert "SET hnsw.ef_search = 80" in executed


@PG
def test_vectors_stay_in_their_rows(pg_url):
    """A vector, its text and tsvector pass 2 KB: the row stays whole (no TOAST fetch per vector)."""
    with MemoryStore.open(pg_url) as store:
        store.add_many([f"a memory long enough to matter, number {i}, " + "words " * 120 for i in range(50)])
        size = store.db.scalar("SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = "
                               "to_regclass('memory_chunks')")
        row = store.db.scalar("SELECT max(pg_column_size(c.*)) FROM memory_chunks c")
        assert row > 2100 and size == 0


# -- the keyword side's plan -------------------------------------------------------------------


def test_rarest_takes_the_rarest_words_up_to_the_cap():
    assert rarest([500, 20, 3000, 40], 100) == ([1, 3], [0, 2])
    assert rarest([500, 900], 100) == ([0], [1])  # at least one word
    assert rarest([], 100) == ([], [])


def test_the_plans_tsqueries():
    parts = ["'a'", "'b'", "'c'", "'d' <-> 'e'"]
    assert either(parts[:2]) == "('a') | ('b')"
    assert every(parts[2:]) == "('c') & ('d' <-> 'e')"
    assert at_least(parts[:3], 2) == "(('a') & ('b')) | (('a') & ('c')) | (('b') & ('c'))"
    plan, covered = steps(parts[:3], [10, 500, 400], 100)  # 'a' is rare; 'c' and 'b' come next
    assert plan == [("('a')", 100), ("('c') & (('b')) & !(('a'))", 50)]
    assert covered == either(["('a')", at_least(["'c'", "'b'"], 2)])
    plan, covered = steps(parts[:1], [300], 100)  # one common word: a capped sample of its rows
    assert (plan, covered) == ([("('a')", 100)], "('a')")
    plan, _ = steps(parts, [300, 500, 400, 900], 100)  # none is rare: two of the rarest first
    assert plan == [("('a') & (('c') | ('b') | ('d' <-> 'e'))", 16), ("('c') & (('b') | ('d' <-> 'e')) & !('a')", 16),
                    ("('b') & (('d' <-> 'e')) & !('a') & !('c')", 16)]


def _keyword(store: MemoryStore, text: str, scored_rows: int, namespace: str = "default",
             limit: int = 50) -> list[tuple[int, float]]:
    keyword = store.kernel.keyword
    scope = Scope(namespaces=(namespace,))
    keyword.scored_rows = scored_rows
    try:
        with store.kernel.session():
            return keyword.search(keyword.prepare(text, scope), scope, limit)
    finally:
        del keyword.scored_rows


@PG
def test_the_plan_keeps_the_best_matches(pg_url):
    """With the plan forced by a small cap: the best match of scoring every row comes first, also when it
    holds none of the rarest words (two of the commoner ones instead), and the top ranks agree."""
    rng = np.random.default_rng(11)
    texts = []
    for i in range(600):
        words = list(rng.choice(WORDS, size=4, replace=False))
        if i % 3 == 0:
            words.append("apple")
        if i % 4 == 0:
            words.append("banana")
        texts.append(" ".join(words) + " " + " ".join(["filler"] * int(rng.integers(2, 30))))
    for i in range(6):  # the rarest word, in long rows that hold nothing else asked for
        texts.append("zebra " + " ".join(["filler"] * 60) + f" {i}")
    texts.append("apple banana")  # short, both commoner words: the best match, without the rarest word
    with MemoryStore.open(pg_url) as store:
        store.add_many(texts)
        full = _keyword(store, "zebra apple banana", 10**6)
        capped = _keyword(store, "zebra apple banana", 10)
        rowid = store.db.scalar("SELECT chunk_rowid FROM memory_chunks WHERE text = 'apple banana'")
        assert full[0][0] == capped[0][0] == rowid
        assert [r for r, _ in capped[:10]] == [r for r, _ in full[:10]]
        for query in ("amber basil zebra", "kelp lotus indigo apple", "fjord"):
            full, capped = _keyword(store, query, 10**6), _keyword(store, query, 30)
            assert capped[0] == full[0], query
            every_match = _keyword(store, query, 10**6, limit=10**6)
            assert {r for r, _ in capped} <= {r for r, _ in every_match}


@PG
def test_one_word_held_by_more_rows_than_the_cap_is_searched(pg_url):
    with MemoryStore.open(pg_url) as store:
        store.add_many([f"filler row {i} " + " ".join(["filler"] * (i % 7)) for i in range(400)])
        store.db.execute("ANALYZE memory_chunks")  # the planner knows how many rows hold the word
        found = _keyword(store, "filler", 10)  # the plan: a capped sample of its rows, scored
        assert len(found) == 50 and all(score > 0 for _, score in found)


@PG
def test_the_plan_is_exact_where_few_rows_match(pg_url):
    """Below the cap every matching row is scored: the results are those of scoring them all."""
    rng = np.random.default_rng(5)
    texts = [" ".join(rng.choice(WORDS, size=5)) + f" row {i}" for i in range(300)]
    with MemoryStore.open(pg_url) as store:
        store.add_many(texts)
        for query in ("amber", "basil cedar", "garnet harbor indigo row"):
            assert _keyword(store, query, 2000) == _keyword(store, query, 10**6)
        store.add_many([" ".join(rng.choice(WORDS, size=5)) for _ in range(40)], namespace="small")
        for query in ("amber", "delta ember"):  # a small namespace: the planner's estimate is small
            assert _keyword(store, query, 100, "small") == _keyword(store, query, 10**6, "small")


# -- namespace scoping ------------------------------------------------------------------------


@PG
def test_a_small_namespace_is_searched_through_an_index(pg_url, sql_spy):
    """Every statement a search of a small namespace runs reads it through an index, also once psycopg
    has prepared the statement (a plan made for any namespace would scan the whole table)."""
    with MemoryStore.open(pg_url) as store:
        vectors = _vectors(5000, store.embedder.dims)
        store.add_many([NewMemory(text=f"{WORDS[i % 12]} big {i}", vector=vectors[i], namespace="big")
                        for i in range(3000)])
        store.add_many([NewMemory(text=f"{WORDS[i % 12]} small {i}", vector=vectors[i], namespace="small")
                        for i in range(40)])
        store.db.execute("ANALYZE memory_chunks")
        assert store.db.scalar("SHOW plan_cache_mode") == "force_custom_plan"
        selects = lambda sql: "namespace = ?" in sql and sql.lstrip().upper().startswith("SELECT")  # noqa: E731
        with sql_spy(store.db, "query", selects) as statements:
            hits = store.search("amber small", namespace="small", limit=5)
        assert hits and all(h.memory.namespace == "small" for h in hits)
        assert len(statements) >= 2  # the keyword side's and the vector side's
        for sql, params in statements:
            for _ in range(7):  # psycopg prepares a statement at its fifth run
                plan = "\n".join(r[0] for r in store.db.query("EXPLAIN " + sql, params))
            assert "Seq Scan on memory_chunks" not in plan, plan
            assert "idx_chunks_namespace" in plan, plan


@PG
def test_a_search_inside_a_transaction_sees_its_rows(pg_url):
    """The vector side runs on another connection beside the keyword side, except inside a transaction."""
    with MemoryStore.open(pg_url) as store:
        store.add("the heat pump is new")
        with store.transaction():
            added = store.add("solar panels on the roof")
            assert str(added) in store.search("solar panels", limit=3).ids
            assert str(added) in store.search(vector=store.embed(["solar panels on the roof"])[0], fusion="vector",
                                            limit=3).ids
        assert json.dumps(store.search("solar", limit=1).ids) == json.dumps([str(added)])


def _search_in_child(url: str, queue) -> None:
    with MemoryStore.open(url) as store:
        queue.put([h.text for h in store.search("solar panels", limit=1)])


@PG
def test_a_forked_process_searches(pg_url):
    """The threads that run the vector side are the parent's: a forked child starts its own."""
    with MemoryStore.open(pg_url) as store:
        store.add_many(["solar panels on the roof", "the heat pump is new"])
        assert store.search("solar panels", limit=1).ids  # the parent's vector thread runs now (and stays)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_search_in_child, args=(pg_url, queue))
    child.start()
    try:
        assert queue.get(timeout=120) == ["solar panels on the roof"]
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()


def _use_in_child(url: str, queue) -> None:
    with MemoryStore.open(url) as store:
        for _ in range(8):  # psycopg prepares a statement at its fifth run, on the connection it runs on
            store.get_many(["x"])
        queue.put(os.getpid())


@PG
def test_a_forked_child_opens_its_own_connections(pg_url):
    """A pool kept open in the parent is not the child's: sharing its socket would mix the two processes'
    statements on one server session (and the child's exit would close it under the parent)."""
    from shared_core.db.postgres.pool import POOLS

    linger, POOLS.linger = POOLS.linger, True
    try:
        with MemoryStore.open(pg_url) as store:
            store.add("solar panels on the roof")
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_use_in_child, args=(pg_url, queue))
        child.start()
        try:
            assert queue.get(timeout=120) == child.pid
        finally:
            child.join(60)
            if child.is_alive():
                child.kill()
        with MemoryStore.open(pg_url) as store:  # the parent's pool, as it left it
            for _ in range(8):
                assert store.get_many(["x"]) == []
            assert [hit.text for hit in store.search("solar panels", limit=1)] == ["solar panels on the roof"]
    finally:
        POOLS.linger = linger


@PG
def test_a_big_tables_mean_length_and_a_big_scopes_rows_come_from_a_sample(pg_alone_url, monkeypatch):
    """avgdl and the gate's count of a scope's rows: exact below the sample's size, from a sample of the
    table's pages above it (at a million rows the exact ones read every row, 0.8-1.2 s each). On a new
    table: in a reused schema the pages the sample picks also hold an earlier test's dead rows, and the
    estimate of 600 rows came out at 765."""
    from shared_core.index import keyword_pg

    with MemoryStore.open(pg_alone_url) as store:
        store.add_many([f"{'word ' * (1 + i % 7)}number {i}" for i in range(600)], namespace="big")
        store.add_many([f"small {i}" for i in range(40)], namespace="small")
        store.db.execute("ANALYZE memory_chunks")
        keyword = store.kernel.keyword
        exact_mean = store.db.scalar("SELECT avg(search_length) FROM memory_chunks")
        statements: list[str] = []
        original = store.db.scalar
        monkeypatch.setattr(store.db, "scalar", lambda sql, params=(): statements.append(sql) or original(sql, params))
        monkeypatch.setattr(keyword_pg, "_STATISTICS_FROM_ROWS", 100)
        monkeypatch.setattr(keyword_pg, "_SAMPLED_ROWS", 200)
        keyword.prepare("word number")  # N, as a search reads it
        mean = keyword._average_length()
        assert any("TABLESAMPLE" in s for s in statements)
        assert abs(mean - float(exact_mean)) < 0.25 * float(exact_mean)
        statements.clear()
        rows, _ = keyword._scope_counters(Scope(namespaces=("big",)), {}, {})
        assert 450 <= rows(None) <= 750 and any("TABLESAMPLE" in s for s in statements)
        statements.clear()
        rows, _ = keyword._scope_counters(Scope(namespaces=("small",)), {}, {})
        assert rows(None) == 40 and not any("TABLESAMPLE" in s for s in statements)  # counted: under the sample's size


def _buffers(plan: str) -> int:
    """The pages (found in shared buffers or read) of an EXPLAIN (ANALYZE, BUFFERS) plan's top node."""
    return sum(int(n) for n in re.findall(r"(?:hit|read)=(\d+)", plan.split("\n")[1]))


def _skips_table_pages(store: MemoryStore) -> bool:
    """Whether this server counts a bitmap scan's rows on all-visible pages without reading those pages.
    PostgreSQL 16.2 does; releases since the fix that took the shortcut out (16.14 and 18.4 measured)
    read a table page per row whatever the visibility map says."""
    with store.db.connection() as conn:
        conn.execute("CREATE TEMP TABLE probe (words tsvector, pad text STORAGE PLAIN)")  # a few rows a page
        try:
            conn.execute("INSERT INTO probe SELECT to_tsvector('simple', 'amber'), repeat('x', 2000) "
                         "FROM generate_series(1, 200)")
            conn.execute("CREATE INDEX ON probe USING gin (words)")
            conn.execute("VACUUM (ANALYZE) probe")
            conn.execute("SET enable_seqscan = off")
            plan = [r[0] for r in conn.execute("EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM "
                                               "(SELECT FROM probe WHERE words @@ 'amber'::tsquery) s")]
            return _buffers("\n".join(plan)) < 20
        finally:
            conn.execute("RESET enable_seqscan")
            conn.execute("DROP TABLE probe")


@PG
def test_a_words_rows_are_counted_on_the_index_alone_once_vacuumed(vacuumable_url, monkeypatch):
    """After a load every page is all-visible, and the idf's count asks for no column: a server that
    can (see :func:`_skips_table_pages`) reads no table page of those rows (a page per row made the
    first searches of every process slow at a million rows)."""
    from shared_core.index import keyword_pg

    with MemoryStore.open(vacuumable_url) as store:
        store.add_many([f"{'amber' if i % 10 == 0 else 'basil'} note {i} " + "padding " * 40
                        for i in range(1500)])  # vacuumed after the load
        pages, visible = store.db.query(
            "SELECT relpages, relallvisible FROM pg_class WHERE oid = 'memory_chunks'::regclass")[0]
        assert pages > 300 and visible >= 0.9 * pages  # the VACUUM after the load marked them
        counts: list[tuple[str, tuple]] = []
        original = store.db.scalar

        def spy(sql, params=()):
            if "search_text @@" in sql:
                counts.append((sql, params))
            return original(sql, params)

        monkeypatch.setattr(store.db, "scalar", spy)
        monkeypatch.setattr(keyword_pg, "_STATISTICS_FROM_ROWS", 100)
        assert store.kernel.keyword._document_frequency("'amber'", [], 1500) == 150  # on 150 table pages
        sql, params = counts[-1]
        plan = "\n".join(r[0] for r in store.db.query(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params))
        buffers = _buffers(plan)
        assert "Bitmap Heap Scan" in plan, plan
        if _skips_table_pages(store):
            assert buffers < 50, plan
        else:  # one page per row counted, no more
            assert buffers < 150 + 50, plan


@PG
def test_a_memory_migrated_to_the_search_columns_gets_their_statistics(pg_url):
    """Migration 45 added search_text to rows ANALYZE had seen; migration 49 analyses the table, so
    keyword search reads common words' shares from the statistics instead of counting their rows."""
    def statistics(store: MemoryStore) -> int:
        return int(store.db.scalar("SELECT count(*) FROM pg_stats WHERE schemaname = ? AND tablename = 'memory_chunks' "
                                   "AND attname = 'search_text'", (store.db.schema,)))

    with MemoryStore.open(pg_url) as store:
        for i in range(30):
            store.add(f"amber note {i}", dedup=False)
        store.db.execute("DELETE FROM pg_statistic WHERE starelid = 'memory_chunks'::regclass")  # (a superuser)
        assert statistics(store) == 0  # as after migration 45
        store.db.execute("DELETE FROM _migrations WHERE version = 49")
    with MemoryStore.open(pg_url) as store:
        assert statistics(store) == 1

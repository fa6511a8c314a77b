"""Hybrid search: scope before top-k, namespaces, explanations, access tracking, ranking."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import ManualClock, MemoryStore
from shared_core.ranking import feedback_weight, fuse, koshi_rank, recency_weight

MODES = ["mirror", "sqlite-vec"]


@pytest.fixture(params=MODES)
def any_store(request, clock):
    with MemoryStore.open(":memory:", clock=clock, config={"search": {"vector_index": request.param}}) as s:
        yield s


def test_seed_002_feedback_weights():
    # seed 002: score 3 = 1.82x, 0 = 1.0x, -1 = 0.82x, -5 = 0.37x
    assert round(feedback_weight(3), 2) == 1.82
    assert feedback_weight(0) == 1.0
    assert round(feedback_weight(-1), 2) == 0.82
    assert round(feedback_weight(-5), 2) == 0.37
    assert recency_weight(0) == 1.0
    assert recency_weight(100) == 0.5
    assert koshi_rank(2.0, 3, 100) == pytest.approx(2.0 * math.exp(0.6) * 0.5)


def test_fusion_methods():
    bm25 = {1: 4.0, 2: 2.0}
    sims = {1: 0.5, 3: 0.9}
    kf = fuse("keyword_first", bm25, sims, vector_weight=0.5, similarity_floor=0.5)
    assert kf[1].relevance == 1.0 and kf[2].relevance == 0.5 and kf[3].relevance == pytest.approx(0.5 * 0.8)
    rrf = fuse("rrf", bm25, sims, vector_weight=0.0, similarity_floor=0.0, rrf_k=60)
    assert rrf[1].relevance == pytest.approx(1 / 61 + 1 / 62)
    assert fuse("keyword", bm25, sims, vector_weight=1, similarity_floor=0).keys() == {1, 2}
    with pytest.raises(ValueError):
        fuse("nope", bm25, sims, vector_weight=1, similarity_floor=0)


def test_filtered_knn_returns_k_when_k_match(any_store):
    rng = np.random.default_rng(0)
    for i in range(300):
        any_store.add(f"item {i}", metadata={"group": i % 7}, vector=None, dedup=False, id=f"i{i}")
    query = "item 42"
    hits = any_store.search(query, fusion="vector", where={"group": 3}, limit=10)
    assert len(hits) == 10 and all(h.metadata["group"] == 3 for h in hits)
    hits = any_store.search(query, fusion="vector", where={"group": 3}, limit=100)
    assert len(hits) == len([i for i in range(300) if i % 7 == 3])
    del rng


def test_mirror_and_sqlite_vec_agree(clock):
    texts = [f"note about topic {i % 13} and detail {i}" for i in range(200)]
    results = []
    for mode in MODES:
        with MemoryStore.open(":memory:", clock=clock, config={"search": {"vector_index": mode}}) as s:
            s.add_many([{"text": t, "id": f"n{i}"} for i, t in enumerate(texts)])
            results.append(s.search("topic 5 detail", fusion="vector", limit=10).ids)
    assert results[0] == results[1]


def test_binary_quantised_scan_finds_the_exact_neighbours(clock):
    cfg = {"search": {"exact_scan_rows": 50, "rerank_pool": 256}}
    texts = [f"memory {i} about {w}" for i, w in enumerate(["cats", "dogs", "trains", "rain", "code"] * 200)]
    with MemoryStore.open(":memory:", clock=clock, config=cfg) as fast, \
         MemoryStore.open(":memory:", clock=clock, config={"search": {"vector_index": "sqlite-vec"}}) as exact:
        for s in (fast, exact):
            s.add_many([{"text": t, "id": f"m{i}"} for i, t in enumerate(texts)])
        overlap = []
        for q in ["memory 17 about trains", "about code", "memory 999", "dogs in the rain"]:
            a = set(fast.search(q, fusion="vector", limit=10).ids)
            b = set(exact.search(q, fusion="vector", limit=10).ids)
            overlap.append(len(a & b) / 10)
        assert np.mean(overlap) >= 0.9


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["user:a", "user:b", "agent:x"]), st.sampled_from(
    ["deploy on friday", "tea with milk", "the cat sleeps", "server in frankfurt", "dark mode"])), min_size=1, max_size=15),
    st.sampled_from(["deploy", "tea", "cat server", "dark frankfurt mode"]))
def test_namespaces_never_leak(items, query):
    with MemoryStore.open(":memory:", clock=ManualClock("2026-01-01")) as s:
        for ns, text in items:
            s.add(text, namespace=ns, dedup=False)
        for ns in ("user:a", "user:b", "agent:x", "nobody"):
            for fusion in ("keyword_first", "keyword", "vector", "rrf"):
                hits = s.search(query, namespace=ns, fusion=fusion, limit=50)
                assert all(h.memory.namespace == ns for h in hits)
        prefix_hits = s.search(query, namespace_prefix="user:", limit=50, fusion="vector")
        assert all(h.memory.namespace.startswith("user:") for h in prefix_hits)
        assert len(prefix_hits) == sum(1 for ns, _ in items if ns.startswith("user:"))


def test_hits_explain_their_score(store, clock):
    mid = store.add("The production server runs on Fly.io in Frankfurt", tags=["infra", "deploy"])
    store.add("Lunch is at noon")
    clock.advance(days=10)
    store.reinforce(mid)
    clock.advance(days=20)
    (hit,) = store.search("where is prod deployed?", limit=1)
    p = hit.parts
    assert hit.id == mid and p.bm25 > 0 and p.keyword == 1.0 and p.similarity is not None
    assert p.feedback == pytest.approx(math.exp(0.6))
    assert p.days_since_hit == pytest.approx(20) and p.recency == pytest.approx(0.8 + 0.2 / 1.2)  # recency_floor 0.8
    assert hit.score == pytest.approx(p.relevance * p.feedback * p.recency)
    assert "relevance" in hit.explain() and "recency" in hit.explain()
    html = store.search("server")._repr_html_()
    assert "<table>" in html and "Frankfurt" in html


def test_feedback_and_recency_reorder_equal_matches(store, clock):
    old = store.add("kiwi jam recipe", dedup=False)
    clock.advance(days=100)
    new = store.add("kiwi jam recipes", dedup=False)
    assert store.search("kiwi jam", fusion="keyword").ids[0] == new
    store.reinforce(old)
    assert store.search("kiwi jam", fusion="keyword").ids[0] == old
    store.demote(old)
    store.demote(old)
    store.demote(old)
    store.demote(old)
    assert store.search("kiwi jam", fusion="keyword").ids[0] == new


def test_access_tracking_never_touches_feedback(store, clock):
    mid = store.add("alpha beta gamma")
    store.search("alpha")
    store.search("alpha")
    store.search("alpha", track_access=False)
    m = store.get(mid)
    assert m.access_count == 2 and m.last_access_at == clock.now()
    assert m.score == 0 and m.last_hit_at is None


def test_search_needs_text_or_vector(store):
    with pytest.raises(ValueError, match="query text or a vector"):
        store.search("   ")
    with pytest.raises(ValueError, match="unknown fusion"):
        store.search("x", fusion="magic")


def test_kind_tags_category_source_and_time_filters(store, clock):
    a = store.add("deploy notes", tags=["ops"], category="infra", source="conversation")
    clock.advance(days=5)
    b = store.add("deploy diary", kind="episode", tags=["journal"], category="personal", source="agent")
    assert store.search("deploy", kind="episode").ids == [b]
    assert store.search("deploy", tags=["ops", "nothing"]).ids == [a]
    assert store.search("deploy", category="personal").ids == [b]
    assert store.search("deploy", source="conversation").ids == [a]
    assert store.search("deploy", since="2026-01-03").ids == [b]
    assert store.search("deploy", until="2026-01-03").ids == [a]
    assert sorted(store.search("deploy", namespace=["default", "other"]).ids) == sorted([a, b])


def test_offset_pages_through_results(store):
    for i in range(12):
        store.add(f"page test item {i}", dedup=False, id=f"p{i:02d}")
    first = store.search("page test item", limit=5, fusion="keyword").ids
    second = store.search("page test item", limit=5, offset=5, fusion="keyword").ids
    assert len(first) == 5 and len(second) == 5 and not set(first) & set(second)


def test_document_frequency_gate_drops_only_common_words(clock):
    cfg = {"search": {"df_gate_min_rows": 5, "max_df_ratio": 0.3}}
    with MemoryStore.open(":memory:", clock=clock, config=cfg) as s:
        for i in range(40):
            s.add(f"what did the team say in meeting {i}", dedup=False)
        target = s.add("what did the team say about the zeppelin", dedup=False)
        prepared = s.kernel.keyword.prepare("what did the team say about zeppelins")
        assert "zeppelins" in prepared.used and "what" not in prepared.used
        assert s.search("what did the team say about zeppelins", fusion="keyword").ids[0] == target
        only_common = s.kernel.keyword.prepare("what did the team say")
        assert len(only_common.used) == 2  # the rarest two are kept when all are common


def test_keyword_strength_is_absolute(store):
    for i in range(30):
        store.add(f"the note number {i} is in the list", dedup=False)
    target = store.add("the zeppelin landed in the field", dedup=False)
    (common,) = store.search("the", fusion="keyword", limit=1)
    assert common.parts.keyword == 1.0 and common.parts.keyword_strength < 0.2  # best hit, but weak
    (strong,) = store.search("zeppelin field", fusion="keyword", limit=1)
    assert strong.id == target and strong.parts.keyword_strength > 0.8


def test_keyword_scale_option_changes_only_the_fusion_scale(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"search": {"keyword_scale": "full_match"}}) as s:
        for i in range(20):
            s.add(f"the note number {i} is in the list", dedup=False)
        s.add("the zeppelin landed", dedup=False)
        hits = s.search("the zeppelin", fusion="keyword", limit=5)
        assert hits[0].parts.keyword == 1.0  # the full match
        assert all(h.parts.keyword < 0.2 for h in hits[1:])  # matched only "the": weak on the absolute scale


def _spread_store(path, clock, **search):
    store = MemoryStore.open(path, clock=clock, config={"search": {"exact_scan_rows": 50, **search}})
    return store


def _fill(store):
    words = ["deploy", "tea", "server", "frankfurt", "cat", "rain", "code", "train"]
    store.add_many([
        {"text": f"{words[i % 8]} note {i} about {words[(i * 3) % 8]} and {words[(i * 5) % 8]}",
         "id": f"n{i}", "namespace": f"user:{i % 3}", "metadata": {"group": i % 4}}
        for i in range(600)
    ])


@pytest.mark.sqlite_only
def test_vector_scan_beside_the_keyword_query_finds_the_same_hits(tmp_path, clock, monkeypatch):
    import threading

    from shared_core.index import vectors, workers

    monkeypatch.setattr(workers, "CPUS", 2)  # a one-CPU runner would never use the worker
    names = []
    scan = vectors.SqliteVectorIndex._scan

    def spy(self, *args):
        names.append(threading.current_thread().name)
        return scan(self, *args)

    monkeypatch.setattr(vectors.SqliteVectorIndex, "_scan", spy)
    path = tmp_path / "m.db"
    with _spread_store(path, clock, parallel_scan_rows=0) as serial:
        _fill(serial)
        with _spread_store(path, clock, parallel_scan_rows=100) as parallel:
            parallel.search("warm the mirror up", fusion="vector")  # the first search loads it, in line
            cases = [("deploy tea", {"namespace": "user:0"}, True),
                     ("server frankfurt", {"namespace": "user:1"}, True),
                     ("cat rain code", {"namespace": "user:2", "kind": "fact"}, True),
                     ("note 17 train", {"namespace": "user:2", "fusion": "rrf", "limit": 20}, True),
                     ("tea note", {"namespace": "user:1", "where": {"group": 2}}, False)]  # needs the table: in line
            for query, kwargs, on_worker in cases:
                names.clear()
                expected = serial.search(query, track_access=False, **kwargs)
                assert not any(n.startswith("openkoi-vector-scan") for n in names)
                got = parallel.search(query, track_access=False, **kwargs)
                assert any(n.startswith("openkoi-vector-scan") for n in names) == on_worker
                assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in expected] and len(got) > 0


@pytest.mark.sqlite_only
def test_a_failed_keyword_query_waits_for_the_vector_scan(tmp_path, clock, monkeypatch):
    import time

    from shared_core.index import keyword, vectors, workers

    monkeypatch.setattr(workers, "CPUS", 2)
    finished = []
    scan = vectors.SqliteVectorIndex._scan

    def slow(self, *args):
        time.sleep(0.2)
        result = scan(self, *args)
        finished.append(True)
        return result

    def broken(self, *args):
        raise RuntimeError("keyword side failed")

    with _spread_store(tmp_path / "m.db", clock, parallel_scan_rows=100) as store:
        _fill(store)
        store.search("warm the mirror up", fusion="vector")
        monkeypatch.setattr(vectors.SqliteVectorIndex, "_scan", slow)
        monkeypatch.setattr(keyword.SqliteKeywordIndex, "search", broken)
        with pytest.raises(RuntimeError, match="keyword side failed"):
            store.search("deploy tea")
        assert finished == [True]  # the scan had ended before the error left the store's lock


def _search_in_child(path: str) -> None:
    with MemoryStore.open(path, config={"search": {"exact_scan_rows": 50, "parallel_scan_rows": 100}}) as store:
        store.search("warm the mirror up", fusion="vector")
        if not store.search("deploy tea", namespace="user:0"):
            raise SystemExit(1)


@pytest.mark.sqlite_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_the_vector_scan_worker_after_fork(tmp_path, clock, monkeypatch):
    import multiprocessing

    from shared_core.index import workers

    monkeypatch.setattr(workers, "CPUS", 2)
    path = tmp_path / "m.db"
    with _spread_store(path, clock, parallel_scan_rows=100) as store:
        _fill(store)
        store.search("warm the mirror up", fusion="vector")
        assert store.search("deploy tea", namespace="user:0")  # the parent's worker threads now exist
    child = multiprocessing.get_context("fork").Process(target=_search_in_child, args=(str(path),))
    child.start()
    child.join(60)
    if child.exitcode is None:
        child.kill()
    assert child.exitcode == 0  # an inherited pool with no threads would have hung the child


def test_search_reads_whole_rows_for_its_hits_only(store, monkeypatch):
    for i in range(60):
        store.add(f"garden note {i} about tomatoes and {'basil' if i % 2 else 'beans'}", dedup=False)
    store.reinforce(store.search("garden note 7", limit=1)[0].id)
    full = store.search("garden tomatoes basil", limit=20, track_access=False)
    read = []
    by_rowids = store.kernel.memories.by_rowids
    monkeypatch.setattr(store.kernel.memories, "by_rowids", lambda rowids: read.append(len(rowids)) or by_rowids(rowids))
    page = store.search("garden tomatoes basil", limit=5, offset=5, track_access=False)
    assert [(h.id, h.score) for h in page] == [(h.id, h.score) for h in full[5:10]]
    assert read == [10]  # the candidates were ranked on three columns; whole rows for the ten
    floor = full[8].score
    above = store.search("garden tomatoes basil", limit=20, min_score=floor, track_access=False)
    assert [h.id for h in above] == [h.id for h in full if h.score >= floor]


def test_the_idf_of_a_word_counted_in_more_rows_than_the_total_is_the_floor():
    """PostgreSQL counts N and n in separate statements: another process's rows can land between them."""
    from shared_core.index.keyword_query import idf

    assert idf(10, 12) == idf(10, 10) == 1e-6
    assert idf(1000, 10) == pytest.approx(4.5468, abs=1e-4)  # ln(990.5 / 10.5)

"""The near-duplicate check of ``add``: the mirror's two-stage sign-bit scan agrees with an exact scan.

The stores here take 384-dimensional vectors made up by the tests, so they are opened with the
hashing embedder (384 dimensions) rather than the default.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shared_core import HashingEmbedder, MemoryStore
from shared_core.index import mirror as mirror_module
from shared_core.index import workers
from shared_core.index.codes import centred_threshold, popcount, sign_bit_bound, sign_code
from shared_core.index.protocols import RowState
from shared_core.index.scope import Scope


def test_sign_bit_bound_numbers():
    # p = arccos(0.9) / pi = 0.14357; over 128 bits: mean 18.38, sd 3.966; mean + 6 sd = 42.2 -> 43
    assert math.isclose(math.acos(0.9) / math.pi, 0.14357, abs_tol=1e-5)
    assert sign_bit_bound(0.9, 128) == 43
    assert sign_bit_bound(0.9, 384) == 97
    assert sign_bit_bound(0.99, 128) == 20  # p = 0.04505: mean 5.77, sd 2.35 -> 19.9 -> 20
    assert sign_bit_bound(0.0, 128) is None  # a bound at half the bits separates nothing


def test_sign_code_packs_signs_into_words():
    vector = np.array([1.0, -1.0] * 48 + [-0.5] * 4, dtype=np.float32)  # 100 dims: two words, the second padded
    code = sign_code(vector, 2)
    assert code.dtype == np.uint64 and code.shape == (2,)
    bits = np.unpackbits(code.view(np.uint8))
    assert bits[:100].tolist() == [1, 0] * 48 + [0] * 4 and not bits[100:].any()
    assert np.array_equal(sign_code(np.stack([vector, -vector]), 2)[0], code)


def test_popcount_without_numpy_2_counts_the_same_bits(monkeypatch):
    words = np.random.default_rng(5).integers(0, 2**63, size=(7, 4), dtype=np.uint64)
    expected = [[bin(int(w)).count("1") for w in row] for row in words]
    monkeypatch.delattr(np, "bitwise_count", raising=False)  # numpy 1.x has none: the table path
    assert popcount(words).tolist() == expected
    assert popcount(words[:, 0].copy()).tolist() == [row[0] for row in expected]


def _numpy_near(mirror: mirror_module.Mirror, code: np.ndarray, head_bound: int, bound: int) -> tuple[np.ndarray, np.ndarray]:
    saved, mirror_module._speedups = mirror_module._speedups, None
    try:
        return mirror.near_centred(code, head_bound, bound)
    finally:
        mirror_module._speedups = saved


@pytest.mark.parametrize("dims", [128, 384, 400])  # no tail; four tail words; a padded last word
@pytest.mark.parametrize("size", [0, 3, 1001, 9001])  # sizes that are not a multiple of the four or eight rows per step
@pytest.mark.parametrize("halves", [False, True])  # one pass; two halves on two threads (a big mirror's)
def test_the_compiled_scan_finds_what_numpy_finds(dims, size, halves, kernel, monkeypatch):
    if halves:
        monkeypatch.setattr(workers, "CPUS", 2)
        monkeypatch.setattr(mirror_module, "_SPLIT_ROWS", 2)
    rng = np.random.default_rng(size + dims)
    mirror = mirror_module.Mirror(dims)
    rows = _unit(rng, size, dims)
    if size:
        rows[: size // 3] = [_at_similarity(rng, rows[-1], c) for c in rng.uniform(0.3, 1.0, size // 3)]
        mirror.bulk_load(np.arange(1, size + 1), [RowState("a", "fact", math.inf, True, "", 0.0)] * size,
                         rows)
    query = rows[-1] if size else _unit(rng, 1, dims)[0]
    code = mirror.centred(query)[1]
    starts = []
    near_rows = mirror._near_rows
    monkeypatch.setattr(mirror, "_near_rows", lambda *args: starts.append(args[3]) or near_rows(*args))
    for head_bound, bound in ((0, 0), (20, 60), (49, 113), (60, 200), (128, dims)):  # the last: every row
        found, distances = mirror.near_centred(code, head_bound, bound)
        expected, expected_distances = _numpy_near(mirror, code, head_bound, bound)
        assert found.tolist() == expected.tolist() and distances.tolist() == expected_distances.tolist()
    assert mirror.near_centred(code, 128, dims)[0].size == size  # more than the 4,096 the buffers first hold
    assert set(starts) == ({0, size // 2} if halves and size >= 2 else {0})


def test_a_pool_that_refuses_work_at_shutdown_leaves_the_scan_to_the_caller(monkeypatch):
    """At interpreter shutdown the executors refuse new work: an add (or a search) made then, from an
    atexit handler say, scans on its own thread instead of failing."""
    from concurrent.futures import ThreadPoolExecutor

    refusing = ThreadPoolExecutor(max_workers=1)
    refusing.shutdown()
    monkeypatch.setattr(workers, "CPUS", 2)
    monkeypatch.setattr(workers, "scan_pool", lambda: refusing)
    monkeypatch.setattr(mirror_module, "_SPLIT_ROWS", 2)
    assert workers.submit(print, "never") is None
    rng = np.random.default_rng(3)
    mirror = mirror_module.Mirror(384)
    rows = _unit(rng, 500, 384)
    mirror.bulk_load(np.arange(1, 501), [RowState("a", "fact", math.inf, True, "", 0.0)] * 500, rows)
    code = mirror.centred(rows[7])[1]
    found, distances = mirror.near_centred(code, 49, 113)
    expected, expected_distances = _numpy_near(mirror, code, 49, 113)
    assert 7 in found.tolist() and found.tolist() == expected.tolist()
    assert distances.tolist() == expected_distances.tolist()


def test_the_compiled_scores_are_numpys():
    pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    rng = np.random.default_rng(4)
    mirror = mirror_module.Mirror(384)
    rows = _unit(rng, 3000)
    mirror.bulk_load(np.arange(1, 3001), [RowState("a", "fact", math.inf, True, "", 0.0)] * 3000, rows)
    query, slots = rows[7], np.array([7, 2999, 0, 1500, 7] + list(range(100, 300)))
    assert np.allclose(mirror.scores(slots, query), rows[slots] @ query, rtol=0, atol=1e-6)
    assert mirror.scores(slots, query)[0] == pytest.approx(1.0, abs=1e-6)
    assert mirror.scores(np.array([], dtype=np.int64), query).size == 0
    with pytest.raises(ValueError, match="slot 4096 is not one of the 4096 rows"):
        mirror_module._speedups.similarities(mirror.vectors, np.array([4096]), query, np.empty(1))


def test_the_compiled_scan_refuses_buffers_too_short_for_its_rows():
    pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    head, code = np.zeros(8, np.uint64), np.zeros(2, np.uint64)
    slots, dist = np.empty(4, np.int64), np.empty(4, np.uint16)
    with pytest.raises(ValueError, match="head0 holds 64 bytes, fewer than the 80"):
        mirror_module._speedups.near(head, head, head, 0, 10, code, 5, 5, slots, dist)
    with pytest.raises(ValueError, match="code holds 16 bytes, fewer than the 24"):
        mirror_module._speedups.near(head, head, head, 1, 8, code, 5, 5, slots, dist)
    slots.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):  # numpy's words for an output it may not write
        mirror_module._speedups.near(head, head, head, 0, 8, code, 5, 5, slots, dist)
    with pytest.raises(ValueError, match="the bounds must not be negative"):  # the kernels' compares differ below 0
        mirror_module._speedups.near(head, head, head, 0, 8, code, -1, 5, slots, dist)
    with pytest.raises(ValueError, match="no kernel 'sse9' on this CPU"):
        mirror_module._speedups.use_near_kernel("sse9")
    assert mirror_module._speedups.near_kernels()[-1] == "portable"


def _unit(rng: np.random.Generator, n: int, dims: int = 384) -> np.ndarray:
    x = rng.standard_normal((n, dims)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _at_similarity(rng: np.random.Generator, base: np.ndarray, cos: float) -> np.ndarray:
    """A unit vector with exactly cosine ``cos`` to ``base``."""
    noise = rng.standard_normal(base.size).astype(np.float32)
    noise -= (noise @ base) * base
    noise /= np.linalg.norm(noise)
    return (cos * base + math.sqrt(1 - cos * cos) * noise).astype(np.float32)


def _best(index, query: np.ndarray, threshold: float, scope: Scope) -> tuple[int, float] | None:
    """The most similar row above ``threshold``, as ``add``'s check finds it (``above`` with limit 1)."""
    found = index.above(query, threshold, scope, now=0.0, limit=1)
    return found[0] if found else None


def _check_against_a_scan(store, rows: np.ndarray, rng: np.random.Generator) -> int:
    """The check (``above``) over namespace "a" (rows i % 5 != 0) for queries at several similarities to
    every 37th row, compared with an exact scan; returns how many found a row above 0.9."""
    vectors = store.kernel.memories.vectors
    scope = Scope(namespaces=("a",), kinds=("fact",))
    rowid_of = {m.text: m.rowid for m in store.list(namespace="a", limit=None)}
    checked = 0
    for i in range(0, len(rows), 37):
        for cos in (0.999, 0.95, 0.91, 0.89, 0.5):
            query = _at_similarity(rng, rows[i], cos)
            found = _best(vectors, query, 0.9, scope)
            sims = rows @ query
            sims[::5] = -2  # namespace "b" is out of scope
            best = int(np.argmax(sims))
            if sims[best] > 0.9:
                assert found is not None and found[0] == rowid_of[f"row {best}"]
                assert found[1] == pytest.approx(sims[best], abs=1e-5)
                checked += 1
            else:
                assert found is None
    return checked


def _rows(rows: np.ndarray, start: int = 0) -> list[dict]:
    return [{"text": f"row {i}", "vector": v, "namespace": "a" if i % 5 else "b"}
            for i, v in enumerate(rows[start:], start)]


@pytest.mark.sqlite_only
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_check_agrees_with_an_exact_scan(seed, speedups):
    rng = np.random.default_rng(seed)
    rows = _unit(rng, 6000)
    rows[:200] = rows[:200] + 0.8 * rows[200:400]  # correlated pairs: an anisotropic corner
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    with MemoryStore.open(":memory:", embedder=HashingEmbedder()) as store:
        store.add_many(_rows(rows))
        assert _check_against_a_scan(store, rows, rng) > 100


@pytest.mark.sqlite_only
def test_the_check_agrees_with_an_exact_scan_when_every_vector_shares_a_direction(speedups):
    """Embeddings lean one way (their mean has norm ~0.5): the check centres the codes on the mean,
    which the mirror recomputes as it grows, and its bound still holds."""
    rng = np.random.default_rng(11)
    common = _unit(rng, 1)[0]
    rows = _unit(rng, 4000) + 0.6 * common
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    with MemoryStore.open(":memory:", embedder=HashingEmbedder()) as store:
        store.add_many(_rows(rows[:600]))
        store.search(vector=rows[0], limit=1)  # the mirror loads now, centred on 600 rows ...
        for start in range(600, 4000, 850):  # ... and recentres as more arrive, after the batches that double it
            store.add_many(_rows(rows[: start + 850], start))
        mirror = store.kernel.memories.vectors.sync()
        assert mirror.size == 4000 and np.linalg.norm(mirror.centre) > 0.4
        # recentred each time it doubled: last when a batch took it past 2,900 rows (to 3,150)
        assert np.allclose(mirror.centre, rows[:3150].mean(axis=0), atol=1e-6)
        assert _check_against_a_scan(store, rows, rng) > 50


@pytest.mark.sqlite_only  # the SQLite vector index's file
def test_the_check_in_a_small_namespace_reads_its_rows_only_and_agrees_with_an_exact_scan(tmp_path, monkeypatch):
    rng = np.random.default_rng(21)
    big, small = _unit(rng, 4000), _unit(rng, 100)
    with MemoryStore.open(tmp_path / "ns.db", embedder=HashingEmbedder()) as store:
        store.add_many([{"text": f"big {i}", "vector": v, "namespace": "big"} for i, v in enumerate(big)])
        store.add_many([{"text": f"small {i}", "vector": v, "namespace": "small"} for i, v in enumerate(small)])
        index = store.kernel.memories.vectors
        assert index.sync().file_backed
        rowid_of = {m.text: m.rowid for m in store.list(namespace="small", limit=None)}
        read: list[Scope] = []
        rowids_in = index._rowids_in
        monkeypatch.setattr(index, "_rowids_in", lambda scope: read.append(scope) or rowids_in(scope))
        scope, checked = Scope(namespaces=("small",), kinds=("fact",)), 0
        for i in range(0, 100, 7):
            for cos in (0.99, 0.92, 0.5):
                query = _at_similarity(rng, small[i], cos)
                found = _best(index, query, 0.9, scope)
                sims = small @ query
                best = int(np.argmax(sims))
                if sims[best] > 0.9:
                    assert found is not None and found[0] == rowid_of[f"small {best}"]
                    assert found[1] == pytest.approx(sims[best], abs=1e-5)
                    checked += 1
                else:
                    assert found is None
        assert checked >= 20 and read and all(s.namespaces == ("small",) for s in read)  # the table's index
        read.clear()
        found = _best(index, _at_similarity(rng, big[3], 0.95), 0.9, Scope(namespaces=("big",), kinds=("fact",)))
        assert found is not None and found[0] == store.list(namespace="big", limit=None, order_by="chunk_rowid")[3].rowid
        assert read == []  # a namespace holding most rows: the codes of all rows, not the table


def test_the_centred_threshold_bounds_the_similarity_of_centred_vectors():
    rng = np.random.default_rng(3)
    query = _unit(rng, 1)[0]
    assert centred_threshold(0.9, query, np.zeros_like(query)) == pytest.approx(0.9)
    for _ in range(300):
        shift = _unit(rng, 1)[0] * rng.uniform(0.0, 0.9)
        query = _unit(rng, 1)[0] + rng.uniform(0, 2) * shift  # leaning towards the shift, as embeddings do
        query /= np.linalg.norm(query)
        least = centred_threshold(0.9, query, shift)
        for cos in (0.9001, 0.95, 0.99):
            other = _at_similarity(rng, query, cos)
            a, b = query - shift, other - shift
            assert least is None or a @ b / np.linalg.norm(a) / np.linalg.norm(b) >= least - 1e-6


@pytest.mark.sqlite_only
def test_the_check_with_low_thresholds_and_small_mirrors():
    rng = np.random.default_rng(7)
    rows = _unit(rng, 3000)
    with MemoryStore.open(":memory:", embedder=HashingEmbedder()) as store:
        store.add_many([{"text": f"row {i}", "vector": v} for i, v in enumerate(rows)])
        vectors = store.kernel.memories.vectors
        scope = Scope(namespaces=("default",), kinds=("fact",))
        query = _at_similarity(rng, rows[42], 0.3)
        sims = rows @ query
        found = _best(vectors, query, 0.2, scope)  # no useful bit bound: an exact top-1 search
        assert found is not None and found[1] == pytest.approx(float(sims.max()), abs=1e-5)
        assert _best(vectors, query, 0.99, scope) is None


def test_a_reworded_fact_reinforces_the_stored_one_in_a_big_namespace():
    with MemoryStore.open(":memory:", embedder=HashingEmbedder()) as store:
        store.add_many([f"background note {i} about topic {i % 97} and item {i % 89}" for i in range(5000)])
        first = store.add("The production server runs on Fly.io in Frankfurt since March", namespace="default")
        again = store.add("The production server runs on Fly.io in Frankfurt since march!", namespace="default")
        assert again.event == "reinforced" and again == first
        assert store.get(first).score == store.config.memory.reinforce_weight
        other = store.add("The staging server runs on Hetzner in Helsinki", namespace="default")
        assert other.event == "created"


# -- the exact check: the same text (content hash), answered by the table's index ------------


def _direction(seed: int, dims: int = 384) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _statements_during(store, action):
    seen: list[str] = []
    store.db.conn.set_trace_callback(seen.append)
    try:
        result = action()
    finally:
        store.db.conn.set_trace_callback(None)
    return result, seen


@pytest.mark.sqlite_only  # the mirror, and SQLite's trace of statements
def test_the_same_text_reinforces_with_one_query_even_when_its_vector_differs():
    with MemoryStore.open(":memory:", embedder=HashingEmbedder()) as store:
        first = store.add("Deploys go out on Tuesdays", vector=_direction(1))
        # a caller-given vector far from the stored one: only the content hash can match
        again, statements = _statements_during(store, lambda: store.add("Deploys go out on Tuesdays", vector=_direction(2)))
        assert again == first and again.event == "reinforced"
        assert len([s for s in statements if "content_hash = " in s]) == 1  # the (namespace, content_hash) index
        assert not [s for s in statements if "FROM index_log" in s]  # the vectors were not needed
        other, statements = _statements_during(store, lambda: store.add("Deploys go out on Fridays", vector=_direction(3)))
        assert other.event == "created"
        assert len([s for s in statements if "content_hash = " in s]) == 1


@pytest.mark.sqlite_only  # the mirror, and SQLite's trace of statements
def test_the_exact_check_follows_deletes_updates_scope_and_copies(clock):
    text = "The backup runs at 02:00 UTC"
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        # two rows with one text (dedup off): the mirror defers to the table, which finds one
        a = store.add(text, vector=_direction(1), dedup=False)
        b = store.add(text, vector=_direction(2), dedup=False)
        again, statements = _statements_during(store, lambda: store.add(text, vector=_direction(3)))
        assert again in (a, b) and again.event == "reinforced"
        assert [s for s in statements if "content_hash = " in s]
        store.delete([a, b])
        assert store.add(text, vector=_direction(4)).event == "created"  # gone with its rows
        # an update changes the content: the old text no longer matches, the new one does
        c = store.add("The backup runs at 03:00 UTC", vector=_direction(5))
        store.update(c, "The backup runs at 04:00 UTC", vector=_direction(6))
        assert store.add("The backup runs at 03:00 UTC", vector=_direction(7)).event == "created"
        assert store.add("The backup runs at 04:00 UTC", vector=_direction(8)) == c
        # the one row with a text is in another namespace, or expired, or superseded: not a duplicate
        store.add("Alice likes tea", vector=_direction(9), namespace="user:alice")
        assert store.add("Alice likes tea", vector=_direction(10), namespace="user:bob").event == "created"
        store.add("Temporary code is 1234", vector=_direction(11), ttl=60)
        clock.advance(seconds=61)
        assert store.add("Temporary code is 1234", vector=_direction(12)).event == "created"
        old = store.add("The office is in Paris", vector=_direction(13))
        store.add("The office is in Lyon", vector=_direction(14), supersedes=old)
        assert store.add("The office is in Paris", vector=_direction(15)).event == "created"


def test_the_exact_check_sees_what_another_connection_added(tmp_path):
    path = tmp_path / "shared.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as mine, MemoryStore.open(path) as theirs:
        mine.add("warm the mirror", vector=_direction(1))
        theirs_id = theirs.add("The VPN endpoint moved to vpn2", vector=_direction(2))
        again = mine.add("The VPN endpoint moved to vpn2", vector=_direction(3))
        assert again == theirs_id and again.event == "reinforced"


@pytest.mark.sqlite_only
@pytest.mark.parametrize("file_backed", [False, True])
def test_above_gives_every_near_duplicate_best_first_as_an_exact_scan_does(tmp_path, file_backed, speedups):
    """``above`` is the check of ``add``: all rows above the threshold (up to ``limit``), not just the best."""
    rng = np.random.default_rng(31)
    rows = _unit(rng, 3000)
    for i in range(0, 3000, 100):  # rows 1..4 after each 100th lean on it: several near-duplicates of one query
        rows[i + 1 : i + 5] = [_at_similarity(rng, rows[i], c) for c in (0.97, 0.93, 0.91, 0.85)]
    with MemoryStore.open(tmp_path / "a.db" if file_backed else ":memory:", embedder=HashingEmbedder()) as store:
        store.add_many(_rows(rows))
        index = store.kernel.memories.vectors
        assert index.sync().file_backed == file_backed and index.sync().size > mirror_module.SMALL_MIRROR
        rowid_of = {m.text: m.rowid for m in store.list(namespace="a", limit=None)}
        scope, several = Scope(namespaces=("a",), kinds=("fact",)), 0
        for i in range(0, 3000, 100):
            query = _at_similarity(rng, rows[i], 0.995)
            sims = rows @ query
            sims[::5] = -2  # namespace "b" is out of scope
            order = [int(j) for j in np.argsort(-sims) if sims[j] > 0.9]
            for limit in (1, 2, 5):
                found = index.above(query, 0.9, scope, now=0.0, limit=limit)
                assert [r for r, _ in found] == [rowid_of[f"row {j}"] for j in order[:limit]]
                assert [s for _, s in found] == pytest.approx([float(sims[j]) for j in order[:limit]], abs=1e-5)
            several += len(order) > 1
        assert several > 10
        assert index.above(_at_similarity(rng, rows[7], 0.5), 0.9, scope, now=0.0, limit=5) == []


@pytest.mark.sqlite_only
def test_adding_a_fact_with_a_near_duplicate_searches_nothing(monkeypatch):
    """The near-duplicates an ``add`` looks at come from the check itself: no search of the whole
    namespace after it (at a million rows that search cost 38 ms, against ~0.5 for the check)."""
    with MemoryStore.open(":memory:", embedder=HashingEmbedder()) as store:
        store.add_many([f"background note {i} about topic {i % 97} and item {i % 89}" for i in range(3000)])
        first = store.add("The production server runs on Fly.io in Frankfurt since March", namespace="default")
        index = store.kernel.memories.vectors

        def refuse(*args, **kwargs):
            raise AssertionError("the near-duplicate check searched the namespace")

        monkeypatch.setattr(index, "search", refuse)
        again = store.add("The production server runs on Fly.io in Frankfurt since march!", namespace="default")
        assert again.event == "reinforced" and again == first

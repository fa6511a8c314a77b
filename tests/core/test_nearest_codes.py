"""A search's first stage: the codes nearest the query in Hamming distance, the candidates it scores again.

``Mirror.nearest`` is compiled (``shared_core/_speedups.c``) where a C compiler built the module, numpy
otherwise; both pick the same rows, ties to the lower slot, so a search answers the same either way.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shared_core import HashingEmbedder, MemoryStore
from shared_core.index import mirror as mirror_module
from shared_core.index.codes import sign_code, weight_planes
from shared_core.index.mirror import Mirror
from shared_core.index.protocols import RowState

pytestmark = pytest.mark.backend_free  # the mirror SQLite searches with; PostgreSQL searches its HNSW index


def _mirror(rng: np.random.Generator, size: int, dims: int) -> Mirror:
    mirror = Mirror(dims)
    if size:
        rows = rng.standard_normal((size, dims)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        mirror.bulk_load(np.arange(1, size + 1), [RowState("a", "fact", math.inf, True, "", 0.0)] * size, rows)
    return mirror


def _brute_force(mirror: Mirror, mask: np.ndarray | None, query: np.ndarray, pool: int,
                 weighted: bool) -> list[int]:
    """The ``pool`` rows in ``mask`` of least distance, then lowest slot, in slot order: the signs
    that differ from the query's, each counted once or by the query's component there (0-7, three
    root mean squares and up counting 7)."""
    scale = 3 * math.sqrt(float(np.mean(query.astype(np.float64) ** 2)))
    weights = np.minimum(np.rint(np.abs(query) * 7 / scale), 7).astype(int) if weighted else np.ones(len(query), int)
    distances = ((mirror.vectors[: mirror.size] > 0) != (query > 0)) @ weights
    rows = [i for i in range(mirror.size) if mask is None or mask[i]]
    return sorted(sorted(rows, key=lambda i: (int(distances[i]), i))[:pool])


@pytest.mark.parametrize("dims", [8, 64, 100, 384])  # one word; one; a padded second; six
@pytest.mark.parametrize("size", [0, 1, 997, 3000])
@pytest.mark.parametrize("pool", [0, 1, 37, 1024, 5000])  # 5000: more than any scope here holds
@pytest.mark.parametrize("weighted", [False, True])
def test_the_nearest_codes_are_the_same_compiled_or_not_and_ties_go_to_the_lower_slot(dims, size, pool, weighted,
                                                                                       speedups):
    rng = np.random.default_rng(dims * 7 + size)
    mirror = _mirror(rng, size, dims)
    query = rng.standard_normal(dims).astype(np.float32)
    code = sign_code(query, mirror.words)
    planes = weight_planes(query, mirror.words) if weighted else None
    # a sparse scope's codes are gathered (under a sixteenth of the rows), a dense one's scanned whole
    for mask in (None, rng.random(size) < 0.3, rng.random(size) < 0.03, np.zeros(size, dtype=bool),
                 np.ones(size, dtype=bool)):
        found = mirror.nearest(mask, code, pool, planes)
        # 8 dims: hundreds of rows tie
        assert found.tolist() == _brute_force(mirror, mask, query, pool, weighted)


@pytest.mark.parametrize("dims", [100, 384])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_compiled_kernel_ranks_as_numpy_does(dims, weighted, kernel, monkeypatch):
    rng = np.random.default_rng(dims)
    mirror = _mirror(rng, 4001, dims)  # four rows at a time, and one left over
    query = rng.standard_normal(dims).astype(np.float32)
    code, planes = sign_code(query, mirror.words), weight_planes(query, mirror.words) if weighted else None
    masks = (None, rng.random(4001) < 0.5)
    compiled = [mirror.nearest(mask, code, 700, planes).tolist() for mask in masks]
    monkeypatch.setattr(mirror_module, "_speedups", None)
    assert compiled == [mirror.nearest(mask, code, 700, planes).tolist() for mask in masks]


def test_a_sign_bit_weighs_as_much_as_the_querys_component_there_is_large():
    def weights(query: list[float]) -> list[int]:
        planes = weight_planes(np.array(query, dtype=np.float32), 1)
        bits = np.unpackbits(planes.view(np.uint8), axis=1)[:, : len(query)]  # in the query's order
        return (bits[0] + 2 * bits[1] + 4 * bits[2]).tolist()

    # 3 x the root mean square (here 2.03) weighs 7
    assert weights([0.0, 0.1, -0.2, 0.4, -0.6, 0.8, 1.0, -1.2]) == [0, 0, 1, 1, 2, 3, 3, 4]
    assert weights([-100.0] + [1.0] * 63) == [7] + [0] * 63  # no more than 7
    assert weights([0.0] * 8) == [0] * 8  # nothing to weigh: every row ties


def test_the_compiled_ranking_refuses_buffers_too_short_for_its_rows():
    speedups = pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    codes, code, slots = np.zeros((2, 8), np.uint64), np.zeros(2, np.uint64), np.empty(4, np.int64)
    with pytest.raises(ValueError, match="codes holds 128 bytes, fewer than the 144"):
        speedups.nearest(codes, 2, 9, 9, None, code, 4, slots)
    with pytest.raises(ValueError, match="need 1 <= words <= 64, 0 <= size <= stride"):
        speedups.nearest(codes, 2, 4, 8, None, code, 4, slots)
    with pytest.raises(ValueError, match="mask holds 4 bytes, fewer than the 8"):
        speedups.nearest(codes, 2, 8, 8, np.ones(4, bool), code, 4, slots)
    with pytest.raises(ValueError, match="slots holds 32 bytes, fewer than the 40"):
        speedups.nearest(codes, 2, 8, 8, None, code, 5, slots)
    with pytest.raises(ValueError, match="planes holds 8 bytes, fewer than the 16"):
        speedups.nearest(codes, 2, 8, 8, None, code, 4, slots, np.zeros(1, np.uint64))
    with pytest.raises(ValueError, match="planes must hold 1 to 3 planes of 2 words"):
        speedups.nearest(codes, 2, 8, 8, None, code, 4, slots, np.zeros(8, np.uint64))
    with pytest.raises(ValueError, match="planes must hold 1 to 3 planes of 2 words"):
        speedups.nearest(codes, 2, 8, 8, None, code, 4, slots, np.zeros(3, np.uint64))
    assert speedups.nearest(codes, 2, 8, 8, None, code, 4, slots) == 4
    assert slots.tolist() == [0, 1, 2, 3]  # every distance 0: the lowest rows


@pytest.mark.sqlite_only  # the mirror's search; PostgreSQL searches its HNSW index
def test_a_big_search_gives_the_same_results_compiled_or_not(tmp_path, monkeypatch):
    """Past ``search.exact_scan_rows`` a search ranks every code first; the candidates, and so the
    results, do not depend on whether that ranking was compiled."""
    pytest.importorskip("shared_core._speedups")
    ranked: list[int] = []
    nearest = Mirror.nearest
    monkeypatch.setattr(Mirror, "nearest", lambda self, *args: ranked.append(args[2]) or nearest(self, *args))
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((3000, 384)).astype(np.float32)
    with MemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(),
                          config={"search": {"exact_scan_rows": 500}}) as store:
        store.add_many([{"text": f"note {i}", "vector": v} for i, v in enumerate(vectors)], dedup=False)
        queries = vectors[:20] + 0.5 * rng.standard_normal((20, 384)).astype(np.float32)
        compiled = [store.search(vector=q, limit=10, fusion="vector").ids for q in queries]
        assert len(ranked) == 20
        monkeypatch.setattr(mirror_module, "_speedups", None)
        assert [store.search(vector=q, limit=10, fusion="vector").ids for q in queries] == compiled


@pytest.mark.parametrize("dims", [8, 100, 384])
def test_the_query_against_the_sign_bits_of_candidates_sums_its_components_where_their_bits_are_set(dims):
    """The second ranking of a big file-backed search, before int8 rows are read for the best 1,024."""
    rng = np.random.default_rng(dims)
    mirror = _mirror(rng, 300, dims)
    query = rng.standard_normal(dims).astype(np.float32)
    slots = np.array([299, 0, 17, 17, 150])
    vectors = mirror.vectors[slots]
    expected = [sum(float(query[j]) for j in range(dims) if vectors[i, j] >= 0) for i in range(len(slots))]
    assert mirror.signed(slots, query) == pytest.approx(expected, abs=1e-4)  # summed in float32
    assert mirror.signed(np.array([], dtype=np.int64), query).size == 0


@pytest.mark.sqlite_only  # the mirror's search; PostgreSQL searches its HNSW index
def test_a_big_search_finds_the_nearest_of_vectors_that_lean_one_way(tmp_path):
    """Vectors whose components differ in size and that share a direction (as a static embedder's
    do) share most sign bits: with its candidates ranked by plain Hamming distance a search found
    0.60 of the exact top 10 here; weighing each bit by the query's component there, 0.94."""
    rng = np.random.default_rng(0)
    dims, size = 64, 6000
    scales = np.exp(rng.standard_normal(dims))
    lean = rng.standard_normal(dims) * scales * 0.8
    vectors = rng.standard_normal((size, dims)) * scales + lean
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    noise = rng.standard_normal((50, dims)) * scales / np.linalg.norm(scales)
    queries = (vectors[rng.choice(size, 50)] + 0.3 * noise).astype(np.float32)
    with MemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(dims),
                          config={"search": {"exact_scan_rows": 500}}) as store:
        ids = store.add_many([{"text": f"note {i}", "vector": v} for i, v in enumerate(vectors)], dedup=False)
        found = 0
        for query in queries:
            exact = {ids[i] for i in np.argpartition(-(vectors @ query), 10)[:10]}
            found += len(exact & set(store.search(vector=query, limit=10, fusion="vector").ids))
    assert found / (10 * len(queries)) > 0.85

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
from shared_core.index.mirror import Mirror, sign_code
from shared_core.index.protocols import RowState

pytestmark = pytest.mark.backend_free  # the mirror SQLite searches with; PostgreSQL searches its HNSW index


def _mirror(rng: np.random.Generator, size: int, dims: int) -> Mirror:
    mirror = Mirror(dims)
    if size:
        rows = rng.standard_normal((size, dims)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        mirror.bulk_load(np.arange(1, size + 1), [RowState("a", "fact", math.inf, True, "")] * size, rows)
    return mirror


def _brute_force(mirror: Mirror, mask: np.ndarray | None, code: np.ndarray, pool: int) -> list[int]:
    """The ``pool`` rows in ``mask`` of least distance, then lowest slot, in slot order."""
    distances = [sum(bin(int(mirror.codes[w, i]) ^ int(code[w])).count("1") for w in range(mirror.words))
                 for i in range(mirror.size)]
    rows = [i for i in range(mirror.size) if mask is None or mask[i]]
    return sorted(sorted(rows, key=lambda i: (distances[i], i))[:pool])


@pytest.mark.parametrize("dims", [8, 64, 100, 384])  # one word; one; a padded second; six
@pytest.mark.parametrize("size", [0, 1, 997, 3000])
@pytest.mark.parametrize("pool", [0, 1, 37, 1024, 5000])  # 5000: more than any scope here holds
def test_the_nearest_codes_are_the_same_compiled_or_not_and_ties_go_to_the_lower_slot(dims, size, pool, speedups):
    rng = np.random.default_rng(dims * 7 + size)
    mirror = _mirror(rng, size, dims)
    code = sign_code(rng.standard_normal(dims).astype(np.float32), mirror.words)
    # a sparse scope's codes are gathered (under a sixteenth of the rows), a dense one's scanned whole
    for mask in (None, rng.random(size) < 0.3, rng.random(size) < 0.03, np.zeros(size, dtype=bool),
                 np.ones(size, dtype=bool)):
        found = mirror.nearest(mask, code, pool)
        assert found.tolist() == _brute_force(mirror, mask, code, pool)  # 8 dims: hundreds of rows tie


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

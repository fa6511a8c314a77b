"""Delete by filter, expiry refresh, MMR diversity, vector-only stores."""

from __future__ import annotations

import numpy as np
import pytest

from shared_core import MemoryStore
from shared_core.embed import PrecomputedVectors
from shared_core.ranking import maximal_marginal_relevance


def test_delete_where_removes_only_matching(store):
    for i in range(3):
        store.add(f"chunk {i} of the handbook", metadata={"doc": "handbook"}, kind="document")
    store.add("chunk of the other file", metadata={"doc": "other"}, kind="document")
    assert store.delete_where(kind="document", where={"doc": "handbook"}) == 3
    assert [m.metadata["doc"] for m in store.list(kind="document")] == ["other"]
    assert store.search("handbook", fusion="keyword").ids == []


def test_set_expiry_changes_only_the_expiry(store, clock):
    mid = store.add("remember the milk", ttl=60)
    before = store.get(mid)
    assert store.set_expiry(mid, ttl=3600) == 1
    after = store.get(mid)
    assert after.expires_at > before.expires_at
    assert (after.updated_at, after.last_hit_at, after.score) == (before.updated_at, before.last_hit_at, before.score)
    clock.advance(minutes=30)
    assert store.search("milk", fusion="keyword").ids == [mid]
    assert store.set_expiry(mid) == 1 and store.get(mid).expires_at is None


def test_mmr_prefers_diverse_results(store):
    store.add("apple pie recipe with cinnamon", id="a1", dedup=False)
    store.add("apple pie recipe with cinnamon and sugar", id="a2", dedup=False)
    store.add("apple orchard tour in spring", id="b1", dedup=False)
    plain = store.search("apple pie recipe", limit=2, fusion="vector")
    assert plain.ids == ["a1", "a2"]
    diverse = store.search("apple pie recipe", limit=2, fusion="vector", mmr_lambda=0.3)
    assert diverse.ids[0] == "a1" and diverse.ids[1] == "b1"


def test_mmr_function_matches_hand_computation():
    q = np.array([1.0, 0.0])
    c = np.array([[1.0, 0.0], [0.99, 0.141], [0.0, 1.0]])
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    assert maximal_marginal_relevance(q, c, 2, lambda_mult=1.0) == [0, 1]
    assert maximal_marginal_relevance(q, c, 2, lambda_mult=0.4) == [0, 2]  # 0.4*0.99-0.6*0.99 < 0
    with pytest.raises(ValueError):
        maximal_marginal_relevance(q, c, 2, lambda_mult=1.5)


def test_vector_only_store_falls_back_to_keywords(clock):
    with MemoryStore.open(":memory:", embedder=PrecomputedVectors(3), clock=clock) as s:
        s.add("north", vector=[0, 1, 0], id="n")
        s.add("east", vector=[1, 0, 0], id="e")
        assert s.search(vector=[0.9, 0.1, 0]).ids[0] == "e"
        assert s.search("north").ids == ["n"]  # keyword only: nothing embeds text here
        with pytest.raises(ValueError, match="no text embedder"):
            s.add("west")
        with pytest.raises(ValueError, match="cannot embed text"):
            s.search("north", fusion="vector")

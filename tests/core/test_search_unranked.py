"""search(rank=False): plain relevance order, without seed 002's feedback and recency."""

from __future__ import annotations

from datetime import timedelta

from shared_core import MemoryStore
from shared_core.embed import PrecomputedVectors


def test_unranked_search_ignores_feedback_and_age(clock):
    with MemoryStore.open(":memory:", embedder=PrecomputedVectors(2), clock=clock) as store:
        store.add("old but close", id="close", vector=[1.0, 0.05])
        clock.advance(timedelta(days=400))
        store.add("new and further", id="far", vector=[1.0, 0.6])
        store.reinforce("far")
        ranked = store.search(vector=[1.0, 0.0], fusion="vector", limit=2)
        assert ranked.ids == ["far", "close"]  # recency and +3 feedback outweigh the small gap
        plain = store.search(vector=[1.0, 0.0], fusion="vector", limit=2, rank=False)
        assert plain.ids == ["close", "far"]
        for hit in plain:
            assert hit.parts.feedback == 1.0 and hit.parts.recency == 1.0
            assert hit.score == hit.parts.relevance


def test_unranked_search_keeps_reporting_the_parts(store, clock):
    old = store.add("kubernetes cluster upgrade runbook for the staging cluster", id="old", dedup=False)
    clock.advance(days=300)
    new = store.add("kubernetes cluster upgrade notes", id="new", dedup=False)
    store.demote(old)
    query = "kubernetes cluster upgrade runbook for the staging cluster"
    ranked = store.search(query, fusion="vector")
    plain = store.search(query, fusion="vector", rank=False)
    assert ranked.ids == [new, old]  # 300 days and a demotion outweigh the exact match
    assert plain.ids == [old, new]
    best = plain[0]
    assert best.parts.feedback == best.parts.recency == 1.0
    assert best.score == best.parts.relevance == (1.0 + best.parts.similarity) / 2
    assert best.parts.days_since_hit == 300  # still reported, only not applied

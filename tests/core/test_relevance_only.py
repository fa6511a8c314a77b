"""``search(..., relevance_only=True)``: plain vector-store order, untouched by feedback and age."""

from __future__ import annotations


def test_relevance_only_ignores_age_and_feedback(store, clock):
    old = store.add("kubernetes cluster upgrade runbook for the staging cluster", id="old", dedup=False)
    clock.advance(days=300)
    new = store.add("kubernetes cluster upgrade notes", id="new", dedup=False)
    store.demote(old)
    query = "kubernetes cluster upgrade runbook for the staging cluster"
    ranked = store.search(query, fusion="vector")
    plain = store.search(query, fusion="vector", relevance_only=True)
    assert ranked.ids == [new, old]  # 300 days and a demotion outweigh the exact match
    assert plain.ids == [old, new]
    best = plain[0]
    assert best.parts.feedback == best.parts.recency == 1.0
    assert best.score == best.parts.relevance == (1.0 + best.parts.similarity) / 2
    assert best.parts.days_since_hit == 300  # still reported, only not applied

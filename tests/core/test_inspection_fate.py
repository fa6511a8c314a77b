"""store.inspector says for every kind of memory how it can be forgotten, with the curve ahead of it, or
that it never decays."""

from __future__ import annotations

import pytest

from shared_core.registry import DOMAINS

ALICE = "user:alice"
KINDS = sorted({kind for domain in DOMAINS for kind in domain.kinds})
# what the lifecycle does to each kind (memory.prune_kinds, the learnings' decay, the forgetting engine)
DECAYS = {"fact", "note", "episode", "message", "summary", "insight", "learning"}


def test_the_registry_kinds_are_all_judged():
    assert set(KINDS) >= DECAYS | {"document", "procedure", "skill", "task", "workspace"}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_says_whether_and_how_it_is_forgotten(store, kind):
    memory = store.add(f"Alice's {kind} about tea", kind=kind, namespace=ALICE)
    detail = store.inspector.memory(memory, ALICE)
    rank = detail.curves[0]
    assert rank.measure == "rank" and len(rank.points) > 1
    if kind in DECAYS:
        assert detail.decays and detail.fate.startswith(f"A {kind}: ")
        if kind in store.config.memory.prune_kinds:
            assert "size pruning archives" in detail.fate and rank.protected is None
            assert "pruning archives the lowest first" in rank.explanation
    else:
        assert not detail.decays and detail.fate.startswith(f"A {kind} never decays")
        assert rank.protected and "never size-pruned" in rank.protected
        assert "pruning" not in rank.explanation
    pinned = store.inspector.memory(store.add(f"Alice's pinned {kind}", kind=kind, namespace=ALICE, pinned=True),
                                    ALICE)
    assert not pinned.decays
    assert pinned.fate.startswith("Pinned: no lifecycle step" if kind in DECAYS else f"A {kind} never decays")


def test_a_ttl_is_a_way_out_even_for_a_kind_that_never_decays(store, clock):
    memory = store.add("Alice's onboarding checklist", kind="document", namespace=ALICE, ttl=10 * 86400)
    detail = store.inspector.memory(memory, ALICE)
    assert detail.decays and "2026-01-11 00:00 UTC (its TTL)" in detail.fate
    assert detail.curves[0].ends_at_day == pytest.approx(10)


def test_an_insight_shows_its_weight_decaying_to_the_floor(store, clock):
    insight = store.insights.upsert("Alice asks about tea every morning", namespace=ALICE)
    (memory,) = store.list(namespace=ALICE, kind="insight")
    detail = store.inspector.memory(memory.id, ALICE)
    weight = next(c for c in detail.curves if c.measure == "weight")
    cfg = store.config.insights
    assert weight.threshold == cfg.weight_floor
    values = [p.value for p in weight.points]
    assert values[0] == pytest.approx(insight.custom_weight)
    assert values == sorted(values, reverse=True) and values[-1] == pytest.approx(cfg.weight_floor)
    assert "insights rank by value x weight" in weight.explanation
    clock.advance(days=20)  # twenty days without access: the curve starts lower
    later = next(c for c in store.inspector.memory(memory.id, ALICE).curves if c.measure == "weight")
    assert later.points[0].value < values[0]

"""The recency floor: age breaks near ties in search instead of overruling a clearly better match."""

from __future__ import annotations

import pytest

from shared_core import ManualClock, MemoryStore
from shared_core.config import Config, ConfigError
from shared_core.ranking import recency_weight


def test_the_floor_bounds_seed_002s_weight():
    assert recency_weight(100, 0.01, 0.0) == 0.5  # seed 002's own
    assert recency_weight(100, 0.01, 0.8) == pytest.approx(0.9)
    assert recency_weight(0, 0.01, 0.8) == 1.0
    assert recency_weight(1e9, 0.01, 0.8) == pytest.approx(0.8)
    assert recency_weight(100, 0.01, 1.0) == 1.0
    with pytest.raises(ValueError, match="between 0 and 1"):
        recency_weight(10, 0.01, 1.5)


def test_the_setting_is_checked():
    assert Config.load().ranking.recency_floor == 0.8
    with pytest.raises(ConfigError, match="recency_floor"):
        Config.load(overrides={"ranking": {"recency_floor": -0.1}})


def _ranked(floor: float | None) -> list[str]:
    clock = ManualClock("2026-01-01T00:00:00+00:00")
    config = {"search": {"track_access": False}}
    if floor is not None:
        config["ranking"] = {"recency_floor": floor}
    with MemoryStore.open(":memory:", clock=clock, embedder="hashing", config=config) as store:
        store.add("Caroline researched adoption agencies for months", id="old-answer")
        clock.advance(days=200)
        store.add("Caroline went to the agencies fair", id="fresh-partial")
        hits = store.search("what did Caroline research about adoption agencies", fusion="keyword", limit=2)
        return hits.ids


def test_an_old_full_match_outranks_a_fresh_partial_one():
    # seed 002's plain weight (floor 0) gives the 200-day-old answer a third of its relevance
    assert _ranked(0.0) == ["fresh-partial", "old-answer"]
    assert _ranked(None) == ["old-answer", "fresh-partial"]


def test_age_still_breaks_a_tie():
    clock = ManualClock("2026-01-01T00:00:00+00:00")
    with MemoryStore.open(":memory:", clock=clock, embedder="hashing",
                          config={"search": {"track_access": False}}) as store:
        store.add("The user lives in Paris", id="before")
        clock.advance(days=30)
        store.add("The user lives in Berlin", id="after")
        hits = store.search("where does the user live", fusion="keyword", limit=2)
        assert hits.ids == ["after", "before"]
        assert hits[1].parts.recency == pytest.approx(0.8 + 0.2 / 1.3)

"""Seed 001's BRE scoring for facts: dot product with a magnitude penalty (our documented formula)."""

from __future__ import annotations

import math
import re

import pytest

from shared_core import MemoryStore
from shared_core.ranking import bre_magnitude, bre_score


def test_the_formula():
    # confidence x cos / sqrt(words) ** penalty
    assert bre_magnitude(16) == 4.0 and bre_magnitude(0) == 1.0
    assert bre_score(0.8, bre_magnitude(16), 1.0, 0.2) == pytest.approx(0.8 / 4 ** 0.2)
    assert bre_score(0.8, bre_magnitude(16), 0.5, 0.2) == pytest.approx(0.4 / 4 ** 0.2)
    assert bre_score(0.8, bre_magnitude(16), 1.0, 0.0) == 0.8  # no penalty: confidence-weighted cosine
    assert bre_score(-0.3, 4.0) == 0.0
    # equal similarity: the shorter (smaller magnitude) fact wins
    assert bre_score(0.7, bre_magnitude(4)) > bre_score(0.7, bre_magnitude(40))
    # it is the dot product with the raw vector, penalised by its magnitude to the power 1 + penalty
    cos, magnitude = 0.6, bre_magnitude(9)
    raw_dot = cos * magnitude
    assert bre_score(cos, magnitude, 1.0, 0.2) == pytest.approx(raw_dot / magnitude ** 1.2)


def test_store_scores_facts_with_bre(store):
    precise = store.add("Dana's timezone is Europe/Lisbon", confidence=0.9)
    rambling = store.add("Dana's timezone is Europe/Lisbon, she said, while we talked at length about laptops, "
                         "spring in Portugal and short meetings", confidence=0.9)
    unsure = store.add("Dana's timezone is Europe/Lisbon", confidence=0.2, dedup=False)
    hits = store.facts.search("Dana's timezone Europe/Lisbon", scoring="bre")
    # same similarity, lower confidence: behind; same confidence, more words: behind
    assert hits.ids[0] == precise and hits.ids.index(unsure) > 0 and hits.ids.index(rambling) > 0
    assert hits[0].parts.similarity == pytest.approx(hits[hits.ids.index(unsure)].parts.similarity)
    for hit in hits:
        words = len(re.findall(r"[\w'\u2019]+", hit.text))
        expected = bre_score(hit.parts.similarity, math.sqrt(words), hit.memory.confidence, 0.2)
        assert hit.score == pytest.approx(expected) and hit.parts.fusion == "bre"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_missing_confidence_counts_as_one_and_noise_is_cut(store):
    fact = store.add("The VPN gateway address is 10.0.0.1")
    (hit,) = store.facts.search("VPN gateway address", scoring="bre", limit=1)
    assert hit.id == fact and hit.memory.confidence is None
    assert store.facts.search("banana bread recipe", scoring="bre") == []
    assert store.facts.search("VPN gateway address", scoring="bre", min_similarity=0.999) == []


def test_penalty_is_configurable(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"ranking": {"bre_magnitude_penalty": 0.0}}) as store:
        store.add("Erin likes jazz")
        (hit,) = store.facts.search("Erin likes jazz", scoring="bre")
        assert hit.score == pytest.approx(hit.parts.similarity)


def test_hybrid_scoring_and_errors(store):
    fact = store.add("Frank's car is a blue Volvo", category="profile")
    assert store.facts.search("Volvo", scoring="hybrid").ids == [fact]
    assert store.facts.search("Volvo", scoring="hybrid", category="other").ids == []
    with pytest.raises(ValueError, match="scoring must be one of bre, hybrid"):
        store.facts.search("Volvo", scoring="cosine")


def test_bre_leaves_superseded_facts_out_unless_asked(store):
    old = store.add("Gina lives in Oslo")
    new = store.add("Gina lives in Bergen", supersedes=old)
    assert old not in store.facts.search("Gina lives in", scoring="bre").ids
    assert {old, new} <= set(store.facts.search("Gina lives in", scoring="bre", include_superseded=True).ids)

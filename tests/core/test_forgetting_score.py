"""Seed 003's value score, exactly as its formula writes it (pure functions in shared_core.ranking)."""

from __future__ import annotations

import math

import pytest

from shared_core.ranking import (
    DAY_MS,
    IMPORTANCE_KEYWORDS,
    access_score,
    inferred_importance,
    keyword_hits,
    media_score,
    memory_value_score,
    recency_score,
)


def test_access_score_follows_the_formula_not_the_prose():
    # log1p(n) / ln 10: the seed's prose says 1 -> ~0.46 and 2 -> ~0.56; its formula gives these
    assert access_score(0) == 0.0
    assert access_score(1) == pytest.approx(0.30103, abs=1e-5)
    assert access_score(2) == pytest.approx(0.47712, abs=1e-5)
    assert access_score(5) == pytest.approx(0.78, abs=0.005)  # the prose's 0.78 does match
    assert access_score(9) == pytest.approx(1.0)
    assert access_score(10) == 1.0 and access_score(100) == 1.0  # clamped ("10 -> ~1.0")
    assert access_score(-3) == 0.0


def test_recency_over_the_180_day_horizon():
    assert recency_score(0) == 1.0
    assert recency_score(90 * DAY_MS) == pytest.approx(0.5)
    assert recency_score(180 * DAY_MS) == 0.0
    assert recency_score(400 * DAY_MS) == 0.0
    assert recency_score(-5 * DAY_MS) == 1.0  # a clock that went backwards: a future record counts as new
    assert recency_score(45 * DAY_MS, horizon_days=90) == pytest.approx(0.5)


def test_the_twelve_keywords_and_how_they_match():
    assert len(IMPORTANCE_KEYWORDS) == 12
    assert keyword_hits("Deadline moved; URGENT follow-up on the bug") == 4
    assert keyword_hits("action items and milestones from the meeting") == 3  # plural suffixes count
    assert keyword_hits("debugging the prebug") == 0  # a keyword must start a word
    assert keyword_hits("bug bug bug") == 1  # each keyword counts once
    assert keyword_hits("todo: follow_up on the incident risk decision blocker") == 6
    assert inferred_importance("meeting about the risk") == 0.5
    assert inferred_importance("deadline urgent risk decision blocker meeting") == 1.0  # 6/4 capped at 1
    assert inferred_importance("nothing here") == 0.0


def test_media_score():
    assert media_score(True) == 0.7 and media_score(False) == 0.25


def _score(**kw):
    base = dict(age_ms=10 * DAY_MS, access_count=1, importance=None, text="meeting about the risk",
                has_media=False, pinned=False)
    base.update(kw)
    return memory_value_score(**base)


def test_worked_example_by_hand():
    # 0.35 x (1 - 10/180) + 0.30 x log1p(1)/ln10 + 0.25 x max(0, 2/4) + 0.10 x 0.25 + 0
    expected = 0.35 * (1 - 10 / 180) + 0.30 * (math.log1p(1) / math.log(10)) + 0.25 * 0.5 + 0.10 * 0.25
    score = _score()
    assert expected == pytest.approx(0.570865, abs=1e-6)
    assert score.total == pytest.approx(expected)
    assert (score.recency, score.importance, score.media, score.pinned_boost) == (
        pytest.approx(1 - 10 / 180), 0.5, 0.25, 0.0)
    assert score.total < 0.65  # below the short -> mid threshold
    assert _score(pinned=True).total == pytest.approx(expected + 0.3)  # the pinned boost lifts it over
    assert _score(has_media=True).total == pytest.approx(expected + 0.10 * (0.7 - 0.25))


def test_importance_is_the_larger_of_provided_and_inferred():
    assert _score(importance=0.3, text="one bug").importance == 0.3  # inferred 0.25
    assert _score(importance=0.1, text="bug risk").importance == 0.5
    assert _score(importance=None, text="plain").importance == 0.0


def test_score_is_clamped_to_one():
    score = _score(age_ms=0, access_count=10, importance=1.0, has_media=True, pinned=True)
    assert 0.35 + 0.30 + 0.25 + 0.07 + 0.3 > 1.0
    assert score.total == 1.0


def test_weights_are_parameters():
    score = _score(recency_weight=0.0, access_weight=0.0, importance_weight=0.0, media_weight=1.0, media_without=0.4)
    assert score.total == pytest.approx(0.4)
    assert score.to_dict()["total"] == score.total

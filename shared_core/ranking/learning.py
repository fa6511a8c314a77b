"""Learnings (seed 000): confidence decay and reinforcement, regressions and diminishing returns of a
task's iterations, the recall score of a learning, and the confidence of usage patterns."""

from __future__ import annotations

import math

__all__ = [
    "weeks_since_reinforced", "decayed_confidence", "is_pruned", "reinforced_confidence", "running_average",
    "is_regression", "is_diminishing", "learning_recall_score", "recurrence_confidence", "combination_confidence",
]


# -- seed 000 (OpenKoi): learnings -----------------------------------------------------------


def weeks_since_reinforced(days: float) -> float:
    """Seed 000's clock: ``(now - last_used).num_days() as f32 / 7.0``: whole days, in weeks.

    Negative ages (a clock that went back) count as 0: decay never raises a confidence.
    """
    return max(0, math.floor(days)) / 7.0


def decayed_confidence(confidence: float, weeks: float, rate_per_week: float = 0.05) -> float:
    """``confidence x exp(-rate x weeks since reinforced)`` (seed 000), from the confidence at the
    last reinforcement, never compounded: the result depends on the age, not on how often it ran.

    >>> round(decayed_confidence(0.8, 8), 2)
    0.54
    """
    return confidence * math.exp(-rate_per_week * max(0.0, weeks))


def is_pruned(confidence: float, threshold: float = 0.1) -> bool:
    """Seed 000 keeps learnings with ``confidence >= 0.1``; anything below is pruned."""
    return confidence < threshold


def reinforced_confidence(current: float, bump: float = 0.1, cap: float = 1.0) -> float:
    """A reinforced learning: its current (decayed) confidence plus the bump, capped at 1.0."""
    return min(cap, current + bump)


def running_average(avg_score: float, sample_count: int, score: float) -> float:
    """Seed 000's skill effectiveness upsert: ``(avg_score x sample_count + score) / (sample_count + 1)``."""
    return (avg_score * sample_count + score) / (sample_count + 1)


def _exceeds(value: float, threshold: float) -> bool:
    # rounding first keeps float noise from deciding: 0.8 - 0.7 is 0.10000000000000009
    return round(value, 9) > threshold


def is_regression(previous: float, current: float, drop: float = 0.1) -> bool:
    """Seed 000: a score that drops by more than 0.1 between iterations is a regression."""
    return _exceeds(previous - current, drop)


def is_diminishing(scores: list[float], min_iterations: int = 3, gain: float = 0.02) -> bool:
    """Seed 000's diminishing returns: 3+ iterations, and the last improved on the one before by
    less than 0.02 (so ``len(scores) - 1`` iterations were enough, as in the seed's example)."""
    if len(scores) < max(2, min_iterations):
        return False
    return round(scores[-1] - scores[-2], 9) < gain


def learning_recall_score(relevance: float, confidence: float, same_category: bool,
                          category_boost: float = 0.5) -> float:
    """How a learning ranks for a task: ``(relevance + boost x same category) x confidence``.

    ``relevance`` is the hybrid search score against the task description (0 when only the
    category matched); the seed ranks by embedding similarity, and a learning it is less sure
    of should come after one it is sure of.
    """
    return (max(0.0, relevance) + (category_boost if same_category else 0.0)) * confidence


# -- seed 000: usage patterns ------------------------------------------------------------------


def recurrence_confidence(occurrences: int, periods: int) -> float:
    """Share of the observed periods (days or weeks since the first occurrence) that had one."""
    if periods <= 0:
        return 0.0
    return min(1.0, occurrences / periods)


def combination_confidence(together: int, with_any: int) -> float:
    """Share of the events using any skill of a combination that used the whole combination."""
    if with_any <= 0:
        return 0.0
    return min(1.0, together / with_any)

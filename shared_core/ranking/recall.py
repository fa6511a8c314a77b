"""How facts, episodes and procedures rank when recalled: BRE (seed 001), episode and procedure
scores, and a fact's salience and standing (seed 004)."""

from __future__ import annotations

import math

from .retrieval import feedback_weight, recency_weight

__all__ = ["bre_magnitude", "bre_score", "episode_score", "procedure_score", "salience", "standing", "is_salient"]


# -- seed 001 (OpenMotoko): BRE, episodes, procedures ------------------------------------------


def bre_magnitude(word_count: int) -> float:
    """A fact's raw magnitude: the norm of its bag-of-words vector, ``sqrt(words)`` (at least 1).

    The hashing embedder's vector before L2 normalisation is a sum of one +/-1 direction per
    feature, so its length grows like the square root of the number of words.
    """
    return math.sqrt(max(1, word_count))


def bre_score(similarity: float, magnitude: float, confidence: float = 1.0, penalty: float = 0.2) -> float:
    """Seed 001's BRE: "dot product with a magnitude penalty", defined here as

    ``confidence x (q . f_raw) / |f_raw| ** (1 + penalty)  =  confidence x cos(q, f) / magnitude ** penalty``

    The dot product of the query with the fact's raw vector grows with the fact's magnitude, so
    long catch-all facts would win; dividing by the magnitude once gives the cosine, and the
    extra ``penalty`` power makes a long fact need a higher similarity to beat a short precise
    one. ``penalty = 0`` is confidence-weighted cosine. Negative similarities count as 0.
    """
    return confidence * max(0.0, similarity) / (max(1.0, magnitude) ** penalty)


def episode_score(relevance: float, importance: float | None, weight: float = 0.5) -> float:
    """An episode's rank: ``relevance x (1 - w + w x importance)``; importance 1 keeps the relevance,
    0 halves it (w = 0.5); no importance counts as 0.5."""
    value = 0.5 if importance is None else min(1.0, max(0.0, importance))
    return relevance * (1.0 - weight + weight * value)


def procedure_score(relevance: float, usage_count: int, weight: float = 0.1) -> float:
    """A procedure's rank: ``relevance x (1 + w x ln(1 + uses))``; the often-used surface first."""
    return relevance * (1.0 + weight * math.log1p(max(0, usage_count)))


# -- seed 004 (the agent fleet): salience ----------------------------------------------------------
#
# The seed names the signals ("access count, decay score, last accessed timestamp"; "reinforcement
# scoring with access-count boost + recency decay") but no formula. Ours:
#
#     salience = ln(1 + access_count) x exp(0.2 x score) x 0.5 ** (days since last use / half-life)
#
# the access-count boost (0 for a fact never retrieved, growing ever more slowly), seed 002's
# reinforcement weight (1.0 at score 0, so without feedback it is the boost x the decay), and an
# exponential recency decay that halves every ``half_life_days`` (7) since the fact was last
# used (accessed or reinforced; created, if never). Facts at or above ``threshold`` (1.5)
# surface in the initial context without a query: 4 accesses today (1.61) do, 3 (1.39) do not;
# 20 accesses a week ago (1.52) still do, 10 (1.20) no longer.


def salience(access_count: int, days_since_use: float, score: float = 0.0, *, half_life_days: float = 7.0,
             score_weight: float = 0.2) -> float:
    """Seed 004's salience: access-count boost x reinforcement weight x recency decay (see above)."""
    boost = math.log1p(max(0, access_count))
    decay = 0.5 ** (max(0.0, days_since_use) / half_life_days)
    return boost * feedback_weight(score, score_weight) * decay


def standing(access_count: int, days_since_use: float, score: float = 0.0, importance: float | None = None, *,
             score_weight: float = 0.2, recency_rate: float = 0.01) -> float:
    """How strongly a fact belongs in the prompt when no query asks for it (the addendum's known facts).

    ``(0.5 + importance) x (1 + ln(1 + access_count)) x exp(0.2 x score) x 1 / (1 + 0.01 x days)``:
    salience's signals (seed 004) and seed 002's slow recency, with importance (none counts as 0.5)
    and a floor of 1 for the access boost, so a fact never retrieved still ranks (salience gives it 0).
    Pinned facts come before any value (the caller's rule).
    """
    weight = 0.5 + (0.5 if importance is None else min(1.0, max(0.0, importance)))
    boost = 1.0 + math.log1p(max(0, access_count))
    return weight * boost * feedback_weight(score, score_weight) * recency_weight(days_since_use, recency_rate)


def is_salient(value: float, threshold: float = 1.5) -> bool:
    """A fact this salient surfaces in the initial context without a query."""
    return round(value, 9) >= threshold

"""Every ranking formula, as a pure function of its inputs and its constants.

Constants default to the seeds' numbers and are configurable (see config.py). Nothing
here reads the database or the clock: callers pass ages and counts in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

__all__ = [
    "feedback_weight",
    "recency_weight",
    "koshi_rank",
    "normalise_bm25",
    "similarity_excess",
    "FusedScore",
    "fuse",
    "FUSIONS",
    "maximal_marginal_relevance",
    "weeks_since_reinforced",
    "decayed_confidence",
    "is_pruned",
    "reinforced_confidence",
    "running_average",
    "is_regression",
    "is_diminishing",
    "learning_recall_score",
    "bre_magnitude",
    "bre_score",
    "episode_score",
    "procedure_score",
    "recurrence_confidence",
    "combination_confidence",
]

# -- seed 002 (Koshi): finalRank = bm25 x exp(score x 0.2) x 1/(1 + daysSince x 0.01) ---------


def feedback_weight(score: float, score_weight: float = 0.2) -> float:
    """``exp(score x 0.2)``: +3 gives 1.82x, 0 gives 1.0x, -1 gives 0.82x, -5 gives 0.37x (seed 002)."""
    return math.exp(score * score_weight)


def recency_weight(days_since: float, recency_rate: float = 0.01) -> float:
    """``1 / (1 + days x 0.01)`` with days since the last hit, or since creation (seed 002)."""
    return 1.0 / (1.0 + max(0.0, days_since) * recency_rate)


def koshi_rank(
    relevance: float,
    score: float,
    days_since: float,
    *,
    score_weight: float = 0.2,
    recency_rate: float = 0.01,
) -> float:
    """Seed 002's final rank: relevance x feedback weight x recency weight."""
    return relevance * feedback_weight(score, score_weight) * recency_weight(days_since, recency_rate)


# -- fusion of the keyword and vector sides ---------------------------------------------------


def normalise_bm25(scores: Mapping[int, float]) -> dict[int, float]:
    """BM25 relative to the best keyword match of this query: the best is 1.0."""
    if not scores:
        return {}
    best = max(scores.values())
    if best <= 0:
        return {key: 0.0 for key in scores}
    return {key: max(0.0, value) / best for key, value in scores.items()}


def similarity_excess(similarity: float, floor: float) -> float:
    """How far a cosine similarity rises above the embedder's noise floor, scaled to [0, 1]."""
    if similarity <= floor:
        return 0.0
    return min(1.0, (similarity - floor) / (1.0 - floor))


@dataclass(frozen=True)
class FusedScore:
    keyword: float  # normalised BM25, 0..1
    vector: float  # similarity above the floor, 0..1
    relevance: float  # the fused value that the rank multiplies


def fuse(
    method: str,
    bm25: Mapping[int, float],
    similarity: Mapping[int, float],
    *,
    vector_weight: float,
    similarity_floor: float,
    rrf_k: int = 60,
) -> dict[int, FusedScore]:
    """Combine the two sides' scores for every candidate that either side found.

    * ``keyword_first`` (default): BM25 is the backbone. Relevance = keyword + w x vector,
      where vector is the similarity's excess over the embedder's noise floor; a weak
      embedder (high floor, low weight) can add evidence but never drown good keyword hits.
    * ``weighted``: a convex mix, (1 - w) x keyword + w x vector.
    * ``rrf``: reciprocal rank fusion, sum of 1 / (k + rank) over the sides that found it.
    * ``keyword`` / ``vector``: one side only.
    """
    keyword = normalise_bm25(bm25)
    vector = {key: similarity_excess(value, similarity_floor) for key, value in similarity.items()}
    keys = set(keyword) | set(vector) if method != "keyword" else set(keyword)
    if method == "vector":
        keys = set(similarity)
    out: dict[int, FusedScore] = {}
    if method == "rrf":
        kw_rank = {key: i for i, key in enumerate(sorted(bm25, key=lambda k: -bm25[k]))}
        vec_rank = {key: i for i, key in enumerate(sorted(similarity, key=lambda k: -similarity[k]))}
        for key in keys:
            value = 0.0
            if key in kw_rank:
                value += 1.0 / (rrf_k + kw_rank[key] + 1)
            if key in vec_rank and vector.get(key, 0.0) > 0.0:
                value += 1.0 / (rrf_k + vec_rank[key] + 1)
            out[key] = FusedScore(keyword.get(key, 0.0), vector.get(key, 0.0), value)
        return out
    for key in keys:
        kw = keyword.get(key, 0.0)
        vec = vector.get(key, 0.0)
        if method == "keyword_first":
            relevance = kw + vector_weight * vec
        elif method == "weighted":
            relevance = (1.0 - vector_weight) * kw + vector_weight * vec
        elif method == "keyword":
            relevance = kw
        elif method == "vector":  # plain cosine order, mapped from [-1, 1] to [0, 1]
            relevance = (1.0 + similarity.get(key, -1.0)) / 2.0
        else:
            raise ValueError(f"unknown fusion {method!r}; use one of {', '.join(FUSIONS)}")
        out[key] = FusedScore(kw, vec, relevance)
    return out


FUSIONS = ("keyword_first", "weighted", "rrf", "keyword", "vector")


# -- diversity --------------------------------------------------------------------------------


def maximal_marginal_relevance(
    query: "np.ndarray", candidates: "np.ndarray", k: int, lambda_mult: float = 0.5
) -> list[int]:
    """Indices of ``candidates`` picked by maximal marginal relevance (Carbonell & Goldstein 1998).

    Each step takes the candidate maximising ``lambda x sim(query, d) - (1 - lambda) x max sim(d, picked)``,
    with cosine similarity on unit vectors. ``lambda_mult`` 1 ranks by relevance only, 0 by diversity only.
    """
    import numpy as np

    if not 0.0 <= lambda_mult <= 1.0:
        raise ValueError(f"lambda_mult must be between 0 and 1, got {lambda_mult}")
    n = len(candidates)
    if n == 0 or k <= 0:
        return []
    relevance = candidates @ query
    picked: list[int] = []
    redundancy = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        value = lambda_mult * relevance - (1.0 - lambda_mult) * penalty
        value[~available] = -np.inf
        best = int(np.argmax(value))
        picked.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, candidates @ candidates[best])
    return picked


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


def is_diminishing(scores: "list[float]", min_iterations: int = 3, gain: float = 0.02) -> bool:
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

"""Search ranking: seed 002's feedback and recency weights, the fusion of the keyword and vector
sides, diversity (MMR), the size-pruning weight and the Hebbian links' weights."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SCORE_BOUND", "feedback_weight", "recency_weight", "koshi_rank", "normalise_bm25", "similarity_excess",
    "FusedScore", "fuse", "FUSIONS", "with_context", "maximal_marginal_relevance", "prune_weight", "prune_count",
    "link_strength_after", "link_weight",
]


# -- seed 002 (Koshi): finalRank = bm25 x exp(score x 0.2) x 1/(1 + daysSince x 0.01) ---------


SCORE_BOUND = 1000.0
"""Feedback scores stay within +-1,000 (reinforce and demote stop there): ``exp(0.2 x 1000)`` is
about 7e86, far from overflowing, and no ranking needs more (+3 per reinforcement is 333 of them)."""
_MAX_EXPONENT = 700.0  # exp(709.8) overflows a float: a score weight set past 0.7 meets this first


def feedback_weight(score: float, score_weight: float = 0.2) -> float:
    """``exp(score x 0.2)``: +3 gives 1.82x, 0 gives 1.0x, -1 gives 0.82x, -5 gives 0.37x (seed 002).

    The exponent is held within +-700, so no stored score (even one from before scores were
    bounded) makes it overflow; within :data:`SCORE_BOUND` at the default weight it never applies.
    """
    return math.exp(min(_MAX_EXPONENT, max(-_MAX_EXPONENT, score * score_weight)))


def recency_weight(days_since: float, recency_rate: float = 0.01, floor: float = 0.0) -> float:
    """``1 / (1 + days x 0.01)`` with days since the last hit, or since creation (seed 002).

    ``floor`` (0..1) is the least the weight falls to: ``floor + (1 - floor) / (1 + days x rate)``.
    Search uses one (``ranking.recency_floor``) so that age breaks near ties between relevances
    instead of overruling them; 0 is seed 002's plain weight.
    """
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"the recency floor must be between 0 and 1, got {floor}")
    return floor + (1.0 - floor) / (1.0 + max(0.0, days_since) * recency_rate)


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


def normalise_bm25(scores: Mapping[int, float], full_match: float = 0.0) -> dict[int, float]:
    """BM25 on a 0..1 scale: relative to the larger of a full match's BM25 and the best hit's.

    ``full_match`` is what a row containing every query term once would score (the sum of the
    terms' idf). A query whose best hit matched only common words then gets small values
    instead of 1.0; with ``full_match`` 0 this is plain normalisation by the best hit.
    """
    if not scores:
        return {}
    scale = max(max(scores.values()), full_match)
    if scale <= 0:
        return {key: 0.0 for key in scores}
    return {key: max(0.0, value) / scale for key, value in scores.items()}


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
    full_match: float = 0.0,
) -> dict[int, FusedScore]:
    """Combine the two sides' scores for every candidate that either side found.

    * ``keyword_first`` (default): BM25 is the backbone. Relevance = keyword + w x vector,
      where vector is the similarity's excess over the embedder's noise floor; a weak
      embedder (high floor, low weight) can add evidence but never drown good keyword hits.
    * ``weighted``: a convex mix, (1 - w) x keyword + w x vector.
    * ``rrf``: reciprocal rank fusion, sum of 1 / (k + rank) over the sides that found it.
    * ``keyword`` / ``vector``: one side only.
    """
    keyword = normalise_bm25(bm25, full_match)
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


def with_context(
    relevance: Mapping[int, float],
    neighbours: Mapping[int, tuple[int | None, int | None]],
    weight: float,
) -> dict[int, float]:
    """Each relevance plus ``weight`` x the larger relevance of its previous and next neighbour.

    Conversation context: a reply ("Yes, last week at the lake") is understood with the turn
    around it ("Did you paint the sunrise?"). Neighbours that are not candidates lend nothing,
    and the lent values are the neighbours' own relevances, so lending does not compound.
    """
    if weight < 0:
        raise ValueError(f"the context weight must not be negative, got {weight}")
    out = dict(relevance)
    if weight == 0:
        return out
    for key, (before, after) in neighbours.items():
        if key in relevance:
            lent = max(relevance.get(before, 0.0) if before is not None else 0.0,
                       relevance.get(after, 0.0) if after is not None else 0.0)
            out[key] = relevance[key] + weight * lent
    return out


# -- diversity --------------------------------------------------------------------------------


def maximal_marginal_relevance(query: Any, candidates: Any, k: int, lambda_mult: float = 0.5) -> list[int]:
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


# -- seed 002 (Koshi): size-based pruning ----------------------------------------------------


def prune_weight(score: float, days_since: float, *, score_weight: float = 0.2, recency_rate: float = 0.01) -> float:
    """What pruning keeps: ``exp(score x 0.2) x 1/(1 + days x 0.01)``, seed 002's rank without BM25.

    The bottom of this order is archived first when the store is over its size limit.
    """
    return feedback_weight(score, score_weight) * recency_weight(days_since, recency_rate)


def prune_count(live_rows: int, percent: float) -> int:
    """How many rows one pruning round archives: ``percent`` % of the live rows, rounded up."""
    if live_rows <= 0 or percent <= 0:
        return 0
    return min(live_rows, math.ceil(live_rows * percent / 100.0 - 1e-9))


# -- seed 002 (Koshi v2): Hebbian links ----------------------------------------------------------


def link_strength_after(strength: float | None, *, initial: float = 1.0, increment: float = 1.0) -> float:
    """A link's strength after one more co-recall: ``initial`` for a new link, else ``+ increment``."""
    return initial if strength is None else strength + increment


def link_weight(strength: float, half_strength: float = 3.0) -> float:
    """The share of its parent's relevance a linked neighbour gets: ``s / (s + half)``, in [0, 1)."""
    if strength <= 0:
        return 0.0
    return strength / (strength + half_strength)

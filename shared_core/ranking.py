"""Every ranking formula, as a pure function of its inputs and its constants.

Constants default to the seeds' numbers and are configurable (see config.py). Nothing
here reads the database or the clock: callers pass ages and counts in.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

__all__ = [
    "feedback_weight",
    "recency_weight",
    "koshi_rank",
    "DAY_MS",
    "IMPORTANCE_KEYWORDS",
    "ValueScore",
    "recency_score",
    "access_score",
    "keyword_hits",
    "inferred_importance",
    "media_score",
    "memory_value_score",
    "normalise_bm25",
    "similarity_excess",
    "FusedScore",
    "fuse",
    "FUSIONS",
    "maximal_marginal_relevance",
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


# -- seed 003 (OpenLoomi): the forgetting engine's value score -----------------------------
#
# score = clamp01(0.35 x recency + 0.30 x access + 0.25 x importance + 0.10 x media + pinnedBoost)
#
# Note: the seed's prose says 1 access gives ~0.46 and 2 give ~0.56, but its own formula,
# log1p(n) / ln 10, gives 0.30 and 0.48 (5 -> 0.78 and 10 -> 1.0 do match). The formula is
# what is implemented; docs/forgetting.md says so.

DAY_MS = 86_400_000

IMPORTANCE_KEYWORDS: tuple[str, ...] = (
    "deadline", "todo", "urgent", "risk", "decision", "blocker",
    "meeting", "action item", "milestone", "bug", "incident", "follow up",
)


def _clamp01(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


@dataclass(frozen=True)
class ValueScore:
    """A record's forgetting value and its parts (each part before its weight)."""

    recency: float
    access: float
    importance: float
    media: float
    pinned_boost: float
    total: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def recency_score(age_ms: float, horizon_days: float = 180.0) -> float:
    """``clamp01(1 - ageMs / (180 x DAY_MS))``: 1 when new, 0 at the horizon (a future time counts as new)."""
    return _clamp01(1.0 - age_ms / (horizon_days * DAY_MS))


def access_score(access_count: int) -> float:
    """``clamp01(log1p(accessCount) / ln 10)``: 0 -> 0, 1 -> 0.30, 2 -> 0.48, 5 -> 0.78, 9+ -> 1."""
    return _clamp01(math.log1p(max(0, access_count)) / math.log(10))


@functools.lru_cache(maxsize=32)
def _keyword_patterns(keywords: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    # a keyword matches at the start of a word, with any suffix ("deadlines", "bugs") and
    # with spaces, hyphens or underscores between its words ("follow-up", "action_item")
    return tuple(
        re.compile(r"(?<!\w)" + r"[\s_\-]+".join(re.escape(part) for part in kw.casefold().split()), re.UNICODE)
        for kw in keywords
    )


def keyword_hits(text: str, keywords: Sequence[str] = IMPORTANCE_KEYWORDS) -> int:
    """How many of ``keywords`` occur in ``text`` (each counts once; case-insensitive)."""
    folded = text.casefold()
    return sum(1 for pattern in _keyword_patterns(tuple(keywords)) if pattern.search(folded))


def inferred_importance(text: str, keywords: Sequence[str] = IMPORTANCE_KEYWORDS, divisor: float = 4.0) -> float:
    """``hits / 4`` from the keyword scan, at most 1."""
    return _clamp01(keyword_hits(text, keywords) / divisor)


def media_score(has_media: bool, with_media: float = 0.7, without_media: float = 0.25) -> float:
    """``hasMediaRefs ? 0.7 : 0.25``."""
    return with_media if has_media else without_media


def memory_value_score(
    *,
    age_ms: float,
    access_count: int,
    importance: float | None,
    text: str,
    has_media: bool,
    pinned: bool,
    recency_weight: float = 0.35,
    access_weight: float = 0.30,
    importance_weight: float = 0.25,
    media_weight: float = 0.10,
    pinned_boost: float = 0.3,
    horizon_days: float = 180.0,
    media_with: float = 0.7,
    media_without: float = 0.25,
    keywords: Sequence[str] = IMPORTANCE_KEYWORDS,
    hits_divisor: float = 4.0,
) -> ValueScore:
    """Seed 003's value score of a raw record (higher = more worth keeping), clamped to [0, 1].

    ``importance`` is the provided importance (``None`` counts as 0); the importance part
    is ``max(provided, inferred)`` with the inferred one from the keyword scan.
    """
    recency = recency_score(age_ms, horizon_days)
    access = access_score(access_count)
    provided = 0.0 if importance is None else float(importance)
    importance_part = max(provided, inferred_importance(text, keywords, hits_divisor))
    media = media_score(has_media, media_with, media_without)
    boost = pinned_boost if pinned else 0.0
    total = _clamp01(
        recency_weight * recency + access_weight * access + importance_weight * importance_part
        + media_weight * media + boost
    )
    return ValueScore(recency, access, importance_part, media, boost, total)


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

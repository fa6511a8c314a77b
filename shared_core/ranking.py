"""Every ranking formula, as a pure function of its inputs and its constants.

Constants default to the seeds' numbers and are configurable (see config.py). Nothing
here reads the database or the clock: callers pass ages and counts in.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "feedback_weight",
    "recency_weight",
    "standing",
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
    "prune_weight",
    "prune_count",
    "link_strength_after",
    "link_weight",
    "insight_frequency_score",
    "insight_freshness_score",
    "insight_relevance_score",
    "InsightValue",
    "insight_value_score",
    "boosted_weight",
    "insight_decay_factor",
    "insight_weight",
    "insight_trend",
    "insight_is_active",
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
    "salience",
    "is_salient",
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


# -- seed 003 (OpenLoomi): insights ------------------------------------------------------------


def insight_frequency_score(access_count: int, max_accesses: int = 50) -> float:
    """Log-scaled access count relative to a maximum: ``clamp01(log1p(n) / log1p(max))``."""
    if access_count <= 0:
        return 0.0
    return min(1.0, math.log1p(access_count) / math.log1p(max(1, max_accesses)))


def insight_freshness_score(
    age_days: float,
    bands: tuple[tuple[float, float], ...] = ((1.0, 1.0), (7.0, 0.8), (30.0, 0.45)),
    beyond: float = 0.1,
) -> float:
    """Seed 003's freshness: under 1 day 1.0, under 7 days 0.8, under 30 days 0.45, else ``beyond``."""
    age = max(0.0, age_days)
    for limit, value in bands:
        if age < limit:
            return value
    return beyond


def insight_relevance_score(
    importance: float, urgency: float, *, importance_weight: float = 0.7, urgency_weight: float = 0.3
) -> float:
    """Seed 003's relevance: ``importance x 0.7 + urgency x 0.3`` (both already on a 0..1 scale)."""
    return importance * importance_weight + urgency * urgency_weight


@dataclass(frozen=True)
class InsightValue:
    """The parts of an insight's value score (each 0..1) and the total."""

    frequency: float
    freshness: float
    relevance: float
    favorite: float
    score: float


def insight_value_score(
    frequency: float,
    freshness: float,
    relevance: float,
    favorite: bool | float,
    *,
    weights: tuple[float, float, float, float] = (0.45, 0.25, 0.20, 0.10),
) -> InsightValue:
    """``valueScore = 0.45 frequency + 0.25 freshness + 0.20 relevance + 0.10 favourite`` (seed 003)."""
    fav = float(favorite)
    total = weights[0] * frequency + weights[1] * freshness + weights[2] * relevance + weights[3] * fav
    return InsightValue(frequency, freshness, relevance, fav, total)


def boosted_weight(weight: float, multiplier: float, cap: float = 5.0) -> float:
    """Seed 003's boosts: ``min(cap, weight x multiplier)`` (favourite x1.5, view x1.1, cap 5.0)."""
    return min(cap, weight * multiplier)


def insight_decay_factor(
    days_inactive: float,
    bands: tuple[tuple[float, float], ...] = ((7.0, 0.95), (14.0, 0.85), (30.0, 0.7)),
    period_days: float = 1.0,
) -> float:
    """The decay an insight has collected after ``days_inactive`` days without access.

    Seed 003 decays inactive insights at 0.95 (7-14 days), 0.85 (14-30 days) and 0.7 (30+ days).
    Read as a job that applies the rate of the current band once per ``period_days`` (daily),
    the factor is the product over the steps ``k x period`` so far, each at its band's rate.
    It is computed from the days alone, so it does not depend on how often maintenance runs.
    """
    days = max(0.0, days_inactive)
    if period_days <= 0:
        raise ValueError("period_days must be positive")
    factor = 1.0
    last_step = math.floor(days / period_days + 1e-9)
    for i, (start, rate) in enumerate(bands):
        end = bands[i + 1][0] if i + 1 < len(bands) else math.inf
        first = max(1, math.ceil(start / period_days - 1e-9))
        last = last_step if math.isinf(end) else min(last_step, math.ceil(end / period_days - 1e-9) - 1)
        if last >= first:
            factor *= rate ** (last - first + 1)
    return factor


def insight_weight(
    base: float,
    *,
    decay_factor: float = 1.0,
    floor: float = 0.3,
    favorite_boost: float | None = None,
    view_boost: float | None = None,
    cap: float = 5.0,
) -> float:
    """An insight's current weight: its base (customWeightMultiplier) decayed, then boosted.

    Decay never takes the weight below ``floor`` (or below the base, if that is lower);
    each active boost multiplies, capped at ``cap`` (seed 003).
    """
    weight = base * decay_factor
    if decay_factor < 1.0:
        weight = max(weight, min(base, floor))
    if favorite_boost is not None:
        weight = boosted_weight(weight, favorite_boost, cap)
    if view_boost is not None:
        weight = boosted_weight(weight, view_boost, cap)
    return weight


def insight_trend(recent: int, previous: int, ratio: float = 0.25) -> str:
    """Seed 003's trend: ``rising`` when the last 7 days have at least 25 % more accesses than the
    7 days before, ``falling`` when the previous 7 days have at least 25 % more, else ``stable``.

    Equal counts (including none at all) are stable.
    """
    if recent > previous and recent >= previous * (1.0 + ratio):
        return "rising"
    if previous > recent and previous >= recent * (1.0 + ratio):
        return "falling"
    return "stable"


def insight_is_active(access_count_30d: int) -> bool:
    """Seed 003: active when ``accessCount30d > 0``, dormant otherwise."""
    return access_count_30d > 0
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

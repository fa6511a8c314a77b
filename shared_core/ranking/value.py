"""Value scores of seed 003: the forgetting engine's value score of a record, and an insight's value
score, weight, decay and trend."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "DAY_MS", "IMPORTANCE_KEYWORDS", "ValueScore", "recency_score", "access_score", "keyword_hits",
    "inferred_importance", "media_score", "memory_value_score", "insight_frequency_score",
    "insight_freshness_score", "insight_relevance_score", "InsightValue", "insight_value_score", "boosted_weight",
    "insight_decay_factor", "insight_weight", "insight_trend", "insight_is_active",
]


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

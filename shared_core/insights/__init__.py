"""Insights (seed 003): structured records extracted from messages, ranked by a value score
(0.45 frequency + 0.25 freshness + 0.20 relevance + 0.10 favourite) times a per-user weight
that favourites and views boost and inactivity decays. Use them through ``store.insights``.
"""

from .records import (
    IMPORTANCE_LEVELS,
    URGENCY_LEVELS,
    ExtractionResult,
    Insight,
    InsightData,
    InsightHit,
    InsightWeights,
    RankedInsight,
    RankedInsights,
    insight_id,
)
from .service import Insights, InsightsMaintenance

__all__ = [
    "Insights",
    "Insight",
    "InsightData",
    "InsightWeights",
    "RankedInsight",
    "RankedInsights",
    "InsightHit",
    "ExtractionResult",
    "InsightsMaintenance",
    "insight_id",
    "IMPORTANCE_LEVELS",
    "URGENCY_LEVELS",
]

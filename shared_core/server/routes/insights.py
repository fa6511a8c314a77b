"""Insights (seed 003): rank, add or update, search, view, favourite, weight, remove."""

from __future__ import annotations

from dataclasses import asdict
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, Query, Response

from ...clock import to_iso
from ..schemas import (
    FavoriteIn,
    InsightHitOut,
    InsightIn,
    InsightOut,
    InsightSearchIn,
    RankedInsightOut,
    WeightIn,
)
from .access import Namespace, not_found

if TYPE_CHECKING:
    from ...store import MemoryStore

__all__ = ["insight_routes"]


def insight_routes(app: FastAPI, store: MemoryStore) -> None:
    tags: list[str | Enum] = ["insights"]

    def ranked_out(entry: Any) -> RankedInsightOut:
        return RankedInsightOut(insight=InsightOut.model_validate(entry.insight), rank=entry.rank, score=entry.score,
                                value=_plain(entry.value), weights=_plain(entry.weights))

    @app.get("/api/insights", tags=tags, response_model=list[RankedInsightOut],
             summary="Insights by value score x weight (seed 003)")
    def rank_insights(
        ns: Namespace,
        limit: Annotated[int, Query(ge=1, le=1000)] = 20,
        task_label: Annotated[str | None, Query(max_length=200)] = None,
        state: Annotated[str | None, Query(pattern="^(active|dormant)$")] = None,
    ) -> list[RankedInsightOut]:
        return [ranked_out(e) for e in store.insights.rank(namespace=ns, limit=limit, task_label=task_label,
                                                           state=state)]

    @app.post("/api/insights", tags=tags, response_model=InsightOut, summary="Add or update an insight")
    def upsert_insight(body: InsightIn, ns: Namespace) -> InsightOut:
        insight = store.insights.upsert(
            body.title, body.description, namespace=ns, bot_id=body.bot_id, importance=body.importance,
            urgency=body.urgency, details=body.details, timeline=body.timeline, task_label=body.task_label,
            dedupe_key=body.dedupe_key, platform=body.platform, channel=body.channel,
        )
        return InsightOut.model_validate(insight)

    @app.post("/api/insights/search", tags=tags, response_model=list[InsightHitOut], summary="Search insights")
    def search_insights(body: InsightSearchIn, ns: Namespace) -> list[InsightHitOut]:
        return [InsightHitOut(insight=InsightOut.model_validate(h.insight), score=h.score)
                for h in store.insights.search(body.query, namespace=ns, limit=body.limit)]

    @app.get("/api/insights/{insight_id}", tags=tags, response_model=RankedInsightOut,
             summary="An insight with its rank, value score and weights")
    def get_insight(insight_id: str, ns: Namespace) -> RankedInsightOut:
        return ranked_out(store.insights.ranked(insight_id, namespace=ns))

    @app.post("/api/insights/{insight_id}/view", tags=tags, response_model=InsightOut, summary="Record a view")
    def view_insight(insight_id: str, ns: Namespace) -> InsightOut:
        return InsightOut.model_validate(store.insights.view(insight_id, namespace=ns))

    @app.post("/api/insights/{insight_id}/favorite", tags=tags, response_model=InsightOut,
              summary="Favourite (x1.5 for 7 days) or unfavourite")
    def favorite_insight(insight_id: str, body: FavoriteIn, ns: Namespace) -> InsightOut:
        return InsightOut.model_validate(store.insights.favorite(insight_id, body.on, namespace=ns))

    @app.put("/api/insights/{insight_id}/weight", tags=tags, response_model=InsightOut,
             summary="Set the user's weight multiplier")
    def weight_insight(insight_id: str, body: WeightIn, ns: Namespace) -> InsightOut:
        return InsightOut.model_validate(store.insights.set_weight(insight_id, body.multiplier, namespace=ns))

    @app.delete("/api/insights/{insight_id}", tags=tags, status_code=204, summary="Remove an insight")
    def delete_insight(insight_id: str, ns: Namespace) -> Response:
        if not store.insights.delete(insight_id, namespace=ns):
            raise not_found("insight", insight_id, ns)
        return Response(status_code=204)


def _plain(record: Any) -> dict[str, Any]:
    out = asdict(record)
    return {k: to_iso(v) if hasattr(v, "isoformat") else v for k, v in out.items()}

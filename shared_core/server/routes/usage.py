"""Usage analytics (seeds 000 and 003): the summary, events and mined patterns."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Query

from ...errors import NotFoundError
from ..schemas import MemoryOut, UsageEventIn, UsageEventOut, UsagePatternOut, UsageSummaryOut
from .access import Namespace

if TYPE_CHECKING:
    from ...store import MemoryStore

__all__ = ["usage_routes"]


def usage_routes(app: FastAPI, store: MemoryStore) -> None:
    tags: list[str | Enum] = ["usage"]

    @app.get("/api/usage/summary", tags=tags, response_model=UsageSummaryOut,
             summary="Access frequency and feedback of memories, usage events (seed 003)")
    def usage_summary(ns: Namespace, top: Annotated[int, Query(ge=0, le=100)] = 10) -> UsageSummaryOut:
        summary = store.usage.summary(namespace=ns, top=top)
        data = {k: v for k, v in summary.__dict__.items() if k != "most_accessed"}
        return UsageSummaryOut(**data, most_accessed=[MemoryOut.model_validate(m) for m in summary.most_accessed])

    @app.post("/api/usage/events", tags=tags, status_code=201, response_model=UsageEventOut,
              summary="Record a usage event (seed 000)")
    def log_event(body: UsageEventIn, ns: Namespace) -> UsageEventOut:
        event_id = store.usage.log(body.event_type, description=body.description, category=body.category,
                                   channel=body.channel, skills=body.skills, score=body.score, namespace=ns)
        for event in reversed(store.usage.events(namespace=ns, event_type=body.event_type.strip())):
            if event.id == event_id:
                return UsageEventOut.model_validate(event)
        raise NotFoundError(f"usage event {event_id!r} was deleted before it could be read back")

    @app.get("/api/usage/events", tags=tags, response_model=list[UsageEventOut], summary="Usage events, oldest first")
    def list_events(
        ns: Namespace,
        event_type: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[UsageEventOut]:
        return [UsageEventOut.model_validate(e) for e in store.usage.events(namespace=ns, event_type=event_type,
                                                                            limit=limit)]

    @app.get("/api/usage/patterns", tags=tags, response_model=list[UsagePatternOut],
             summary="Mined usage patterns, most confident first")
    def list_patterns(
        ns: Namespace,
        pattern_status: Annotated[str | None, Query(alias="status",
                                                    pattern="^(detected|proposed|dismissed|lapsed)$")] = None,
    ) -> list[UsagePatternOut]:
        return [UsagePatternOut.model_validate(p) for p in store.usage.patterns(namespace=ns, status=pattern_status)]

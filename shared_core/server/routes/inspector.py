"""The memory inspector: its page at ``/`` (no token needed: it holds no data) and the routes it reads.

The page (``static/inspector/``) asks for everything through the REST API with the bearer token the
user gives it, so a token limited to namespaces sees only those, here as everywhere. The routes
below add what the page needs that the rest of the API has no route for: a search that explains
each hit and filters by time without counting as an access, a namespace's overview, one memory with
its provenance, history, links, access and feedback by day and value curves, archiving and restoring,
sessions with their transcripts and summaries, a document's chunks. Each translates a call of the library
(``store.inspector``, ``store.search``, ``store.archive``...); edits, feedback, deletes and erasing
use the existing memory routes.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from ...errors import NotFoundError
from ..asgi import PUBLIC_PATHS_ATTRIBUTE
from ..schemas import MAX_SEARCH_WINDOW, Kind, MemoryOut, Name, Tag, Text
from .access import Namespace, principal_of
from .memories import MANAGED_KINDS

if TYPE_CHECKING:
    from ...store import MemoryStore

__all__ = ["inspector_routes", "PAGE_FILES"]

# what the page is made of: URL path -> (file in static/inspector, media type)
PAGE_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/ui/charts.js": ("charts.js", "text/javascript; charset=utf-8"),
    "/ui/app.css": ("app.css", "text/css; charset=utf-8"),
}
# the page loads only its own files and talks only to this server
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_TAGS: list[str | Enum] = ["inspector"]
_Limit = Annotated[int, Query(ge=1, le=500)]
_Offset = Annotated[int, Query(ge=0, le=1_000_000)]


# -- bodies ---------------------------------------------------------------------------------------------

class InspectSearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: Annotated[Text, Field(min_length=1, max_length=10_000)]
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=MAX_SEARCH_WINDOW - 100)
    kind: list[Kind] | None = Field(None, max_length=50)
    tags: list[Tag] | None = Field(None, max_length=100, description="Any of these tags.")
    category: list[Name] | None = Field(None, max_length=100)
    since: datetime | None = Field(None, description="Created at or after this time.")
    until: datetime | None = Field(None, description="Created before this time.")
    include_archive: bool = False
    include_superseded: bool = False


class PartsOut(BaseModel):
    bm25: float | None
    keyword: float
    keyword_strength: float
    similarity: float | None
    vector: float
    relevance: float
    feedback: float
    recency: float
    days_since_hit: float
    fusion: str


class ExplainedHitOut(BaseModel):
    id: str
    score: float
    parts: PartsOut
    explanation: str = Field(description="The score as a formula of its parts (Hit.explain()).")
    archived: bool
    memory: MemoryOut


class ExplainedSearchOut(BaseModel):
    query: str
    namespace: str
    hits: list[ExplainedHitOut]


class GrowthOut(BaseModel):
    day: str
    added: int
    total: int


class StepOut(BaseModel):
    name: str
    summary: str | None


class MaintenanceViewOut(BaseModel):
    last_run_at: datetime | None
    status: str | None
    next_due: datetime | None
    steps: list[StepOut]


class OverviewOut(BaseModel):
    namespace: str
    live_by_kind: dict[str, int]
    archived_by_kind: dict[str, int]
    superseded: int
    expired: int
    pinned: int
    message_tiers: dict[str, int]
    summary_tiers: dict[str, int]
    documents: int
    sessions: int
    links: int
    growth: list[GrowthOut]
    maintenance: MaintenanceViewOut
    file_bytes: int | None = Field(description="The store's size: only for a token for every namespace.")


class PointOut(BaseModel):
    day: float
    value: float


class CurveOut(BaseModel):
    measure: str
    label: str
    explanation: str
    points: list[PointOut]
    threshold: float | None
    threshold_label: str | None
    crosses_at_day: float | None
    ends_at_day: float | None
    protected: str | None


class LinkOut(BaseModel):
    memory_id: str
    strength: float
    text: str | None
    kind: str | None
    archived: bool
    updated_at: datetime | None


class ProvenanceOut(BaseModel):
    source: str | None
    session_id: str | None
    document_id: str | None
    document_name: str | None
    owner_id: str | None
    task_id: str | None


class VersionOut(BaseModel):
    id: str
    text: str
    valid_from: datetime | None
    valid_to: datetime | None
    superseded_by: str | None
    reason: str | None
    archived: bool
    current: bool


class ActivityOut(BaseModel):
    day: str = Field(description="YYYY-MM-DD (UTC, the store's clock)")
    accesses: int
    reinforcements: int
    demotions: int
    score_delta: float


class MemoryDetailOut(BaseModel):
    memory: MemoryOut
    archived: bool
    archive_reason: str | None
    editable: bool = Field(description="False for a memory a domain keeps (a document chunk, a message...): "
                                       "change it through that domain.")
    owner_domain: str | None
    metadata: dict[str, Any]
    provenance: ProvenanceOut
    history: list[VersionOut]
    links: list[LinkOut]
    curves: list[CurveOut]
    activity: list[ActivityOut] = Field(description="Days with accesses or feedback in the last 90, oldest first.")
    decays: bool = Field(description="False when nothing in the lifecycle lowers its value or removes it by itself.")
    fate: str = Field(description="How memories of its kind leave, or why they don't.")
    as_of: datetime = Field(description="The store's clock when this was read: the curves' and activity's now.")


class SessionOut(BaseModel):
    id: str
    namespace: str
    channel: str | None
    created_at: datetime | None
    updated_at: datetime | None
    ended_at: datetime | None
    messages: int


class SessionDetailOut(BaseModel):
    session: dict[str, Any]
    messages: list[dict[str, Any]]
    working_summaries: list[dict[str, Any]]
    summaries: list[dict[str, Any]]


class ChunkOut(BaseModel):
    id: str
    document_id: str
    chunk_index: int
    content: str
    start: int
    end: int
    metadata: dict[str, Any]


# -- the routes -----------------------------------------------------------------------------------------

def inspector_routes(app: FastAPI, store: MemoryStore) -> None:
    """Serve the inspector's page at ``/`` (without a token) and add the routes it reads."""
    _page_routes(app)
    _data_routes(app, store)


def _page_routes(app: FastAPI) -> None:
    folder = resources.files("shared_core.server") / "static" / "inspector"
    public = set(getattr(app.state, PUBLIC_PATHS_ATTRIBUTE, ()))
    for path, (name, media_type) in PAGE_FILES.items():
        public.add(path)

        def page(name: str = name, media_type: str = media_type) -> Response:
            return Response(folder.joinpath(name).read_bytes(), media_type=media_type, headers=_PAGE_HEADERS)

        app.add_api_route(path, page, methods=["GET"], include_in_schema=False)
    setattr(app.state, PUBLIC_PATHS_ATTRIBUTE, frozenset(public))


def _detail(store: MemoryStore, memory_id: str, ns: str) -> MemoryDetailOut:
    detail = store.inspector.memory(memory_id, ns)
    data = detail.to_dict()
    memory = data["memory"]
    return MemoryDetailOut(
        memory=MemoryOut.model_validate(memory), archived=detail.archived, archive_reason=memory.get("archive_reason"),
        editable=detail.editable, owner_domain=detail.owner_domain, metadata=memory.get("metadata") or {},
        provenance=ProvenanceOut(**data["provenance"]), history=[VersionOut(**v) for v in data["history"]],
        links=[LinkOut(**link) for link in data["links"]], curves=[CurveOut(**c) for c in data["curves"]],
        activity=[ActivityOut(**a) for a in data["activity"]], decays=detail.decays, fate=detail.fate,
        as_of=detail.as_of,
    )


def _plain_kind(store: MemoryStore, memory_id: str, ns: str, archived: bool) -> None:
    memory = store.archive.get(memory_id, namespace=ns) if archived else store.get(memory_id, namespace=ns)
    if memory.kind in MANAGED_KINDS:
        raise HTTPException(400, f"memory {memory_id!r} is a {memory.kind} entry kept by its own domain, whose "
                            "lifecycle archives and restores it")


def _data_routes(app: FastAPI, store: MemoryStore) -> None:
    @app.post("/api/inspector/search", tags=_TAGS, response_model=ExplainedSearchOut,
              summary="Hybrid search with each hit's explanation; not counted as an access")
    def search(body: InspectSearchIn, ns: Namespace) -> ExplainedSearchOut:
        hits = store.search(
            body.query, namespace=ns, kind=body.kind or None, tags=body.tags or None, category=body.category or None,
            since=body.since, until=body.until, limit=body.limit, offset=body.offset,
            include_archive=body.include_archive, include_superseded=body.include_superseded, track_access=False,
            expand_links=False,
        )
        return ExplainedSearchOut(query=body.query, namespace=ns, hits=[
            ExplainedHitOut(id=h.id, score=h.score, parts=PartsOut(**h.parts.to_dict()), explanation=h.explain(),
                            archived=h.memory.archived_at is not None, memory=MemoryOut.model_validate(h.memory))
            for h in hits])

    @app.get("/api/inspector/memories", tags=_TAGS, response_model=list[MemoryOut],
             summary="Browse memories by kind, tags, category and creation time")
    def browse(
        ns: Namespace,
        kind: Annotated[list[Kind] | None, Query(max_length=50)] = None,
        tag: Annotated[list[Tag] | None, Query(max_length=100, description="Any of these tags.")] = None,
        category: Annotated[Name | None, Query()] = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: _Limit = 50,
        offset: _Offset = 0,
    ) -> list[MemoryOut]:
        memories = store.list(namespace=ns, kind=kind or None, tags=tag or None, category=category, since=since,
                              until=until, order_by="created_at", descending=True, limit=limit, offset=offset)
        return [MemoryOut.model_validate(m) for m in memories]

    @app.get("/api/inspector/overview", tags=_TAGS, response_model=OverviewOut,
             summary="A namespace's counts by kind and tier, growth, last maintenance and (all-namespace tokens) size")
    def overview(ns: Namespace, request: Request) -> OverviewOut:
        with_store = principal_of(request).unrestricted  # the file and the step summaries span every namespace
        return OverviewOut(**store.inspector.overview(ns, with_store=with_store).to_dict())

    @app.get("/api/inspector/memories/{memory_id}", tags=_TAGS, response_model=MemoryDetailOut,
             summary="One memory, live or archived: provenance, version history, links, value curves")
    def memory_detail(memory_id: str, ns: Namespace) -> MemoryDetailOut:
        return _detail(store, memory_id, ns)

    @app.post("/api/inspector/memories/{memory_id}/archive", tags=_TAGS, response_model=MemoryDetailOut,
              summary="Move a memory to the archive (out of live search, keyword-searchable, restorable)")
    def archive(memory_id: str, ns: Namespace) -> MemoryDetailOut:
        _plain_kind(store, memory_id, ns, archived=False)
        store.archive(memory_id, reason="manual", namespace=ns)
        return _detail(store, memory_id, ns)

    @app.post("/api/inspector/memories/{memory_id}/restore", tags=_TAGS, response_model=MemoryDetailOut,
              summary="Bring an archived memory back into live search (re-embedded, feedback and dates kept)")
    def restore(memory_id: str, ns: Namespace) -> MemoryDetailOut:
        _plain_kind(store, memory_id, ns, archived=True)
        store.archive.restore(memory_id, namespace=ns)
        return _detail(store, memory_id, ns)

    @app.get("/api/inspector/sessions", tags=_TAGS, response_model=list[SessionOut],
             summary="A namespace's sessions, most recently updated first")
    def sessions(ns: Namespace, limit: _Limit = 50, offset: _Offset = 0) -> list[SessionOut]:
        return [SessionOut(**s.__dict__) for s in store.inspector.sessions(ns, limit=limit, offset=offset)]

    @app.get("/api/inspector/sessions/{session_id}", tags=_TAGS, response_model=SessionDetailOut,
             summary="A session's messages, working summaries and the summaries its messages were compressed into")
    def session_detail(session_id: str, ns: Namespace, limit: _Limit = 500) -> SessionDetailOut:
        return SessionDetailOut(**store.inspector.session(session_id, ns, limit=limit).to_dict())

    @app.get("/api/inspector/documents/{document_id}/chunks", tags=_TAGS, response_model=list[ChunkOut],
             summary="A knowledge-base document's chunks, in order (each chunk's id is its memory's id)")
    def chunks(document_id: str, ns: Namespace) -> list[ChunkOut]:
        try:
            found = store.documents.get_chunks(document_id, namespace=ns)
        except NotFoundError:
            raise HTTPException(404, f"no document with id {document_id!r} in namespace {ns!r}") from None
        return [ChunkOut(id=c.id, document_id=c.document_id, chunk_index=c.chunk_index, content=c.content,
                         start=c.start, end=c.end, metadata=c.metadata) for c in found]

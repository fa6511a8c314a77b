"""Memories (add, list, search, get, change, remove, feedback) and namespaces (list, erase)."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, HTTPException, Query, Request, Response

from ...items import STORE_ITEM_KINDS
from ...registry import DOMAINS
from ..errors import Scrubber
from ..schemas import (
    AddOut,
    EraseOut,
    FeedbackIn,
    HitOut,
    MemoryIn,
    MemoryOut,
    MemoryPatch,
    NamespaceOut,
    SearchIn,
    SearchOut,
)
from .access import Namespace, principal_of, resolve_namespace

if TYPE_CHECKING:
    from ...store import MemoryStore

__all__ = ["memory_routes", "MANAGED_KINDS"]

# kinds that belong to a domain (a document chunk, an insight, a LangGraph item...): read and search
# them here, but write them through their own endpoints or libraries. Plain memories (facts, notes)
# are the memories and facts domains'; the adapters own their items and nodes.
MANAGED_KINDS = frozenset((
    *(kind for domain in DOMAINS if domain.name not in ("memories", "facts") for kind in domain.kinds),
    *STORE_ITEM_KINDS, "node",
))


def memory_routes(app: FastAPI, store: MemoryStore, scrub: Scrubber) -> None:
    tags: list[str | Enum] = ["memories"]

    @app.post("/api/memories", tags=tags, status_code=201, response_model=AddOut, summary="Add a memory")
    def add_memory(body: MemoryIn, ns: Namespace) -> AddOut:
        if body.kind in MANAGED_KINDS:
            raise HTTPException(400, f"memories of kind {body.kind!r} are written by their own part of the API "
                                "or library (e.g. documents through /api/kb, insights through /api/insights)")
        result = store.add(
            body.text, kind=body.kind, namespace=ns, tags=body.tags, category=body.category, source=body.source,
            metadata=body.metadata, importance=body.importance, confidence=body.confidence, pinned=body.pinned,
            ttl=body.ttl_seconds, session_id=body.session_id, dedup=body.dedup,
        )
        memory = store.get(result, namespace=ns)
        return AddOut.model_validate({"id": memory.id, "event": result.event, "memory": MemoryOut.model_validate(memory)})

    @app.get("/api/memories", tags=tags, response_model=list[MemoryOut], summary="List memories")
    def list_memories(
        ns: Namespace,
        kind: Annotated[list[str] | None, Query(max_length=50)] = None,
        tag: Annotated[list[str] | None, Query(max_length=100, description="Any of these tags.")] = None,
        category: Annotated[str | None, Query(max_length=200)] = None,
        order_by: Annotated[str, Query(pattern="^(created_at|updated_at|score|access_count|last_hit_at)$")] = "created_at",
        descending: bool = True,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> list[MemoryOut]:
        memories = store.list(namespace=ns, kind=kind or None, tags=tag or None, category=category,
                              order_by=order_by, descending=descending, limit=limit, offset=offset)
        return [MemoryOut.model_validate(m) for m in memories]

    @app.post("/api/memories/search", tags=tags, response_model=SearchOut, summary="Hybrid search")
    def search_memories(body: SearchIn, ns: Namespace) -> SearchOut:
        hits = store.search(
            body.query, namespace=ns, kind=body.kind or None, tags=body.tags or None,
            category=body.category or None, where=body.where, limit=body.limit, offset=body.offset,
            fusion=body.fusion, include_archive=body.include_archive, track_access=body.track_access,
        )
        return SearchOut(query=body.query, namespace=ns, hits=[
            HitOut(id=h.id, score=h.score, parts=h.parts.to_dict(), memory=MemoryOut.model_validate(h.memory))
            for h in hits])

    @app.get("/api/memories/{memory_id}", tags=tags, response_model=MemoryOut, summary="Get a memory")
    def get_memory(memory_id: str, ns: Namespace) -> MemoryOut:
        return MemoryOut.model_validate(store.get(memory_id, namespace=ns))

    @app.patch("/api/memories/{memory_id}", tags=tags, response_model=MemoryOut, summary="Change a memory in place")
    def update_memory(memory_id: str, body: MemoryPatch, ns: Namespace) -> MemoryOut:
        writable(store, memory_id, ns)
        given = body.model_fields_set
        memory = store.update(
            memory_id, body.text, namespace=ns, tags=body.tags,
            metadata=body.metadata, category=body.category if "category" in given else ...,
            importance=body.importance if "importance" in given else ..., pinned=body.pinned,
        )
        return MemoryOut.model_validate(memory)

    @app.delete("/api/memories/{memory_id}", tags=tags, status_code=204, summary="Remove a memory for good")
    def delete_memory(memory_id: str, ns: Namespace) -> Response:
        writable(store, memory_id, ns)
        store.delete(memory_id, namespace=ns)
        return Response(status_code=204)

    @app.post("/api/memories/{memory_id}/feedback", tags=tags, response_model=MemoryOut,
              summary="Reinforce (+3) or demote (-1) a memory")
    def feedback(memory_id: str, body: FeedbackIn, ns: Namespace) -> MemoryOut:
        act = store.reinforce if body.signal == "reinforce" else store.demote
        return MemoryOut.model_validate(act(memory_id, namespace=ns, weight=body.weight))

    @app.get("/api/namespaces", tags=tags, response_model=list[NamespaceOut], summary="Namespaces this token sees")
    def namespaces(request: Request) -> list[NamespaceOut]:
        principal = principal_of(request)
        return [NamespaceOut(namespace=n, memories=c) for n, c in store.namespaces().items() if principal.allows(n)]

    @app.delete("/api/namespaces/{namespace:path}", tags=tags, response_model=EraseOut,
                responses={202: {"model": EraseOut, "description": "Erased, but old pages remain until another "
                                 "connection's read ends (see remaining); it finishes by itself"}},
                summary="Erase a namespace: every row, file and stored byte of it")
    def erase_namespace(namespace: str, request: Request, response: Response) -> EraseOut:
        ns = resolve_namespace(request, namespace)
        report = store.erase_namespace(ns).to_dict()
        for key in ("files", "remaining", "notes"):
            report[key] = [scrub(text) for text in report[key]]
        response.status_code = 200 if report["complete"] else 202
        return EraseOut(**report)


def writable(store: MemoryStore, memory_id: str, namespace: str) -> None:
    memory = store.get(memory_id, namespace=namespace)
    if memory.kind in MANAGED_KINDS:
        raise HTTPException(400, f"memory {memory_id!r} is a {memory.kind} entry kept by its own domain; change it "
                            "there (e.g. DELETE /api/kb/documents/{id} for a document, /api/insights for an insight)")

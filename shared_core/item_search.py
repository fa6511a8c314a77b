"""Searching memories as key-value items, ranked as LangGraph's own stores rank them (see :mod:`.items`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .items import ITEM_KINDS, UNINDEXED_KIND
from .memories import Memory
from .namespaces import decode_namespace
from .relevance import relevance_scale

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = ["item_scope", "search_items"]


def item_scope(store: MemoryStore, prefix: str, kinds: Sequence[str] = ITEM_KINDS) -> dict[str, Any]:
    """The ``namespace``/``namespace_prefix`` arguments that reach every item under ``prefix``.

    Items live in namespaces that are encoded tuples (``"users.alice."``). Under a prefix that
    some other namespace also matches (``""`` matches ``"user:alice"``), the scope lists the
    tuple namespaces instead, so no memory outside them is shown as an item.
    """
    found = store.namespaces(prefix or None, kind=list(kinds), include_expired=False)
    tuples = [name for name in found if _is_tuple(name)]
    if len(tuples) == len(found):
        return {"namespace": None, "namespace_prefix": prefix}
    return {"namespace": tuples, "namespace_prefix": None}


def search_items(
    store: MemoryStore,
    query: str,
    *,
    scope: Mapping[str, Any],
    where: Mapping[str, Any] | None = None,
    limit: int = 10,
    offset: int = 0,
    fusion: str | None = None,
    kinds: Sequence[str] = ITEM_KINDS,
) -> list[tuple[Memory, float | None]]:
    """The items in ``scope`` for ``query``, best first, with scores in [0, 1], as LangGraph's stores rank.

    First the hybrid search's matches by relevance (keywords and vectors fused; the score is the
    fused relevance over the largest the fusion gives, :func:`~shared_core.relevance.relevance_scale`,
    as the LlamaIndex retriever scores; feedback and recency do not reorder them), then, while fewer
    than ``offset + limit`` matched, the other indexed items by vector similarity (scored no
    higher than the last match, and never below 0), then items stored without an index (score
    ``None``), newest first. ``scope`` is :func:`item_scope`'s.
    """
    if not isinstance(query, str) or not query.strip():
        raise ValueError("search_items needs a query; list the items without one instead")
    wanted = offset + limit
    if wanted <= 0:
        return []
    if not scope.get("namespace_prefix") and scope.get("namespace") == []:
        return []
    indexed = [kind for kind in kinds if kind != UNINDEXED_KIND]
    found: list[tuple[Memory, float | None]] = []
    hits = store.search(query, **scope, kind=indexed, where=where, limit=wanted, fusion=fusion, rank=False)
    scale = relevance_scale(store, fusion)
    found.extend((hit.memory, min(1.0, max(0.0, hit.parts.relevance / scale))) for hit in hits)
    if len(found) < wanted:
        floor = found[-1][1] or 0.0 if found else 1.0
        others = _excluding(where, [m.id for m, _ in found])
        if getattr(store.embedder, "embeds_text", True):
            for hit in store.search(query, **scope, kind=indexed, where=others, limit=wanted - len(found),
                                    fusion="vector", rank=False, track_access=False):
                floor = min(floor, max(0.0, hit.parts.similarity or 0.0))
                found.append((hit.memory, floor))
        else:  # an embedder that cannot embed the query: the rest unranked, newest first
            found.extend((memory, 0.0) for memory in store.list(**scope, kind=indexed, where=others,
                                                                limit=wanted - len(found), order_by="updated_at",
                                                                descending=True))
    if len(found) < wanted and UNINDEXED_KIND in kinds:
        unindexed = store.list(**scope, kind=UNINDEXED_KIND, where=where, limit=wanted - len(found),
                               order_by="updated_at", descending=True)
        found.extend((memory, None) for memory in unindexed)
    return found[offset:wanted]


def _excluding(where: Mapping[str, Any] | None, ids: list[str]) -> dict[str, Any] | None:
    if not ids:
        return dict(where) if where else None
    leave_out = {"@id": {"$nin": ids}}
    return leave_out if not where else {"$and": [dict(where), leave_out]}


def _is_tuple(namespace: str) -> bool:
    try:
        decode_namespace(namespace)
    except ValueError:
        return False
    return True

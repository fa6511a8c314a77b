"""Memories as key-value items: what a framework's item store (LangGraph's ``BaseStore``) shows.

One memory, every door: a namespace's store items and the memories other doors wrote there
(the facts an agent middleware or the memory tools saved, learnings, episodes...) are one
collection of items.

* **Store items** are memories of kind :data:`ITEM_KIND` (or :data:`UNINDEXED_KIND` when put
  without indexing) whose metadata holds ``{"key", "value", "ttl_minutes"}``: the value
  round-trips exactly as it was put.
* **Other memories** of the kinds in :data:`MEMORY_ITEM_KINDS` are shown as items whose key is
  the memory's id and whose value is ``{"content": text, "kind": kind}`` (plus ``category`` and
  ``tags`` when set): the shape LangMem's tools write, so a value put as ``{"content": ...}``
  and a fact saved by another door read alike. Filters address those fields
  (:data:`MEMORY_VALUE_FIELDS`).
* :func:`search_items` ranks a query's items like LangGraph's own stores: every item in scope
  (up to the limit), best first, each with a score in [0, 1].

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     fact = store.add("Alice drinks oolong tea", namespace="memories.alice.")
...     memory = store.get(fact)
...     item_key(memory) == fact, item_value(memory)
(True, {'content': 'Alice drinks oolong tea', 'kind': 'fact', 'category': 'food'})
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .memories import Memory
from .namespaces import decode_namespace
from .relevance import relevance_scale

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = [
    "ITEM_KIND",
    "UNINDEXED_KIND",
    "STORE_ITEM_KINDS",
    "MEMORY_ITEM_KINDS",
    "ITEM_KINDS",
    "MEMORY_VALUE_FIELDS",
    "is_store_item",
    "item_key",
    "item_value",
    "item_text",
    "item_scope",
    "search_items",
]

ITEM_KIND = "langgraph_item"
UNINDEXED_KIND = "langgraph_item_unindexed"
STORE_ITEM_KINDS = (ITEM_KIND, UNINDEXED_KIND)
# what "a memory" is, as opposed to a transcript message, a document chunk or a workspace file line
MEMORY_ITEM_KINDS = ("fact", "learning", "procedure", "insight", "episode", "summary", "note")
ITEM_KINDS = (*STORE_ITEM_KINDS, *MEMORY_ITEM_KINDS)
# a memory's item value field -> the built-in field a filter on it reads
MEMORY_VALUE_FIELDS = {"content": "@text", "kind": "@kind", "category": "@category", "tags": "@tags"}


def is_store_item(memory: Memory) -> bool:
    """Whether the memory was put as an item (its value is kept), not written by another door."""
    return memory.kind in STORE_ITEM_KINDS


def item_key(memory: Memory) -> str:
    """The item's key: the key it was put under, or the memory's id."""
    return str(memory.metadata["key"]) if is_store_item(memory) else memory.id


def item_value(memory: Memory) -> dict[str, Any]:
    """The item's value: exactly what was put, or ``{"content": text, "kind": kind, ...}`` for a memory."""
    if is_store_item(memory):
        return memory.metadata["value"]
    value: dict[str, Any] = {"content": memory.text, "kind": memory.kind}
    if memory.category:
        value["category"] = memory.category
    if memory.tags:
        value["tags"] = list(memory.tags)
    return value


def item_text(value: Mapping[str, Any]) -> str:
    """The text to index for a value put without chosen fields: its ``content`` when that is text
    (LangMem's shape, and how memories read as items), else the whole value as JSON."""
    content = value.get("content")
    if isinstance(content, str) and content.strip():
        return content
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


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

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
* :func:`shared_core.item_search.search_items` ranks a query's items like LangGraph's own
  stores: every item in scope (up to the limit), best first, each with a score in [0, 1].

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     fact = store.add("Alice drinks oolong tea", namespace="memories.alice.")
...     memory = store.get(fact)
...     item_key(memory) == fact, item_value(memory)
(True, {'content': 'Alice drinks oolong tea', 'kind': 'fact', 'category': 'food'})
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .memories import Memory

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

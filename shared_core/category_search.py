"""Seed 004's category-scoped retrieval with flat fallback, over the one search the store has.

1. categories: the ones the caller names, or else the categories of the best hits of a
   flat probe search (at most ``max_categories``, best first);
2. scoped facts: the search restricted to those categories;
3. flat fallback: when fewer than ``min_results`` come back, a flat search fills up to
   ``limit`` with hits the scoped search did not already return.

Ranking is the store's own (``MemoryStore.search``); this module only decides the scopes.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     _ = store.add("My cat is called Whiskerino", category="pets")
...     _ = store.add("The cat flap in the kitchen is broken", category="home")
...     found = search_by_category(store, "what is my cat called?", categories=["pets"])
...     [(h.text, found.tier_of(h.id)) for h in found.hits]
[('My cat is called Whiskerino', 'scoped'), ('The cat flap in the kitchen is broken', 'flat')]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .index.filters import And, Condition, Filter, Not, parse_filter
from .memories import DEFAULT_NAMESPACE
from .search import Hit, SearchResults

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = ["CategorySearch", "search_by_category"]


@dataclass(frozen=True)
class CategorySearch:
    """The hits (scoped ones first, then the fallback's), and which categories were searched."""

    hits: SearchResults
    categories: tuple[str, ...]
    scoped_ids: frozenset[str]

    def tier_of(self, memory_id: str) -> str:
        """``"scoped"`` or ``"flat"``: which step found the hit."""
        return "scoped" if memory_id in self.scoped_ids else "flat"

    @property
    def used_fallback(self) -> bool:
        return any(hit.id not in self.scoped_ids for hit in self.hits)


def search_by_category(
    store: MemoryStore,
    query: str,
    *,
    categories: str | Sequence[str] | None = None,
    namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
    kind: str | Sequence[str] | None = "fact",
    where: Mapping[str, Any] | Filter | None = None,
    limit: int = 5,
    min_results: int | None = None,
    max_categories: int = 3,
    probe: int = 10,
    **search: Any,
) -> CategorySearch:
    """Search facts within the query's categories first, then everywhere if too few come back.

    ``categories``: the categories to search (say, chosen by the model); without them the
    categories of the best ``probe`` flat hits are used. ``min_results`` (default ``limit``):
    fewer scoped hits than this triggers the flat fallback. Other keyword arguments go to
    :meth:`MemoryStore.search` (``fusion``, ``tags``, ``since``...).
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if max_categories < 1 or probe < 1:
        raise ValueError("max_categories and probe must be at least 1")
    for reserved in ("category", "limit", "offset", "ids"):
        if reserved in search:
            raise TypeError(f"search_by_category does not take {reserved!r}; it sets the scope itself")
    wanted = limit if min_results is None else min_results
    common = dict(namespace=namespace, kind=kind, **search)
    if categories is None:
        seen = store.search(query, where=where, limit=probe, track_access=False, **common)
        chosen = tuple(dict.fromkeys(h.memory.category for h in seen if h.memory.category))[:max_categories]
    else:
        chosen = (categories,) if isinstance(categories, str) else tuple(categories)
        if not all(isinstance(c, str) and c.strip() for c in chosen):
            raise ValueError(f"categories must be non-empty strings, got {categories!r}")
    hits: list[Hit] = list(store.search(query, category=chosen, where=where, limit=limit, **common)) if chosen else []
    scoped = frozenset(h.id for h in hits)
    if len(hits) < min(wanted, limit):
        fallback = parse_filter(where)
        if scoped:
            exclude = Not(Condition("@id", "$in", sorted(scoped)))
            fallback = exclude if fallback is None else And((exclude, fallback))
        hits.extend(store.search(query, where=fallback, limit=limit - len(hits), **common))
    return CategorySearch(SearchResults(hits, query=query), chosen, scoped)

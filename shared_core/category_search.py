"""Seed 004's three-tier retrieval: categories, then facts scoped to them, then a flat fallback.

The one implementation, used by the prompt addendum (``store.memory_manager.build_context``),
``store.memory_manager.recall_facts`` and the ``memory_recall`` tool:

1. **categories**: the ones the caller names; else the categories the query is about
   (:meth:`shared_core.categories.Categorizer.for_query`: keyword rules, or the text model),
   kept only if facts of that category exist in the scope; else, when the query names no known
   category, the categories of the best hits of a flat probe search (best first), unless the
   very best hit has no category (then scoping would hide it, and the search is flat);
   at most ``max_categories``;
2. **scoped facts**: the store's search restricted to those categories;
3. **flat fallback**: when fewer than ``min_results`` come back, a flat search fills up to
   ``limit`` with hits the scoped search did not already return.

Ranking is the store's own (``MemoryStore.search``); this module only decides the scopes.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     _ = store.add("My cat is called Whiskerino", category="pets")
...     _ = store.add("The cat flap in the kitchen is broken", category="home")
...     found = search_by_category(store.memories, "what is my cat called?")
...     found.categories, [(h.text, found.tier_of(h.id)) for h in found.hits]
(('pets',), [('My cat is called Whiskerino', 'scoped'), ('The cat flap in the kitchen is broken', 'flat')])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .index.filters import And, Condition, Filter, Not, parse_filter
from .memories import DEFAULT_NAMESPACE, scope_for
from .search import Hit, SearchResults

if TYPE_CHECKING:
    from .categories import Categorizer
    from .memories.service import MemoryService

__all__ = ["CategorySearch", "search_by_category", "known_categories"]


@dataclass(frozen=True)
class CategorySearch:
    """The hits (scoped ones first, then the fallback's), which categories were searched and how they were chosen."""

    hits: SearchResults
    categories: tuple[str, ...]
    scoped_ids: frozenset[str]
    chosen_by: str = "given"  # given | query (the categoriser) | probe | none

    def tier_of(self, memory_id: str) -> str:
        """``"scoped"`` or ``"flat"``: which step found the hit."""
        return "scoped" if memory_id in self.scoped_ids else "flat"

    @property
    def used_fallback(self) -> bool:
        return any(hit.id not in self.scoped_ids for hit in self.hits)


def known_categories(memories: MemoryService, *, namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
                     kind: str | Sequence[str] | None = "fact") -> list[str]:
    """The categories that live memories of ``kind`` in ``namespace`` have, most used first."""
    scope = scope_for(namespace=namespace, namespace_prefix=None, kind=kind, ids=None, where=None, tags=None,
                      category=None, source=None, since=None, until=None, live_at=None, current_only=True)
    with memories.kernel.session():
        return memories.kernel.memories.categories(scope)


def search_by_category(
    memories: MemoryService,
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
    categorizer: Categorizer | None = None,
    **search: Any,
) -> CategorySearch:
    """Search facts within the query's categories first, then everywhere if too few come back.

    ``categories``: the categories to search (say, chosen by the model); without them the
    query's own (``categorizer``, default the memory's, ``store.memory_manager.categorizer``), else those of
    the best ``probe`` flat hits. ``min_results`` (default ``limit``): fewer scoped hits than
    this triggers the flat fallback. Other keyword arguments go to ``memories.search``
    (``fusion``, ``tags``, ``since``, ``track_access``...).
    """
    if not isinstance(query, str) or not query.strip():
        raise ValueError("search_by_category needs a query (a non-empty string)")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if max_categories < 1 or probe < 1:
        raise ValueError("max_categories and probe must be at least 1")
    for reserved in ("category", "limit", "offset", "ids"):
        if reserved in search:
            raise TypeError(f"search_by_category does not take {reserved!r}; it sets the scope itself")
    wanted = limit if min_results is None else min_results
    common = dict(namespace=namespace, kind=kind, **search)
    chosen_by = "given"
    if categories is None:
        chosen, chosen_by = _query_categories(memories, query, namespace, kind, max_categories, categorizer)
        if not chosen:
            seen = memories.search(query, where=where, limit=probe, **{**common, "track_access": False})
            if seen and seen[0].memory.category:  # the best match is uncategorised: scoping would hide it
                chosen = tuple(dict.fromkeys(h.memory.category for h in seen if h.memory.category))[:max_categories]
            chosen_by = "probe" if chosen else "none"
    else:
        chosen = (categories,) if isinstance(categories, str) else tuple(categories)
        if not all(isinstance(c, str) and c.strip() for c in chosen):
            raise ValueError(f"categories must be non-empty strings, got {categories!r}")
    hits: list[Hit] = list(memories.search(query, category=chosen, where=where, limit=limit, **common)) if chosen else []
    scoped = frozenset(h.id for h in hits)
    if len(hits) < min(wanted, limit):
        fallback = parse_filter(where)
        if scoped:
            exclude = Not(Condition("@id", "$in", sorted(scoped)))
            fallback = exclude if fallback is None else And((exclude, fallback))
        hits.extend(memories.search(query, where=fallback, limit=limit - len(hits), **common))
    return CategorySearch(SearchResults(hits, query=query), chosen, scoped, chosen_by)


def _query_categories(memories: MemoryService, query: str, namespace: Any, kind: Any, limit: int,
                      categorizer: Categorizer | None) -> tuple[tuple[str, ...], str]:
    categorizer = categorizer if categorizer is not None else memories.kernel.categorizer
    known = known_categories(memories, namespace=namespace, kind=kind)
    if not known:
        return (), "none"
    picked = categorizer.for_query(query, known=known, limit=limit)
    return tuple(picked), "query"

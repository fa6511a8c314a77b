"""Hebbian links (seed 002, "Future: Relations (v2)"): memories recalled together link together.

Every tracked search links its top ``links.max_linked_hits`` live hits pairwise, within each
namespace, in one ``executemany`` upsert on the search's own write transaction: a new link
starts at ``links.initial_strength`` (1.0, the seed's default) and each further co-recall
adds ``links.increment`` (1.0), as ``ranking.link_strength_after`` says. ``store.search(..., expand_links=True)`` then appends the
strongly linked neighbours (strength >= ``links.expand_min_strength``) of the hits, within
the search's own scope, each scored

    parent relevance x strength / (strength + links.half_strength) x own feedback x own recency

and marked ``parts.fusion == "link"`` with ``parts.linked_from`` and ``parts.link_strength``.
Links follow the memory ids: they survive archiving and restoring, and go when a memory is
deleted for good (triggers in migration 16).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import TYPE_CHECKING

from ..clock import days_between
from ..index.scope import Scope
from ..memories import Memory, check_namespace
from ..ranking import feedback_weight, link_weight, recency_weight
from ..search import Hit, ScoreParts
from .records import Link
from .repository import LinkRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["LinkGraph", "Link"]


class LinkGraph:
    """``store.links``: co-recall links between memories, and search expansion along them."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = LinkRepository(kernel.backend)

    # -- writing -------------------------------------------------------------------------

    def record(self, memories: Iterable[Memory]) -> int:
        """Link the given memories pairwise as one co-recall (inside the caller's transaction).

        Only the first ``links.max_linked_hits`` live memories count, and only pairs in the
        same namespace. Returns how many pairs were linked or strengthened.
        """
        cfg = self.kernel.config.links
        by_namespace: dict[str, list[str]] = {}
        seen: set[str] = set()
        taken = 0
        for memory in memories:
            if taken >= cfg.max_linked_hits:
                break
            if memory.archived_at is not None or memory.id in seen:
                continue
            seen.add(memory.id)
            taken += 1
            by_namespace.setdefault(memory.namespace, []).append(memory.id)
        pairs = [
            (a, b, namespace)
            for namespace, ids in by_namespace.items()
            for a, b in (sorted(pair) for pair in combinations(ids, 2))
        ]
        if pairs:
            self._repo.strengthen(pairs, initial=cfg.initial_strength, increment=cfg.increment,
                                  now=self.kernel.clock.now())
        return len(pairs)

    def link(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Record a co-recall of these memories by hand (e.g. an agent says they belong together)."""
        with self.kernel.session(write=True):
            return self.record(self.kernel.memories.get_many(list(ids), namespace))

    def unlink(self, a: str, b: str) -> bool:
        """Remove the link between two memories; return whether there was one."""
        first, second = sorted((a, b))
        with self.kernel.session(write=True):
            return self._repo.delete(first, second)

    def erase(self, namespace: str) -> int:
        """Remove every link of a namespace (registered as an eraser for ``erase_namespace``)."""
        return self._repo.erase(namespace)

    # -- reading -------------------------------------------------------------------------

    def strength(self, a: str, b: str) -> float | None:
        """The strength of the link between two memories, or None."""
        first, second = sorted((a, b))
        with self.kernel.session():
            return self._repo.strength(first, second)

    def neighbours(self, memory_id: str, *, min_strength: float = 0.0, limit: int | None = None) -> list[Link]:
        """The memories linked to ``memory_id``, strongest first (archived ones included)."""
        with self.kernel.session():
            links = self._repo.neighbours(memory_id, min_strength)
        return links if limit is None else links[:limit]

    def count(self, namespace: str | None = None) -> int:
        """How many links there are (of one namespace, if given)."""
        if namespace is not None:
            check_namespace(namespace)
        with self.kernel.session():
            return self._repo.count(namespace)

    # -- search expansion ------------------------------------------------------------------

    def expand(self, hits: Sequence[Hit], scope: Scope, *, limit: int | None = None,
               min_strength: float | None = None) -> list[Hit]:
        """Strongly linked neighbours of ``hits`` that are in ``scope`` and not hits already, best first."""
        cfg = self.kernel.config.links
        limit = cfg.expand_limit if limit is None else limit
        threshold = cfg.expand_min_strength if min_strength is None else min_strength
        parents = {h.id: h for h in hits if h.memory.archived_at is None}
        if not parents or limit <= 0:
            return []
        shown = {h.id for h in hits}
        best: dict[str, tuple[float, str, float]] = {}  # neighbour -> (relevance, parent, strength)
        for parent_id, other, strength in self._repo.linked(list(parents), threshold):
            if other in shown:
                continue
            relevance = parents[parent_id].parts.relevance * link_weight(strength, cfg.half_strength)
            if other not in best or relevance > best[other][0]:
                best[other] = (relevance, parent_id, strength)
        if not best:
            return []
        found = self._in_scope(list(best), scope)
        now = self.kernel.clock.now()
        ranking = self.kernel.config.ranking
        out: list[Hit] = []
        for memory in found:
            relevance, parent_id, strength = best[memory.id]
            days = days_between(memory.last_hit_at or memory.created_at, now)
            fw = feedback_weight(memory.score, ranking.score_weight)
            rw = recency_weight(days, ranking.recency_rate)
            parts = ScoreParts(bm25=None, keyword=0.0, similarity=None, vector=0.0, relevance=relevance, feedback=fw,
                               recency=rw, days_since_hit=days, fusion="link", linked_from=parent_id,
                               link_strength=strength)
            out.append(Hit(memory, relevance * fw * rw, parts))
        out.sort(key=lambda h: (-h.score, h.memory.rowid))
        return out[:limit]

    def _in_scope(self, ids: list[str], scope: Scope) -> list[Memory]:
        """The memories of ``ids`` that ``scope`` admits (within the ids it names, if it names any)."""
        admitted = set(scope.ids) if scope.ids is not None else None
        out: list[Memory] = []
        for start in range(0, len(ids), 400):
            part = tuple(i for i in ids[start : start + 400] if admitted is None or i in admitted)
            if part:
                out.extend(self.kernel.memories.select(dataclasses.replace(scope, ids=part)))
        return out


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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import TYPE_CHECKING

from ..clock import days_between, from_iso, to_iso
from ..index.scope import Scope
from ..memories import COLUMNS, Memory, check_namespace
from ..ranking import feedback_weight, link_weight, recency_weight
from ..search import Hit, ScoreParts

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["LinkGraph", "Link"]

_UPSERT = (
    "INSERT INTO memory_links (memory_id, related_id, namespace, strength, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(memory_id, related_id) DO UPDATE SET "
    "strength = memory_links.strength + ?, updated_at = excluded.updated_at"
)


@dataclass(frozen=True)
class Link:
    """A link seen from ``memory_id``: ``other`` is the linked memory."""

    memory_id: str
    other: str
    namespace: str
    strength: float
    created_at: datetime | None
    updated_at: datetime | None


class LinkGraph:
    """``store.links``: co-recall links between memories, and search expansion along them."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

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
        now = to_iso(self.kernel.clock.now())
        rows = [
            (a, b, namespace, cfg.initial_strength, now, now, cfg.increment)
            for namespace, ids in by_namespace.items()
            for a, b in (tuple(sorted(pair)) for pair in combinations(ids, 2))
        ]
        if rows:
            self.kernel.backend.executemany(_UPSERT, rows)
        return len(rows)

    def link(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Record a co-recall of these memories by hand (e.g. an agent says they belong together)."""
        with self.kernel.session(write=True):
            return self.record(self.kernel.memories.get_many(list(ids), namespace))

    def unlink(self, a: str, b: str) -> bool:
        """Remove the link between two memories; return whether there was one."""
        first, second = sorted((a, b))
        with self.kernel.session(write=True) as db:
            cursor = db.execute("DELETE FROM memory_links WHERE memory_id = ? AND related_id = ?", (first, second))
            return bool(cursor.rowcount)

    def erase(self, namespace: str) -> int:
        """Remove every link of a namespace (registered as an eraser for ``erase_namespace``)."""
        cursor = self.kernel.backend.execute("DELETE FROM memory_links WHERE namespace = ?", (namespace,))
        return int(cursor.rowcount or 0)

    # -- reading -------------------------------------------------------------------------

    def strength(self, a: str, b: str) -> float | None:
        """The strength of the link between two memories, or None."""
        first, second = sorted((a, b))
        with self.kernel.session() as db:
            value = db.scalar(
                "SELECT strength FROM memory_links WHERE memory_id = ? AND related_id = ?", (first, second))
            return None if value is None else float(value)

    def neighbours(self, memory_id: str, *, min_strength: float = 0.0, limit: int | None = None) -> list[Link]:
        """The memories linked to ``memory_id``, strongest first (archived ones included)."""
        with self.kernel.session() as db:
            rows = db.query(
                "SELECT memory_id, related_id, namespace, strength, created_at, updated_at FROM memory_links "
                "WHERE memory_id = ? AND strength >= ? UNION ALL "
                "SELECT related_id, memory_id, namespace, strength, created_at, updated_at FROM memory_links "
                "WHERE related_id = ? AND strength >= ? ORDER BY 4 DESC, 2",
                (memory_id, min_strength, memory_id, min_strength),
            )
        links = [Link(r[0], r[1], r[2], float(r[3]), from_iso(r[4]), from_iso(r[5])) for r in rows]
        return links if limit is None else links[:limit]

    def count(self, namespace: str | None = None) -> int:
        with self.kernel.session() as db:
            if namespace is None:
                return int(db.scalar("SELECT count(*) FROM memory_links") or 0)
            check_namespace(namespace)
            return int(db.scalar("SELECT count(*) FROM memory_links WHERE namespace = ?", (namespace,)) or 0)

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
        ids = list(parents)
        for start in range(0, len(ids), 400):
            part = ids[start : start + 400]
            marks = ", ".join("?" for _ in part)
            rows = self.kernel.backend.query(
                f"SELECT memory_id, related_id, strength FROM memory_links WHERE memory_id IN ({marks}) AND strength >= ? "
                f"UNION ALL SELECT related_id, memory_id, strength FROM memory_links "
                f"WHERE related_id IN ({marks}) AND strength >= ?",
                (*part, threshold, *part, threshold),
            )
            for parent_id, other, strength in rows:
                if other in shown:
                    continue
                relevance = parents[parent_id].parts.relevance * link_weight(float(strength), cfg.half_strength)
                if other not in best or relevance > best[other][0]:
                    best[other] = (relevance, parent_id, float(strength))
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
        db = self.kernel.backend
        sql, params = scope.sql("c", db.capabilities.sql_flavour)
        out: list[Memory] = []
        for start in range(0, len(ids), 400):
            part = ids[start : start + 400]
            rows = db.query(
                f"SELECT {', '.join('c.' + c for c in COLUMNS)} FROM memory_chunks c "
                f"WHERE c.id IN ({', '.join('?' for _ in part)}) AND {sql}",
                (*part, *params),
            )
            out.extend(Memory.from_row(r) for r in rows)
        return out


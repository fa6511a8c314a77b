"""Semantic facts (seed 001): history and BRE search. The write rule that versions facts on
``store.add`` is :mod:`shared_core.memories.versioning`.

A superseded fact keeps its text; ``valid_to`` is set to the moment it stopped being current
and ``superseded_by`` to the new fact's id (its metadata gets ``superseded_reason``: explicit,
changed, rule, update or delete). Default search leaves it out (``include_superseded=True`` brings it
back), and ``store.history(id)`` lists the whole chain, oldest first.

**BRE scoring.** Seed 001 ranks facts by "dot product with a magnitude penalty" and gives no
formula; ours is :func:`shared_core.ranking.bre_score`:
``confidence x cos(q, f) / sqrt(words in f) ** penalty`` (penalty 0.2), i.e. the dot product of
the query with the fact's raw bag-of-words vector divided by that vector's magnitude to the
power ``1 + penalty``. Use it with ``store.facts.search(query, scoring="bre")``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..embed import profile_of
from ..errors import NotFoundError
from ..ranking import bre_magnitude, bre_score
from ..search import Hit, SearchResults
from .records import DEFAULT_NAMESPACE, Memory
from .service import MemoryService

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Facts", "SCORINGS"]

SCORINGS = ("bre", "hybrid")
_WORD = re.compile(r"[\w'\u2019]+")


class Facts:
    """``store.facts``: history and BRE search of facts."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def history(self, memory_id: str) -> list[Memory]:
        """Every version linked to ``memory_id`` through ``superseded_by``, oldest first
        (archived versions included, with ``archived_at`` set)."""
        kernel = self.kernel
        with kernel.session():
            start = self._any(memory_id)
            if start is None:
                raise NotFoundError(f"no memory with id {memory_id!r}")
            seen = {start.id: start}
            todo = [start]
            while todo:
                memory = todo.pop()
                linked = [self._any(memory.superseded_by)] if memory.superseded_by else []
                for older in [*kernel.memories.superseded_by(memory.id), *kernel.archive.superseded_by(memory.id)]:
                    linked.append(self._any(older))
                for other in linked:
                    if other is not None and other.id not in seen:
                        seen[other.id] = other
                        todo.append(other)
        # chain order (each version before the one that superseded it), then time for parallel branches
        pending = {m.id: 0 for m in seen.values()}
        for memory in seen.values():
            if memory.superseded_by in pending:
                pending[memory.superseded_by] += 1
        order: list[Memory] = []
        ready = [m for m in seen.values() if pending[m.id] == 0]
        while ready:
            ready.sort(key=lambda m: (_ts(m.valid_from or m.created_at), _ts(m.created_at), m.id))
            memory = ready.pop(0)
            order.append(memory)
            successor = memory.superseded_by
            if successor in pending:
                pending[successor] -= 1
                if pending[successor] == 0:
                    ready.append(seen[successor])
        placed = {m.id for m in order}  # links that loop (never made by this library) keep time order
        order += sorted((m for m in seen.values() if m.id not in placed),
                        key=lambda m: (_ts(m.valid_from or m.created_at), m.id))
        return order

    def _any(self, memory_id: str | None) -> Memory | None:
        if not memory_id:
            return None
        return self.kernel.memories.get_row(memory_id) or self.kernel.archive.get(memory_id)

    def search(
        self,
        query: str,
        *,
        scoring: str = "bre",
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        category: str | Sequence[str] | None = None,
        where: Any = None,
        limit: int = 10,
        min_similarity: float | None = None,
        include_superseded: bool = False,
    ) -> SearchResults:
        """Facts for ``query``. ``scoring="bre"`` (seed 001): vector candidates above the noise
        floor (``min_similarity``, default the embedder's), scored by :func:`ranking.bre_score`;
        ``"hybrid"``: the core search."""
        if scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")
        kernel, memories = self.kernel, self.kernel.service(MemoryService)
        if scoring == "hybrid":
            return memories.search(query, kind="fact", namespace=namespace, category=category, where=where, limit=limit,
                                include_superseded=include_superseded)
        pool = max(kernel.config.search.candidates, limit * 5)
        hits = memories.search(query, kind="fact", namespace=namespace, category=category, where=where, limit=pool,
                            fusion="vector", include_superseded=include_superseded, track_access=False)
        floor = min_similarity
        if floor is None:
            floor = kernel.config.search.similarity_floor
            if floor < 0:
                floor = profile_of(kernel.embedder).similarity_floor
        penalty = kernel.config.ranking.bre_magnitude_penalty
        scored: list[Hit] = []
        for hit in hits:
            similarity = hit.parts.similarity
            if similarity is None or similarity <= floor:
                continue
            confidence = 1.0 if hit.memory.confidence is None else hit.memory.confidence
            value = bre_score(similarity, bre_magnitude(len(_WORD.findall(hit.text))), confidence, penalty)
            parts = dataclasses.replace(hit.parts, relevance=value, feedback=1.0, recency=1.0, fusion="bre")
            scored.append(Hit(hit.memory, value, parts))
        scored.sort(key=lambda h: (-h.score, h.memory.rowid))
        results = SearchResults(scored[:limit], query=query)
        if results and kernel.config.search.track_access and not kernel.backend.read_only:
            with kernel.session():
                kernel.memories.note_access([h.memory.rowid for h in results])
        return results


def _ts(when: Any) -> float:
    return when.timestamp() if when is not None else 0.0

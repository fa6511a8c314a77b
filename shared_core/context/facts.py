"""The facts of conversations: how extracted facts and summaries are stored, and which facts a
prompt is shown (seed 004's three-tier recall, salient facts, known facts).

Shared by :class:`~shared_core.context.MemoryManager`, the :class:`~shared_core.context.ContextManager`
it makes and the prompt addendum (:mod:`.addendum`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ..category_search import CategorySearch, search_by_category
from ..clock import days_between
from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, Memory
from ..memories.service import MemoryService
from ..ranking import is_salient, salience, standing
from ..workspace import Workspace
from .corrections import corrected_fact
from .records import ExtractedFact
from .repository import ContextRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["ConversationFacts", "StoredFact", "SalientFact", "kinds_of", "stamp"]


@dataclass(frozen=True)
class StoredFact:
    """A fact as stored: its id, text and category, and what the store did (created, reinforced, superseded)."""

    id: str
    text: str
    event: str
    category: str | None = None
    rule: str = "model"
    correction: bool = False
    supersedes: str | None = None


@dataclass(frozen=True)
class SalientFact:
    """A fact with its salience (seed 004; :func:`shared_core.ranking.salience`), or for
    :meth:`ConversationFacts.known_facts` its standing (:func:`shared_core.ranking.standing`)."""

    memory: Memory
    salience: float


class ConversationFacts:
    """Facts stored from conversations and facts shown to prompts, over one memory; ``repository``
    remembers which messages were read and what was compacted."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.repository = ContextRepository(kernel.backend)

    def store_facts(
        self,
        facts: Sequence[ExtractedFact | str],
        *,
        namespace: str = DEFAULT_NAMESPACE,
        session_id: str | None = None,
        workspace: Workspace | None = None,
        method: str = "rules",
        source: str = "extraction",
    ) -> list[StoredFact]:
        """Store facts through the core's fact add (dedup, versioning, auto-category), then MEMORY.md.

        Each fact is ``store.add(text, source=..., session_id=...)``: ``source`` for the user's
        statements (default ``extraction``), ``tool_result`` for a tool's, ``agent_observation``
        for the assistant's. A fact that corrects a current fact of the namespace (a negation of
        it, or a correction or change of the same thing: :mod:`.corrections`) supersedes it, so
        the old one leaves search and the prompt (``store.history`` keeps both). A fact already
        known comes back ``reinforced`` (a tool or the assistant repeating it changes nothing).
        With a ``workspace``, new facts are appended to ``MEMORY.md`` and corrections to
        ``learnings/corrections.md``.
        """
        kernel, memories = self.kernel, self.kernel.service(MemoryService)
        stored: list[StoredFact] = []
        for fact in facts:
            item = fact if isinstance(fact, ExtractedFact) else ExtractedFact(str(fact), "given")
            metadata: dict[str, Any] = {"extracted_by": method, "rule": item.rule}
            if item.correction:
                metadata["correction"] = True
            if item.replaces:
                metadata["replaces"] = item.replaces
            origin = _SOURCES.get(item.origin, source)
            current = memories.list(namespace=namespace, kind="fact", order_by="created_at", descending=True,
                                    limit=500)
            if item.origin != "user" and _known(item.text, current):
                continue  # an echo of what memory holds is no new evidence: not even a reinforcement
            old = corrected_fact(item, current)
            result = self._add_fact(item.text, namespace, origin, session_id, metadata, old)
            memory = memories.get(result.id)
            stored.append(StoredFact(memory.id, memory.text, result.event, memory.category, item.rule,
                                     item.correction or old is not None, getattr(result, "supersedes", None)))
        if workspace is not None and stored:
            fresh = [f.text for f in stored if f.event != "reinforced"]
            label = f"From session {session_id}" if session_id else "Facts"
            workspace.append_memory(fresh, heading=f"{label} ({kernel.clock.now():%Y-%m-%d})")
            for saved in stored:
                if saved.correction:
                    workspace.add_learnings_entry("learnings/corrections.md", stamp(kernel),
                                                  [("correction", saved.text)])
        return stored

    def _add_fact(self, text: str, namespace: str, source: str, session_id: str | None, metadata: dict[str, Any],
                  old: Memory | None) -> Any:
        """``store.add``, as the new version of ``old`` when there is one (unless another writer replaced it first)."""
        memories = self.kernel.service(MemoryService)
        if old is not None:
            try:
                return memories.add(text, namespace=namespace, source=source, session_id=session_id,
                                    metadata={**metadata, "correction": True}, supersedes=old.id)
            except (NotFoundError, ValueError):  # superseded or deleted meanwhile: an ordinary add decides
                pass
        return memories.add(text, namespace=namespace, source=source, session_id=session_id, metadata=metadata)

    def store_summary(self, text: str, *, id: str, namespace: str, session_id: str | None,  # noqa: A002
                      summary_type: str, message_count: int, method: str, policy: str | None = None) -> str:
        """Store a conversation summary: a kind ``summary`` memory linked to the session (seed 002)."""
        metadata = {"summary_type": summary_type, "message_count": message_count, "method": method}
        if policy:
            metadata["policy"] = policy
        return str(self.kernel.service(MemoryService).add(
            text, id=id, kind="summary", namespace=namespace, session_id=session_id, source="conversation",
            metadata=metadata, dedup=False))

    def recall_facts(self, query: str, *, namespace: str = DEFAULT_NAMESPACE, categories: Sequence[str] | str | None = None,
                     limit: int | None = None, track_access: bool = True,
                     kinds: Sequence[str] = ("fact",)) -> CategorySearch:
        """Seed 004's ``memory_recall``: facts in the query's categories first, then a flat fallback.

        ``kinds``: the memory kinds searched (facts; add others, such as ``langgraph_item``, to
        recall them the same way)."""
        cfg = self.kernel.config.context
        limit = cfg.relevant_facts if limit is None else limit
        return search_by_category(self.kernel.service(MemoryService), query, categories=categories, namespace=namespace, limit=limit,
                                  kind=list(kinds_of(kinds)), min_results=min(cfg.category_min_results, limit),
                                  max_categories=cfg.max_query_categories, categorizer=self.kernel.categorizer,
                                  track_access=track_access)

    def salient_facts(self, namespace: str = DEFAULT_NAMESPACE, *, limit: int | None = None,
                      candidates: int = 200) -> list[SalientFact]:
        """Facts at or above ``context.salience_threshold``, most salient first; pinned facts always.

        Reading them does not count as an access (that would keep them salient for ever).
        """
        kernel, memories = self.kernel, self.kernel.service(MemoryService)
        cfg = kernel.config.context
        limit = cfg.salient_facts if limit is None else limit
        if limit <= 0:
            return []
        now = kernel.clock.now()
        pool = {m.id: m for m in memories.list(namespace=namespace, kind="fact", order_by="access_count",
                                               descending=True, limit=candidates)}
        pool.update({m.id: m for m in memories.list(namespace=namespace, kind="fact", where={"@pinned": 1},
                                                    limit=candidates)})
        out = []
        weight = kernel.config.ranking.score_weight
        for memory in pool.values():
            last = max((t for t in (memory.last_access_at, memory.last_hit_at, memory.created_at) if t is not None),
                       default=now)
            value = salience(memory.access_count, days_between(last, now), memory.score,
                             half_life_days=cfg.salience_half_life_days, score_weight=weight)
            if memory.pinned or is_salient(value, cfg.salience_threshold):
                out.append(SalientFact(memory, value))
        out.sort(key=lambda s: (not s.memory.pinned, -s.salience, s.memory.id))
        return out[:limit]

    def known_facts(self, namespace: str = DEFAULT_NAMESPACE, *, limit: int | None = None,
                    kinds: Sequence[str] = ("fact",), exclude: Collection[str] = ()) -> list[SalientFact]:
        """The namespace's current facts that most belong in every prompt, best first (no threshold).

        Pinned facts first, then by :func:`shared_core.ranking.standing` (importance, accesses,
        feedback, recency); superseded and expired facts never. ``kinds``: also memories of these
        kinds (``("fact", "langgraph_item")``). ``exclude``: ids already shown elsewhere. Reading
        them is not an access.
        """
        kernel, memories = self.kernel, self.kernel.service(MemoryService)
        limit = kernel.config.context.known_facts if limit is None else limit
        if limit <= 0:
            return []
        kind = list(kinds_of(kinds))
        now = kernel.clock.now()
        pool: dict[str, Memory] = {}
        wide = max(50, 5 * limit)
        for order_by, where in (("access_count", None), ("created_at", None), ("score", None),
                                ("created_at", {"@pinned": 1}), ("created_at", {"@importance": {"$gte": 0.7}})):
            for memory in memories.list(namespace=namespace, kind=kind, order_by=order_by, descending=True,
                                        where=where, limit=wide):
                if memory.id not in exclude:
                    pool[memory.id] = memory
        ranking = kernel.config.ranking
        out = []
        for memory in pool.values():
            last = max((t for t in (memory.last_access_at, memory.last_hit_at, memory.created_at) if t is not None),
                       default=now)
            out.append(SalientFact(memory, standing(memory.access_count, days_between(last, now), memory.score,
                                                    memory.importance, score_weight=ranking.score_weight,
                                                    recency_rate=ranking.recency_rate)))
        out.sort(key=lambda s: (not s.memory.pinned, -s.salience, s.memory.id))
        return out[:limit]


def kinds_of(kinds: Sequence[str]) -> tuple[str, ...]:
    """Memory kinds as given (a string is one kind), checked: non-empty strings, each once."""
    chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not chosen or not all(isinstance(k, str) and k.strip() for k in chosen):
        raise ValueError(f"kinds must be one or more memory kinds such as 'fact' or 'langgraph_item', got {kinds!r}")
    return tuple(dict.fromkeys(chosen))


_SOURCES = {"tool": "tool_result", "assistant": "agent_observation"}  # a user's statement keeps the caller's source


def _known(text: str, current: Sequence[Memory]) -> bool:
    said = " ".join(text.split()).casefold().rstrip(" .!")
    return any(" ".join(m.text.split()).casefold().rstrip(" .!") == said for m in current)


def stamp(kernel: Kernel) -> str:
    """Now, as learnings-file headings show it: ``2026-03-02 09:30 UTC`` in ``workspace.timezone``."""
    tz = kernel.config.workspace.timezone
    return f"{kernel.clock.now().astimezone(ZoneInfo(tz)):%Y-%m-%d %H:%M} {tz}"

"""The search of ``store.conversations``: seed 003's query flow over messages, with memory
summaries merged in when too few messages match."""

from __future__ import annotations

from datetime import datetime

from ..embed import profile_of
from ..index.sanitize import query_terms
from ..memories import DEFAULT_NAMESPACE
from ..memories.service import MemoryService
from ..validation import time_or_none
from .base import ConversationsBase
from .records import MessageHit, MessageResults, session_id_arg

__all__ = ["SearchMethods"]


class SearchMethods(ConversationsBase):
    """Message search through the core's hybrid search."""

    def search(
        self,
        query: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        session_id: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        min_raw_results: int | None = None,
        include_summaries: bool = True,
        track_access: bool = True,
    ) -> MessageResults:
        """Search messages the way seed 003 does, through the core's hybrid search.

        1. Up to ``limit x forgetting.scan_limit_factor`` (10) message chunks are fetched;
           a hit stays when its keywords matched or its vector similarity reaches
           ``threshold`` (``forgetting.vector_threshold``; < 0 takes the embedder's own,
           0.7 for sentence models as in the seed, 0.35 for the hashing embedder).
        2. When fewer than ``min_raw_results`` (``forgetting.min_raw_results_without_fallback``,
           3) remain, memory summaries whose keywords contain a query word, within the time
           range, are merged in and everything is sorted newest first (seed 003).
        Returned messages count as accessed (seed 003), unless ``track_access=False``.
        """
        cfg = self.kernel.config.forgetting
        limit = self.kernel.config.search.default_limit if limit is None else limit
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive whole number, got {limit!r}")
        if threshold is None:
            threshold = self.search_threshold
        minimum = cfg.min_raw_results_without_fallback if min_raw_results is None else min_raw_results
        where = {"@session_id": session_id_arg(session_id)} if session_id is not None else None
        hits = self.kernel.service(MemoryService).search(
            query, namespace=namespace, kind="message", where=where, since=since, until=until,
            limit=limit * cfg.scan_limit_factor, track_access=False,
        )
        kept = hits.matching(threshold)[:limit]
        with self.kernel.session() as db:
            found = self._repo.messages_by_ids([h.memory.owner_id for h in kept if h.memory.owner_id])
            results: list[MessageHit] = []
            for h in kept:
                message = found.get(h.memory.owner_id) if h.memory.owner_id else None
                if message is not None:
                    assert message.sent_at is not None  # a stored message always has its time
                    results.append(MessageHit("message", h.score, message.sent_at, message=message,
                                              similarity=h.parts.similarity,
                                              keyword_match=(h.parts.bm25 or 0.0) > 0.0))
            fallback = False
            if include_summaries and len(results) < minimum:
                terms = query_terms(query)
                summaries = self._repo.summaries(
                    namespace, since=time_or_none(since, "since"), until=time_or_none(until, "until"), terms=terms,
                    session_id=session_id_arg(session_id) if session_id is not None else None, limit=limit,
                ) if terms else []
                if summaries:
                    fallback = True
                    results += [MessageHit("summary", s.quality_score, s.end_timestamp, summary=s) for s in summaries]
                    results.sort(key=lambda h: h.timestamp, reverse=True)
            if track_access and not db.read_only:
                tracked = [h.message for h in results if h.message is not None]
                if tracked:
                    with db.transaction():
                        self._track(tracked)
            return MessageResults(results, query=query, fallback_used=fallback)

    @property
    def search_threshold(self) -> float:
        """The vector similarity a message needs in :meth:`search`: ``forgetting.vector_threshold``, or
        when that is below 0 the embedder's own (``EmbedderProfile.kb_threshold``: 0.7 for sentence
        models, seed 003's value; 0.35 for the hashing embedder, whose similarities run lower)."""
        configured = self.kernel.config.forgetting.vector_threshold
        return configured if configured >= 0 else profile_of(self.kernel.embedder).kb_threshold

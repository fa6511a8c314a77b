"""Episodic memory (seed 001): timestamped summaries of past interactions, by channel.

An episode is a row of ``episodic_memory`` and a memory of kind ``"episode"`` with the same
id, dated at the episode (so the core's ``since``/``until`` filters and recency work on
when it happened) and tagged with its channel. Searches rank by the core's score times
``(1 - 0.5 + 0.5 x importance)`` (``ranking.episode_importance_weight``); time-range
queries read the table directly. Every query takes an optional ``channel``; without one
it spans all channels, so the agent can recall what happened elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..clock import from_iso, to_iso
from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, NewMemory, check_namespace, new_id
from ..memories.service import MemoryService
from ..ranking import episode_score
from ..validation import time_or_none
from .records import Episode, EpisodeMatch
from .repository import EpisodeRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Episodes"]


class Episodes:
    """``store.episodes``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = EpisodeRepository(kernel.backend)

    def add(
        self,
        summary: str,
        *,
        at: datetime | str | None = None,
        channel: str | None = None,
        importance: float = 0.5,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Episode:
        """Record an episode that happened ``at`` (default now) on ``channel``, importance 0..1."""
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0.0 <= importance <= 1.0:
            raise ValueError(f"importance must be a number between 0 and 1, got {importance!r}")
        if channel is not None and (not isinstance(channel, str) or not channel.strip()):
            raise ValueError(f"channel must be a non-empty string or None, got {channel!r}")
        now = self.kernel.clock.now()
        episode_id = new_id()
        (item,) = self.kernel.memories.prepare([NewMemory(
            text=summary, id=episode_id, kind="episode", namespace=namespace, tags=[channel] if channel else [],
            source=channel or "episode", importance=float(importance), session_id=session_id, owner_id=episode_id,
            created_at=at if at is not None else now, metadata={**dict(metadata or {}), "channel": channel},
        )])
        occurred = from_iso(to_iso(item.created_at))
        assert occurred is not None  # prepare dates every memory
        episode = Episode(id=episode_id, summary=item.text, occurred_at=occurred, channel=channel,
                          importance=float(importance), namespace=item.namespace, session_id=session_id,
                          metadata=dict(metadata or {}), created_at=now)
        with self.kernel.session(write=True):
            self._repo.insert(episode)
            self.kernel.memories.write(item, dedup=False)
        return self.get(episode_id)

    def get(self, episode_id: str) -> Episode:
        with self.kernel.session():
            episode = self._repo.get(episode_id)
        if episode is None:
            raise NotFoundError(f"no episode with id {episode_id!r}")
        return episode

    def between(
        self,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        *,
        channel: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        limit: int | None = None,
    ) -> list[Episode]:
        """Episodes with ``since <= occurred_at < until`` (either end open), oldest first."""
        check_namespace(namespace)
        start, end = time_or_none(since, "since"), time_or_none(until, "until")
        if start is not None and end is not None and end < start:
            raise ValueError(f"until ({to_iso(end)}) is before since ({to_iso(start)})")
        with self.kernel.session():
            return self._repo.between(namespace, start, end, channel, limit)

    def recent(self, limit: int = 10, *, channel: str | None = None, namespace: str = DEFAULT_NAMESPACE) -> list[Episode]:
        """The latest episodes, newest first."""
        check_namespace(namespace)
        with self.kernel.session():
            return self._repo.recent(namespace, channel, limit)

    def search(
        self,
        query: str,
        *,
        channel: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        limit: int = 10,
    ) -> list[EpisodeMatch]:
        """Episodes matching ``query`` (hybrid search), ranked with their importance."""
        where = {"channel": channel} if channel is not None else None
        hits = self.kernel.service(MemoryService).search(
            query, kind="episode", namespace=namespace, since=since, until=until, where=where,
            limit=max(limit * 3, 10), track_access=False)
        if not hits:
            return []
        with self.kernel.session():
            rows = {e.id: e for e in self._repo.by_ids(hits.ids)}
        weight = self.kernel.config.ranking.episode_importance_weight
        matches = [EpisodeMatch(rows[h.id], episode_score(h.score, rows[h.id].importance, weight), h.score)
                   for h in hits if h.id in rows]
        matches.sort(key=lambda m: (-m.score, -m.episode.occurred_at.timestamp()))
        return matches[:limit]

    def delete(self, episode_id: str) -> None:
        episode = self.get(episode_id)
        with self.kernel.session(write=True):
            self._repo.delete(episode.id)
            self.kernel.service(MemoryService).delete(episode.id, missing_ok=True)

    def erase(self, namespace: str) -> None:
        """Remove the namespace's rows (``erase_namespace``; its index memories go with the core's)."""
        self._repo.erase(namespace)

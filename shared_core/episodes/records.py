"""The records of episodic memory: an episode, and an episode found by a search."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..memories import DEFAULT_NAMESPACE

__all__ = ["Episode", "EpisodeMatch"]


@dataclass(frozen=True)
class Episode:
    id: str
    summary: str
    occurred_at: datetime
    channel: str | None = None
    importance: float = 0.5
    namespace: str = DEFAULT_NAMESPACE
    session_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass(frozen=True)
class EpisodeMatch:
    episode: Episode
    score: float  # relevance x importance factor
    relevance: float  # the core search's score

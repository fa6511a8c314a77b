"""Usage records: events, the patterns mined from them, and what mining and the summary report."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..memories import DEFAULT_NAMESPACE, Memory

__all__ = ["UsageEvent", "UsagePattern", "UsageSummary", "MemoryUsage", "MiningReport", "PATTERN_STATUSES"]

PATTERN_STATUSES = ("detected", "proposed", "dismissed", "lapsed")


@dataclass(frozen=True)
class UsageEvent:
    id: str
    event_type: str
    timestamp: datetime
    day: str
    hour: int
    day_of_week: int
    channel: str | None = None
    description: str | None = None
    category: str | None = None
    skills: tuple[str, ...] = ()
    score: float | None = None
    namespace: str = DEFAULT_NAMESPACE


@dataclass(frozen=True)
class UsagePattern:
    id: str
    pattern_type: str  # recurring_time | skill_combination
    description: str
    frequency: str | None
    trigger: dict[str, Any]
    confidence: float
    sample_count: int
    first_seen: datetime
    last_seen: datetime
    proposed_skill: str | None = None  # path of the proposed SKILL.md, relative to the skills directory
    status: str = "detected"
    namespace: str = DEFAULT_NAMESPACE


@dataclass
class MiningReport:
    """What :meth:`Usage.mine` did; mining twice in a row reports no changes the second time."""

    events: int = 0
    patterns: list[UsagePattern] = field(default_factory=list)  # qualifying now
    new: int = 0
    changed: int = 0
    lapsed: int = 0
    proposed: list[str] = field(default_factory=list)  # SKILL.md paths written


@dataclass(frozen=True)
class MemoryUsage:
    """How a namespace's memories were used: counts by kind, accesses and feedback (see :class:`UsageSummary`)."""

    by_kind: dict[str, int]
    accesses: int
    accessed: int
    reinforced: int
    demoted: int
    most_accessed: list[Memory]


@dataclass(frozen=True)
class UsageSummary:
    """Seed 003's usage analytics for one namespace: how often what is remembered gets used.

    ``accesses`` sums every memory's ``access_count`` (returned by a search or a lookup, seed
    003); ``reinforced``/``demoted`` count memories whose feedback score is above/below zero
    (seed 002); ``events`` are the seed-000 usage events by type.
    """

    namespace: str
    memories: int
    by_kind: dict[str, int]
    accesses: int
    accessed: int  # memories returned at least once
    reinforced: int
    demoted: int
    most_accessed: list[Memory]
    events: int
    events_by_type: dict[str, int]
    patterns: int

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "most_accessed"}
        out["most_accessed"] = [m.to_dict() for m in self.most_accessed]
        return out

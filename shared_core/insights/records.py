"""Insight records (seed 003): what is stored, what is scored, what extraction produces."""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..config import IMPORTANCE_LEVELS, URGENCY_LEVELS
from ..ranking import InsightValue

__all__ = [
    "IMPORTANCE_LEVELS",
    "URGENCY_LEVELS",
    "InsightData",
    "Insight",
    "InsightWeights",
    "AccessCounts",
    "RankedInsight",
    "InsightHit",
    "ExtractionResult",
    "insight_id",
    "dedupe_key_for",
]


# UUID5 namespace of insight ids: uuid5(NAMESPACE_URL, "https://github.com/openkoi/openkoi-memory/insights")
_ID_NAMESPACE = uuid.UUID("c50accb7-3b85-50d5-bb50-6d4a7c4b5a6c")


def insight_id(namespace: str, bot_id: str, dedupe_key: str) -> str:
    """The deterministic id of an insight: a UUID5 of (namespace, bot id, dedupe key).

    Seed 003 derives the id from the bot id and the dedupe key; the namespace is part of the
    name too, so two users' insights never share a row (and their per-user weights stay apart).
    """
    return str(uuid.uuid5(_ID_NAMESPACE, "\x1f".join((namespace, bot_id, dedupe_key))))


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def dedupe_key_for(title: str) -> str:
    """A dedupe key from a title: its lowercased words joined by ``-`` (at most 120 characters)."""
    words = _WORD.findall(title.casefold())
    return "-".join(words)[:120] or "untitled"


@dataclass
class InsightData:
    """An insight to upsert: the fields a caller or an extractor provides (seed 003 ``InsightData``).

    ``details`` are event-level records (dicts; strings become ``{"text": ...}``);
    ``timeline`` holds chronological events (``{"at": ..., "event": ...}``). Without a
    ``dedupe_key`` the title's words are used.
    """

    title: str
    description: str = ""
    importance: str = "medium"
    urgency: str = "medium"
    details: Sequence[Any] = ()
    timeline: Sequence[Any] = ()
    task_label: str | None = None
    dedupe_key: str | None = None
    platform: str | None = None
    channel: str | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> InsightData:
        """From a dict with these field names (``taskLabel``/``dedupeKey`` camelCase accepted too)."""
        aliases = {"taskLabel": "task_label", "dedupeKey": "dedupe_key", "label": "task_label"}
        values = {aliases.get(k, k): v for k, v in data.items()}
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown insight fields {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}")
        if "title" not in values:
            raise ValueError("an insight needs a title")
        return cls(**values)


@dataclass
class Insight:
    """A stored insight. ``custom_weight`` is the seed's ``customWeightMultiplier``."""

    id: str
    namespace: str
    bot_id: str
    dedupe_key: str
    title: str
    description: str
    importance: str
    urgency: str
    details: list[dict[str, Any]] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    task_label: str | None = None
    platform: str | None = None
    channel: str | None = None
    favorite: bool = False
    favorited_at: datetime | None = None
    custom_weight: float = 1.0
    view_boosted_at: datetime | None = None
    last_access_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    COLUMNS = (
        "id", "namespace", "bot_id", "dedupe_key", "title", "description", "importance", "urgency", "details",
        "timeline", "task_label", "platform", "channel", "favorite", "favorited_at", "custom_weight",
        "view_boosted_at", "last_access_at", "created_at", "updated_at",
    )

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Insight:
        v = dict(zip(cls.COLUMNS, row, strict=True))
        return cls(
            id=v["id"], namespace=v["namespace"], bot_id=v["bot_id"], dedupe_key=v["dedupe_key"], title=v["title"],
            description=v["description"], importance=v["importance"], urgency=v["urgency"],
            details=json.loads(v["details"] or "[]"), timeline=json.loads(v["timeline"] or "[]"),
            task_label=v["task_label"], platform=v["platform"], channel=v["channel"], favorite=bool(v["favorite"]),
            favorited_at=from_iso(v["favorited_at"]), custom_weight=float(v["custom_weight"]),
            view_boosted_at=from_iso(v["view_boosted_at"]), last_access_at=from_iso(v["last_access_at"]),
            created_at=from_iso(v["created_at"]), updated_at=from_iso(v["updated_at"]),
        )

    @property
    def text(self) -> str:
        """What goes into the search index: the title and the description."""
        return self.title if not self.description or self.description == self.title else f"{self.title}\n{self.description}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, datetime):
                out[key] = to_iso(value)
        return out


@dataclass(frozen=True)
class AccessCounts:
    """An insight's logged accesses in the windows its score reads."""

    frequency: int = 0  # within insights.frequency_window_days (30)
    last_7d: int = 0
    previous_7d: int = 0
    active: int = 0  # within insights.active_window_days (30)


@dataclass(frozen=True)
class InsightWeights:
    """Seed 003's per-user ``insightWeights`` at one moment, with what they are made of.

    ``access_count_30d``/``access_count_7d``: accesses in the last 30 / 7 days (seed names
    ``accessCount30d``/``accessCount7d``); ``previous_7d``: the 7 days before that (for the
    trend); ``current_event_rank``: 1-based position in the namespace's ranking
    (``currentEventRank``); ``custom_weight_multiplier``: the user's multiplier; ``weight``:
    that multiplier after inactivity decay and the active boosts.
    """

    access_count_30d: int
    access_count_7d: int
    previous_7d: int
    current_event_rank: int | None
    custom_weight_multiplier: float
    weight: float
    decay_factor: float
    days_inactive: float
    favorite_boost_active: bool
    view_boost_active: bool
    trend: str
    active: bool

    @property
    def state(self) -> str:
        return "active" if self.active else "dormant"


@dataclass(frozen=True)
class RankedInsight:
    """An insight in a ranking: ``score = value.score x weights.weight``, ``rank`` 1-based."""

    insight: Insight
    value: InsightValue
    weights: InsightWeights
    score: float
    rank: int

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": self.score, "insight": self.insight.to_dict(),
                "value": asdict(self.value), "weights": asdict(self.weights)}


class RankedInsights(list):
    """A list of :class:`RankedInsight`, best first, that renders as a table in Jupyter."""

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("#", "title", "label", "importance", "urgency", "score", "value",
                                                 "weight", "30d", "7d", "trend", "state"))
        rows = "".join(
            "<tr>"
            f"<td>{r.rank}</td><td style='text-align:left'>{html.escape(r.insight.title)}</td>"
            f"<td>{html.escape(r.insight.task_label or '')}</td><td>{r.insight.importance}</td>"
            f"<td>{r.insight.urgency}</td><td>{r.score:.4f}</td><td>{r.value.score:.4f}</td>"
            f"<td>{r.weights.weight:.3f}</td><td>{r.weights.access_count_30d}</td><td>{r.weights.access_count_7d}</td>"
            f"<td>{r.weights.trend}</td><td>{r.weights.state}</td></tr>"
            for r in self
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


@dataclass(frozen=True)
class InsightHit:
    """An insight found by :meth:`Insights.search`, with the search hit that found it."""

    insight: Insight
    score: float
    hit: Any  # shared_core.search.Hit


@dataclass
class ExtractionResult:
    """What :meth:`Insights.extract` stored, how (``model`` or ``rules``), and what went wrong."""

    insights: list[Insight] = field(default_factory=list)
    method: str = "rules"
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.insights)

"""The records the inspector returns: plain dataclasses, JSON-ready through ``to_dict``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from ..clock import to_iso
from ..memories.activity_repository import ActivityDay

__all__ = ["ActivityDay", "GrowthPoint", "MaintenanceView", "Overview", "CurvePoint", "ValueCurve", "LinkView", "Provenance",
           "Version", "MemoryDetail", "SessionView", "SessionDetail", "plain"]


def plain(value: Any) -> Any:
    """``value`` with datetimes as ISO strings, recursively (dataclasses as dicts)."""
    if hasattr(value, "__dataclass_fields__"):
        value = asdict(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "rowid"}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return to_iso(value)
    return value


@dataclass(frozen=True)
class GrowthPoint:
    """Memories of a namespace created on one day (live and archived), and the running total."""

    day: str  # YYYY-MM-DD (UTC)
    added: int
    total: int


@dataclass(frozen=True)
class MaintenanceView:
    """The last maintenance run: when, how it went, what each step did (``steps`` only for a caller
    who may see every namespace: the step summaries count rows of all of them)."""

    last_run_at: datetime | None
    status: str | None
    next_due: datetime | None
    steps: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Overview:
    """What one namespace holds: live memories by kind, the archive, message tiers, summaries,
    documents, sessions, links, growth by day, the last maintenance and (for a caller who may see
    every namespace) the size of the store."""

    namespace: str
    live_by_kind: dict[str, int]
    archived_by_kind: dict[str, int]
    superseded: int
    expired: int
    pinned: int
    message_tiers: dict[str, int]
    summary_tiers: dict[str, int]
    documents: int
    sessions: int
    links: int
    growth: list[GrowthPoint]
    maintenance: MaintenanceView
    file_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return plain(self)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class CurvePoint:
    """The value of a measure ``day`` days from now."""

    day: float
    value: float


@dataclass(frozen=True)
class ValueCurve:
    """How one of the lifecycle's measures of a memory goes on if nothing happens to it.

    ``measure``: ``rank`` (feedback x recency, what search ranks by and size pruning archives the
    bottom of), ``value`` (the forgetting engine's value score of a message, against its tier's
    threshold) or ``confidence`` (a learning's decayed confidence, against the prune threshold).
    ``crosses_at_day``: the first day the measure falls under ``threshold``, if it does within the
    curve; ``ends_at_day``: when the memory goes regardless (its TTL).
    """

    measure: str
    label: str
    explanation: str
    points: list[CurvePoint]
    threshold: float | None = None
    threshold_label: str | None = None
    crosses_at_day: float | None = None
    ends_at_day: float | None = None
    protected: str | None = None  # why nothing will remove it (pinned), if so


@dataclass(frozen=True)
class LinkView:
    """A Hebbian link of a memory: the other memory, its text and kind, and the link's strength."""

    memory_id: str
    strength: float
    text: str | None
    kind: str | None
    archived: bool
    updated_at: datetime | None


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from: its ``source``, the session it was said in, the document it was cut
    from, the domain record it indexes (``owner_id``)."""

    source: str | None
    session_id: str | None
    document_id: str | None
    document_name: str | None
    owner_id: str | None
    task_id: str | None


@dataclass(frozen=True)
class Version:
    """One version of a memory's history, oldest first: when it held, what replaced it and why."""

    id: str
    text: str
    valid_from: datetime | None
    valid_to: datetime | None
    superseded_by: str | None
    reason: str | None
    archived: bool
    current: bool


@dataclass(frozen=True)
class MemoryDetail:
    """Everything the inspector shows about one memory (live or archived)."""

    memory: dict[str, Any]
    archived: bool
    editable: bool
    owner_domain: str | None
    provenance: Provenance
    history: list[Version]
    links: list[LinkView]
    curves: list[ValueCurve]
    activity: list[ActivityDay] = field(default_factory=list)  # days with accesses or feedback, oldest first
    decays: bool = True  # False: nothing in the lifecycle lowers its value or removes it by itself
    fate: str = ""  # how memories of its kind leave (or why they don't), one sentence
    as_of: datetime | None = None  # the store's clock when this was read: "now" of the curves and the activity

    def to_dict(self) -> dict[str, Any]:
        return plain(self)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class SessionView:
    """A session in a list: its record and how many messages it holds."""

    id: str
    namespace: str
    channel: str | None
    created_at: datetime | None
    updated_at: datetime | None
    ended_at: datetime | None
    messages: int


@dataclass(frozen=True)
class SessionDetail:
    """A session's transcript (its stored messages, in order) and the summaries made of it: the
    working summaries of the conversation and the forgetting engine's summaries of its messages."""

    session: dict[str, Any]
    messages: list[dict[str, Any]]
    working_summaries: list[dict[str, Any]]
    summaries: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return plain(self)  # type: ignore[no-any-return]

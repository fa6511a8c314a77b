"""The records of the memories domain: :class:`Memory` (a row of ``memory_chunks``),
:class:`NewMemory` (what ``add_many`` takes), :class:`Prepared` (a checked one, ready to write),
:class:`AddResult` and :class:`NearFacts`, and the ids they get."""

from __future__ import annotations

import html
import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from ..clock import from_iso, to_iso

__all__ = ["Memory", "NewMemory", "AddResult", "NearFacts", "Prepared", "KINDS", "DEFAULT_NAMESPACE", "COLUMNS",
           "SELECT_COLUMNS", "new_id", "new_ids"]

DEFAULT_NAMESPACE = "default"
KINDS = (
    "fact", "learning", "episode", "procedure", "summary", "message", "document", "workspace", "insight",
    "task", "skill", "note",
)

# the columns of ``memory_chunks`` in the order :meth:`Memory.from_row` reads them
COLUMNS = (
    "chunk_rowid", "id", "text", "kind", "namespace", "tags", "category", "source", "metadata",
    "importance", "confidence", "pinned", "score", "access_count", "created_at", "updated_at",
    "last_hit_at", "last_access_at", "expires_at", "valid_from", "valid_to", "superseded_by",
    "session_id", "task_id", "owner_id", "content_hash", "embedding_model", "embedded_at",
)
SELECT_COLUMNS = ", ".join(COLUMNS)


@dataclass
class Memory:
    """One remembered item. Timestamps are aware UTC datetimes."""

    id: str
    text: str
    kind: str = "fact"
    namespace: str = DEFAULT_NAMESPACE
    tags: list[str] = field(default_factory=list)
    category: str | None = None
    source: str = "agent"
    metadata: dict[str, Any] = field(default_factory=dict)
    importance: float | None = None
    confidence: float | None = None
    pinned: bool = False
    score: float = 0.0
    access_count: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_hit_at: datetime | None = None
    last_access_at: datetime | None = None
    expires_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    session_id: str | None = None
    task_id: str | None = None
    owner_id: str | None = None
    content_hash: str | None = None
    embedding_model: str | None = None
    embedded_at: datetime | None = None
    archived_at: datetime | None = None  # set on memories read from the archive
    archive_reason: str | None = None
    rowid: int = field(default=0, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: timestamps as ISO strings, the internal rowid left out."""
        out = asdict(self)
        out.pop("rowid", None)
        for key, value in out.items():
            if isinstance(value, datetime):
                out[key] = to_iso(value)
        return out

    def _repr_html_(self) -> str:
        """One row per field that is set, for Jupyter."""
        rows = "".join(
            f"<tr><th style='text-align:left'>{key}</th><td style='text-align:left'>"
            f"{html.escape(json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value))}"
            f"</td></tr>"
            for key, value in self.to_dict().items() if value not in (None, [], {})
        )
        return f"<table><caption>memory {html.escape(self.id)}</caption><tbody>{rows}</tbody></table>"

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Memory:
        values = dict(zip(COLUMNS, row, strict=False))
        return cls(
            id=values["id"],
            text=values["text"],
            kind=values["kind"],
            namespace=values["namespace"],
            tags=json.loads(values["tags"] or "[]"),
            category=values["category"],
            source=values["source"],
            metadata=json.loads(values["metadata"] or "{}"),
            importance=values["importance"],
            confidence=values["confidence"],
            pinned=bool(values["pinned"]),
            score=float(values["score"] or 0.0),
            access_count=int(values["access_count"] or 0),
            created_at=from_iso(values["created_at"]),
            updated_at=from_iso(values["updated_at"]),
            last_hit_at=from_iso(values["last_hit_at"]),
            last_access_at=from_iso(values["last_access_at"]),
            expires_at=from_iso(values["expires_at"]),
            valid_from=from_iso(values["valid_from"]),
            valid_to=from_iso(values["valid_to"]),
            superseded_by=values["superseded_by"],
            session_id=values["session_id"],
            task_id=values["task_id"],
            owner_id=values["owner_id"],
            content_hash=values["content_hash"],
            embedding_model=values["embedding_model"],
            embedded_at=from_iso(values["embedded_at"]),
            rowid=int(values["chunk_rowid"]),
        )


@dataclass
class NewMemory:
    """What ``add_many`` takes (``add`` takes the same fields as keyword arguments).

    ``ttl`` (seconds or a timedelta) is an alternative to ``expires_at``. ``vector`` skips
    the embedder. ``embedding_text`` is embedded instead of ``text`` when a domain wants
    context in the vector that the keyword index should not see.
    """

    text: str
    id: str | None = None
    kind: str = "fact"
    namespace: str = DEFAULT_NAMESPACE
    tags: Sequence[str] = ()
    category: str | None = None
    source: str = "agent"
    metadata: Mapping[str, Any] | None = None
    importance: float | None = None
    confidence: float | None = None
    pinned: bool = False
    session_id: str | None = None
    task_id: str | None = None
    owner_id: str | None = None
    expires_at: datetime | str | None = None
    ttl: float | timedelta | None = None
    created_at: datetime | str | None = None
    vector: Any = None
    embedding_text: str | None = None


@dataclass(frozen=True)
class NearFacts:
    """What a new fact nearly repeats: ``restated``, a live fact it only restates (same words once
    case, punctuation and articles are set aside: reinforced instead of stored), and ``changed``,
    live facts above the dedup threshold that it says something different from (kept apart)."""

    restated: Memory | None
    changed: tuple[Memory, ...]


class AddResult(str):
    """The id a write landed on; a ``str``, with ``event`` saying what happened.

    ``event`` is ``"created"``, ``"updated"`` (a caller-given id that existed: upsert),
    ``"reinforced"`` (the fact restates a stored one, which was reinforced instead) or
    ``"superseded"`` (it is the new version of a stored fact, kept in ``store.history``).
    """

    event: str

    def __new__(cls, memory_id: str, event: str) -> AddResult:
        obj = super().__new__(cls, memory_id)
        obj.event = event
        return obj

    @property
    def id(self) -> str:
        return str(self)

    @property
    def created(self) -> bool:
        return self.event == "created"

    def __repr__(self) -> str:
        return f"AddResult({str(self)!r}, event={self.event!r})"

    def __reduce__(self) -> Any:
        return (AddResult, (str(self), self.event))


@dataclass
class Prepared:
    """A validated NewMemory, ready to write."""

    id: str | None
    text: str
    kind: str
    namespace: str
    tags: list[str]
    category: str | None
    source: str
    metadata_json: str
    importance: float | None
    confidence: float | None
    pinned: bool
    session_id: str | None
    task_id: str | None
    owner_id: str | None
    expires_at: datetime | None
    created_at: datetime | None
    vector: np.ndarray | None
    embedding_text: str
    hash: str


def new_id() -> str:
    """A fresh id: 24 hex digits, the time in milliseconds (12) and 48 random bits (12).

    Time first, so new ids land at the end of the id index instead of anywhere in it: a
    transaction of 1,000 random ids dirtied most of that index's pages (a 100k bulk load wrote
    1.4 GB; with these ids 1.0 GB). The random part keeps ids made in the same millisecond
    apart (a thousand made in one millisecond collide with odds of about 1 in 560 million).
    """
    return new_ids(1)[0]


def new_ids(count: int) -> list[str]:
    """``count`` fresh ids (see :func:`new_id`) from one read of the clock and of the random source."""
    stamp = f"{time.time_ns() // 1_000_000:012x}"
    digits = secrets.token_hex(6 * count)
    return [stamp + digits[i : i + 12] for i in range(0, 12 * count, 12)]

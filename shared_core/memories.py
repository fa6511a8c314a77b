"""Memories: the records of the searchable index, and the one place that writes them.

A memory is a row of ``memory_chunks`` (text, kind, namespace, tags, category, source,
metadata, feedback and access counters, validity) with its FTS5 entry (kept by
trigger) and its vector in ``memory_vec``. Facts are memories of kind ``fact``; the
other domains (learnings, messages, document chunks, ...) keep structured rows of
their own and index their text here with ``owner_id`` pointing back. Every write of
row, FTS entry and vector happens in one transaction.
"""

from __future__ import annotations

import html
import json
import math
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .clock import Clock, from_iso, to_iso
from .config import Config
from .db import Database
from .embed import Embedder, as_matrix, content_hash
from .embed.hashes import content_hashes
from .errors import BusyError, NotFoundError
from .index.filters import Filter, parse_filter
from .index.protocols import RowState, VectorIndex, epoch_of, stamp_of
from .index.scope import Scope
from .namespaces import check_namespace
from .ranking import SCORE_BOUND
from .restatement import is_restatement
from .validation import (
    check_json,
    check_name,
    check_seconds,
    check_tags,
    check_text,
    time_or_none,
    unit_or_none,
)

__all__ = ["Memory", "NewMemory", "AddResult", "NearFacts", "MemoryRepository", "KINDS", "DEFAULT_NAMESPACE"]

DEFAULT_NAMESPACE = "default"
KINDS = (
    "fact", "learning", "episode", "procedure", "summary", "message", "document", "workspace", "insight",
    "task", "skill", "note",
)
_KIND = re.compile(r"^[a-z][a-z0-9_\-]{0,63}$")
_KNOWN_KINDS = frozenset(KINDS)

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


# -- validation ------------------------------------------------------------------------------


def _text(value: Any, what: str = "text") -> str:
    return check_text(value, what)


def _kind(value: Any) -> str:
    if isinstance(value, str) and value in _KNOWN_KINDS:
        return value
    if not isinstance(value, str) or not _KIND.match(value):
        raise ValueError(
            f"kind must be a short lowercase name such as 'fact' (known kinds: {', '.join(KINDS)}), got {value!r}"
        )
    return value


def _tags(value: Any) -> list[str]:
    return check_tags(value)


def _metadata(value: Any) -> str:
    if value is None:
        return "{}"
    if not isinstance(value, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(value).__name__}")
    return check_json(dict(value), "metadata")  # the caller's key order kept: metadata round-trips as given


def _optional_text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    return check_name(value, what) if value else value


def _expiry(expires_at: Any, ttl: Any, now: datetime) -> datetime | None:
    if expires_at is not None and ttl is not None:
        raise ValueError("give either expires_at or ttl, not both")
    if ttl is not None:
        return check_seconds(ttl, "ttl", now)
    return time_or_none(expires_at, "expires_at")


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


@dataclass
class _Prepared:
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


# -- the repository -----------------------------------------------------------------------


_INSERT = (
    "INSERT INTO memory_chunks (id, source, text, created_at, kind, namespace, owner_id, tags, category, "
    "metadata, importance, confidence, pinned, updated_at, expires_at, valid_from, session_id, task_id, "
    "content_hash, embedding_model, embedded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_WITH_VECTOR = _INSERT.replace("embedded_at)", "embedded_at, embedding)").replace("?)", "?, ?)")


class MemoryRepository:
    """SQL for memories. Callers hold the store lock; writes run in ``db.transaction()``."""

    def __init__(self, db: Database, vectors: VectorIndex, embedder: Embedder, clock: Clock, config: Config) -> None:
        self._access: dict[int, int] = {}  # access counts a read could not write yet (another writer had the turn)
        self.db = db
        self.vectors = vectors
        self.embedder = embedder
        self.clock = clock
        self.config = config

    # -- preparing ----------------------------------------------------------------------

    def prepare(self, items: Sequence[NewMemory]) -> list[_Prepared]:
        """Validate and embed (in one batch) before any transaction starts."""
        now = self.clock.now()
        prepared: list[_Prepared] = []
        for item in items:
            if not isinstance(item, NewMemory):
                raise TypeError(f"expected NewMemory, got {type(item).__name__}")
            text = _text(item.text)
            embedding_text = _text(item.embedding_text, "embedding_text") if item.embedding_text else text
            if item.id is not None:
                check_name(item.id, "id")
            prepared.append(
                _Prepared(
                    id=item.id,
                    text=text,
                    kind=_kind(item.kind),
                    namespace=check_namespace(item.namespace),
                    tags=_tags(item.tags),
                    category=_optional_text(item.category, "category"),
                    source=_optional_text(item.source, "source") or "agent",
                    metadata_json=_metadata(item.metadata),
                    importance=unit_or_none(item.importance, "importance"),
                    confidence=unit_or_none(item.confidence, "confidence"),
                    pinned=bool(item.pinned),
                    session_id=_optional_text(item.session_id, "session_id"),
                    task_id=_optional_text(item.task_id, "task_id"),
                    owner_id=_optional_text(item.owner_id, "owner_id"),
                    expires_at=_expiry(item.expires_at, item.ttl, now),
                    created_at=time_or_none(item.created_at, "created_at"),
                    vector=None,
                    embedding_text=embedding_text,
                    hash="",  # filled in below, for the whole batch at once
                )
            )
        for item_hash, item in zip(content_hashes([p.embedding_text for p in prepared]), prepared, strict=True):
            item.hash = item_hash
        given = [i for i, item in enumerate(items) if item.vector is not None]
        if given:
            matrix = as_matrix([items[i].vector for i in given], self.embedder.dims, count=len(given), what="vector")
            for i, row in zip(given, matrix, strict=False):
                prepared[i].vector = row
        todo = [i for i, p in enumerate(prepared) if p.vector is None]
        if todo:
            embedded = self.embed([prepared[i].embedding_text for i in todo])
            for i, row in zip(todo, embedded, strict=False):
                prepared[i].vector = row
        return prepared

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return as_matrix(self.embedder.embed(list(texts)), self.embedder.dims, count=len(texts), what="embedding")

    # -- reading ------------------------------------------------------------------------

    def get_row(self, memory_id: str, namespace: str | None = None) -> Memory | None:
        row = self.db.query(f"SELECT {SELECT_COLUMNS} FROM memory_chunks WHERE id = ?", (memory_id,))
        if not row:
            return None
        memory = Memory.from_row(row[0])
        if namespace is not None and memory.namespace != namespace:
            return None
        return memory

    def require(self, memory_id: str, namespace: str | None = None) -> Memory:
        if not isinstance(memory_id, str) or not memory_id:
            raise ValueError(f"a memory id must be a non-empty string, got {memory_id!r}")
        memory = self.get_row(memory_id, namespace)
        if memory is None:
            where = f" in namespace {namespace!r}" if namespace is not None else ""
            raise NotFoundError(f"no memory with id {memory_id!r}{where}")
        return memory

    def get_many(self, ids: Sequence[str], namespace: str | None = None) -> list[Memory]:
        found: dict[str, Memory] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            for row in self.db.query(
                f"SELECT {SELECT_COLUMNS} FROM memory_chunks WHERE id IN ({', '.join('?' for _ in part)})", part
            ):
                memory = Memory.from_row(row)
                if namespace is None or memory.namespace == namespace:
                    found[memory.id] = memory
        return [found[i] for i in ids if i in found]

    def ranking_columns(self, rowids: Sequence[int]) -> list[tuple[int, float, datetime | None, datetime | None]]:
        """(rowid, feedback score, last_hit_at, created_at) of each row that exists: what search ranks on."""
        return [(int(rowid), float(score or 0.0), from_iso(last_hit_at), from_iso(created_at))
                for rowid, score, last_hit_at, created_at
                in self._by_rowid("chunk_rowid, score, last_hit_at, created_at", rowids)]

    def by_rowids(self, rowids: Sequence[int]) -> dict[int, Memory]:
        out: dict[int, Memory] = {}
        for row in self._by_rowid(SELECT_COLUMNS, rowids):
            memory = Memory.from_row(row)
            out[memory.rowid] = memory
        return out

    def _by_rowid(self, columns: str, rowids: Sequence[int]) -> Iterator[Any]:
        """``columns`` of the rows with these rowids, 500 to a statement."""
        for start in range(0, len(rowids), 500):
            part = list(rowids[start : start + 500])
            yield from self.db.query(
                f"SELECT {columns} FROM memory_chunks WHERE chunk_rowid IN ({', '.join('?' for _ in part)})", part
            )

    def select(self, scope: Scope, *, order_by: str = "created_at", descending: bool = False,
               limit: int | None = None, offset: int = 0) -> list[Memory]:
        sql, params = scope.sql("c", self.db.capabilities.sql_flavour)
        if order_by not in {"created_at", "updated_at", "score", "access_count", "id", "last_hit_at", "chunk_rowid"}:
            raise ValueError(f"cannot order by {order_by!r}")
        direction = "DESC" if descending else "ASC"
        tail = ""
        if limit is not None:
            tail = " LIMIT ? OFFSET ?"
            params = [*params, int(limit), int(offset)]
        elif offset:
            tail = " LIMIT -1 OFFSET ?"
            params = [*params, int(offset)]
        rows = self.db.query(
            f"SELECT {', '.join('c.' + c for c in COLUMNS)} FROM memory_chunks c WHERE {sql} "
            f"ORDER BY c.{order_by} {direction}, c.chunk_rowid {direction}{tail}",
            params,
        )
        return [Memory.from_row(r) for r in rows]

    def count(self, scope: Scope) -> int:
        sql, params = scope.sql("c", self.db.capabilities.sql_flavour)
        return int(self.db.scalar(f"SELECT count(*) FROM memory_chunks c WHERE {sql}", params) or 0)

    # -- writing (inside a transaction) ---------------------------------------------------

    def write(self, item: _Prepared, *, dedup: bool) -> AddResult:
        """Insert, upsert (caller-given id) or reinforce a near-duplicate fact."""
        now = self.clock.now()
        if item.id is not None:
            existing = self.get_row(item.id)
            if existing is not None:
                if existing.namespace != item.namespace:
                    raise ValueError(
                        f"id {item.id!r} already belongs to namespace {existing.namespace!r}; ids are unique "
                        "across namespaces, so choose another id or delete the old memory first"
                    )
                self._replace(existing, item, now)
                return AddResult(item.id, "updated")
        elif dedup and item.kind == "fact":
            restated = self.near_facts(item).restated
            if restated is not None:
                self.feedback(restated, self.config.memory.reinforce_weight, hit=True, now=now)
                return AddResult(restated.id, "reinforced")
        memory_id = item.id or new_id()
        now_iso = to_iso(now)
        rowid = self._insert(memory_id, item, now_iso)
        if not self.vectors.inline:
            self.vectors.put(rowid, item.vector, self._state(item, now_iso), replace=False)
        return AddResult(memory_id, "created")

    def write_many(self, items: list[_Prepared]) -> list[AddResult]:
        """Bulk insert without dedup: one statement batch for the new rows (caller-given ids still upsert)."""
        now = self.clock.now()
        now_iso = to_iso(now)
        given = [item.id for item in items if item.id is not None]
        taken = {m.id for m in self.get_many(given)} if given else set()
        results: list[AddResult] = []
        pending: list[tuple[str, _Prepared]] = []

        def flush() -> None:
            if not pending:
                return
            self.db.insert_many(self._insert_sql, [self._row(memory_id, item, now_iso) for memory_id, item in pending])
            if not self.vectors.inline:
                rowids = self._rowids([memory_id for memory_id, _ in pending])
                self.vectors.put_many(
                    [(rowids[memory_id], item.vector, self._state(item, now_iso)) for memory_id, item in pending])
            pending.clear()

        fresh = iter(new_ids(sum(1 for item in items if item.id is None)))
        for item in items:
            if item.id is not None and item.id in taken:  # an upsert, or the same id twice in one batch
                flush()
                results.append(self.write(item, dedup=False))
                continue
            memory_id = item.id or next(fresh)
            taken.add(memory_id)
            pending.append((memory_id, item))
            results.append(AddResult(memory_id, "created"))
        flush()
        return results

    def _rowids(self, ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            out.update(self.db.query(
                f"SELECT id, chunk_rowid FROM memory_chunks WHERE id IN ({', '.join('?' for _ in part)})", part))
        return out

    def near_facts(self, item: _Prepared, *, extra: int = 4) -> NearFacts:
        """The live facts of ``item``'s namespace that it nearly repeats (cosine above the dedup
        threshold, or the same text), split into the one it only restates and those it changes."""
        now = self.clock.now()
        now_iso, now_epoch = to_iso(now), now.timestamp()
        scope = Scope(namespaces=(item.namespace,), kinds=("fact",), live_at=now_iso)
        answered, same = self.vectors.same_content(item.hash, scope, now=now_epoch)
        if not answered:
            row = self.db.query(
                f"SELECT {SELECT_COLUMNS} FROM memory_chunks WHERE namespace = ? AND content_hash = ? "
                "AND kind = 'fact' AND valid_to IS NULL AND (expires_at IS NULL OR expires_at > ?) LIMIT 1",
                (item.namespace, item.hash, now_iso),
            )
            if row:
                return NearFacts(Memory.from_row(row[0]), ())
        elif same is not None and (exact := self.by_rowids([same]).get(same)) is not None:
            return NearFacts(exact, ())
        threshold = self.config.memory.fact_dedup_threshold
        if self.vectors.best_above(item.vector, threshold, scope, now=now_epoch) is None:
            return NearFacts(None, ())
        # rarely reached (a near-duplicate exists): look at a few, as the most similar may not be the restatement
        near = [(rowid, sim) for rowid, sim in self.vectors.search(item.vector, 1 + extra, scope, now=now_epoch)
                if sim > threshold]
        rows = self.by_rowids([rowid for rowid, _ in near])
        found = [rows[rowid] for rowid, _ in near if rowid in rows]
        restated = next((m for m in found if is_restatement(item.text, m.text)), None)
        return NearFacts(restated, tuple(m for m in found if m is not restated))

    def insert_full(self, memory: Memory, vector: np.ndarray) -> int:
        """Insert a complete record as it was (restore, import): feedback and timestamps kept."""
        now = self.clock.now()
        text_hash = content_hash(memory.text)
        columns = [
            "id", "source", "text", "created_at", "kind", "namespace", "owner_id", "tags", "category", "metadata",
            "importance", "confidence", "pinned", "score", "last_hit_at", "access_count", "last_access_at",
            "updated_at", "expires_at", "valid_from", "valid_to", "superseded_by", "session_id", "task_id",
            "content_hash", "embedding_model", "embedded_at",
        ]
        values: list[Any] = [
            memory.id, memory.source, _text(memory.text), to_iso(memory.created_at or now), _kind(memory.kind),
            check_namespace(memory.namespace), memory.owner_id, json.dumps(_tags(memory.tags), ensure_ascii=False),
            memory.category, _metadata(memory.metadata), memory.importance, memory.confidence, int(memory.pinned),
            memory.score, to_iso(memory.last_hit_at), memory.access_count, to_iso(memory.last_access_at),
            to_iso(memory.updated_at or now), to_iso(memory.expires_at), to_iso(memory.valid_from or memory.created_at),
            to_iso(memory.valid_to), memory.superseded_by, memory.session_id, memory.task_id, text_hash,
            self.embedder.name, to_iso(now),
        ]
        if self.vectors.inline:
            columns.append("embedding")
            values.append(vector)
        cursor = self.db.execute(
            f"INSERT INTO memory_chunks ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})", values
        )
        rowid = int(cursor.lastrowid)
        if not self.vectors.inline:
            state = RowState(memory.namespace, memory.kind, epoch_of(to_iso(memory.expires_at)),
                             memory.valid_to is None, stamp_of(to_iso(now), text_hash))
            self.vectors.put(rowid, vector, state, replace=False)
        return rowid

    def _insert(self, memory_id: str, item: _Prepared, now_iso: str | None) -> int:
        cursor = self.db.execute(self._insert_sql, self._row(memory_id, item, now_iso))
        return int(cursor.lastrowid)

    @property
    def _insert_sql(self) -> str:
        return _INSERT_WITH_VECTOR if self.vectors.inline else _INSERT

    def _row(self, memory_id: str, item: _Prepared, now_iso: str | None) -> tuple[Any, ...]:
        created = to_iso(item.created_at) if item.created_at is not None else now_iso
        row = (
            memory_id, item.source, item.text, created, item.kind, item.namespace, item.owner_id,
            json.dumps(item.tags, ensure_ascii=False) if item.tags else "[]", item.category, item.metadata_json,
            item.importance, item.confidence, int(item.pinned), now_iso, to_iso(item.expires_at), created,
            item.session_id, item.task_id, item.hash, self.embedder.name, now_iso,
        )
        return (*row, item.vector) if self.vectors.inline else row  # PostgreSQL: the vector is a column

    def _replace(self, existing: Memory, item: _Prepared, now: datetime) -> None:
        """Upsert of a caller-given id: new content, kept feedback and access history."""
        self.db.execute(
            "UPDATE memory_chunks SET source = ?, text = ?, kind = ?, owner_id = ?, tags = ?, category = ?, "
            "metadata = ?, importance = ?, confidence = ?, pinned = ?, updated_at = ?, expires_at = ?, "
            "session_id = ?, task_id = ?, content_hash = ?, embedding_model = ?, embedded_at = ?, "
            "created_at = coalesce(?, created_at) WHERE chunk_rowid = ?",
            (
                item.source, item.text, item.kind, item.owner_id, json.dumps(item.tags, ensure_ascii=False),
                item.category, item.metadata_json, item.importance, item.confidence, int(item.pinned), to_iso(now),
                to_iso(item.expires_at), item.session_id, item.task_id, item.hash, self.embedder.name, to_iso(now),
                to_iso(item.created_at), existing.rowid,
            ),
        )
        self.vectors.put(existing.rowid, item.vector, self._state(item, to_iso(now)), replace=True)

    def _state(self, item: _Prepared, now_iso: str) -> RowState:
        expires = math.inf if item.expires_at is None else item.expires_at.timestamp()
        return RowState(item.namespace, item.kind, expires, True, stamp_of(now_iso, item.hash))

    def update(
        self,
        memory: Memory,
        *,
        text: str | None = None,
        tags: Any = None,
        metadata: Mapping[str, Any] | None = None,
        category: Any = ...,
        importance: Any = ...,
        confidence: Any = ...,
        pinned: bool | None = None,
        expires_at: Any = ...,
        vector: Any = None,
        embedding_text: str | None = None,
        refresh_hit: bool = True,
    ) -> None:
        """Change a memory in place (seed 002's update): score kept, ``last_hit_at`` refreshed."""
        now = self.clock.now()
        sets: list[str] = ["updated_at = ?"]
        params: list[Any] = [to_iso(now)]
        if refresh_hit:
            sets.append("last_hit_at = ?")
            params.append(to_iso(now))
        if tags is not None:
            sets.append("tags = ?")
            params.append(json.dumps(_tags(tags), ensure_ascii=False))
        if metadata is not None:
            sets.append("metadata = ?")
            params.append(_metadata(metadata))
        if category is not ...:
            sets.append("category = ?")
            params.append(_optional_text(category, "category"))
        if importance is not ...:
            sets.append("importance = ?")
            params.append(unit_or_none(importance, "importance"))
        if confidence is not ...:
            sets.append("confidence = ?")
            params.append(unit_or_none(confidence, "confidence"))
        if pinned is not None:
            sets.append("pinned = ?")
            params.append(int(bool(pinned)))
        if expires_at is not ...:
            sets.append("expires_at = ?")
            params.append(to_iso(time_or_none(expires_at, "expires_at")))
        new_vector: np.ndarray | None = None
        new_hash = memory.content_hash
        if text is not None or vector is not None or embedding_text is not None:
            new_text = _text(text) if text is not None else memory.text
            basis = _text(embedding_text, "embedding_text") if embedding_text else new_text
            new_hash = content_hash(basis)
            if vector is not None:
                new_vector = as_matrix([vector], self.embedder.dims, count=1, what="vector")[0]
            elif new_hash != memory.content_hash or memory.embedding_model != self.embedder.name:
                new_vector = self.embed([basis])[0]
            if text is not None:
                sets.append("text = ?")
                params.append(new_text)
            if new_vector is not None:
                sets += ["content_hash = ?", "embedding_model = ?", "embedded_at = ?"]
                params += [new_hash, self.embedder.name, to_iso(now)]
        self.db.execute(f"UPDATE memory_chunks SET {', '.join(sets)} WHERE chunk_rowid = ?", (*params, memory.rowid))
        if new_vector is not None:
            expiry = to_iso(time_or_none(expires_at, "expires_at")) if expires_at is not ... else to_iso(memory.expires_at)
            state = RowState(memory.namespace, memory.kind, epoch_of(expiry), memory.valid_to is None,
                             stamp_of(to_iso(now), new_hash))
            self.vectors.put(memory.rowid, new_vector, state, replace=True)

    def feedback(self, memory: Memory, delta: float, *, hit: bool, now: datetime | None = None) -> None:
        """Seed 002's reinforce (+3, ``last_hit_at`` = now) and demote (-1), the score kept within
        :data:`~shared_core.ranking.SCORE_BOUND`."""
        now = now or self.clock.now()
        bounded = "min(?, max(?, score + ?))"  # within SCORE_BOUND: exp(0.2 x score) never overflows
        if hit:
            self.db.execute(
                f"UPDATE memory_chunks SET score = {bounded}, last_hit_at = ? WHERE chunk_rowid = ?",
                (SCORE_BOUND, -SCORE_BOUND, delta, to_iso(now), memory.rowid),
            )
        else:
            self.db.execute(f"UPDATE memory_chunks SET score = {bounded} WHERE chunk_rowid = ?",
                            (SCORE_BOUND, -SCORE_BOUND, delta, memory.rowid))

    def track_access(self, rowids: Iterable[int]) -> None:
        """Seed 003's access tracking: one statement for all returned rows (inside a transaction)."""
        for rowid in rowids:
            self._access[int(rowid)] = self._access.get(int(rowid), 0) + 1
        self._flush_access()

    def note_access(self, rowids: Iterable[int], then: Callable[[], None] | None = None) -> bool:
        """:meth:`track_access` for a read, which never waits for another writer: the counts are
        written now if the memory's write turn is free, else kept for the next read that finds it
        free (or ``close()``). ``then`` runs in the same transaction. True when written."""
        for rowid in rowids:
            self._access[int(rowid)] = self._access.get(int(rowid), 0) + 1
        if not self._access and then is None:
            return True
        try:
            with self.db.transaction(wait=0):
                self._flush_access()
                if then is not None:
                    then()
        except BusyError:
            return False
        return True

    def flush_access(self) -> None:
        """Write the access counts kept while another writer had the memory (waits for the turn)."""
        if self._access:
            with self.db.transaction():
                self._flush_access()

    def _flush_access(self) -> None:
        pending, self._access = self._access, {}

        def keep() -> None:  # rolled back: the counts wait for the next turn
            for rowid, count in pending.items():
                self._access[rowid] = self._access.get(rowid, 0) + count

        self.db.on_rollback(keep)
        by_count: dict[int, list[int]] = {}
        for rowid, count in pending.items():
            by_count.setdefault(count, []).append(rowid)
        now = to_iso(self.clock.now())
        for count, ids in by_count.items():
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                self.db.execute(
                    "UPDATE memory_chunks SET access_count = access_count + ?, last_access_at = ? "
                    f"WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                    (count, now, *part),
                )

    def delete_rows(self, rowids: Sequence[int]) -> int:
        ids = list(rowids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            self.db.execute(f"DELETE FROM memory_chunks WHERE chunk_rowid IN ({', '.join('?' for _ in part)})", part)
        self.vectors.delete(ids)
        return len(ids)


def scope_for(
    *,
    namespace: str | Sequence[str] | None,
    namespace_prefix: str | None,
    kind: str | Sequence[str] | None,
    ids: Sequence[str] | None,
    where: Mapping[str, Any] | Filter | None,
    tags: str | Sequence[str] | None,
    category: str | Sequence[str] | None,
    source: str | Sequence[str] | None,
    since: datetime | str | None,
    until: datetime | str | None,
    live_at: str | None,
    current_only: bool,
) -> Scope:
    """Build a Scope from the keyword arguments that ``search``, ``list`` and ``count`` share."""
    from .index.filters import And, Condition

    if namespace_prefix is not None:
        if namespace not in (None, DEFAULT_NAMESPACE):
            raise ValueError("give namespace or namespace_prefix, not both")
        if not isinstance(namespace_prefix, str):
            raise TypeError("namespace_prefix must be a string ('' for every namespace)")
        namespaces = None
    elif namespace is None:
        namespaces = (DEFAULT_NAMESPACE,)
    elif isinstance(namespace, str):
        namespaces = (check_namespace(namespace),)
    else:
        namespaces = tuple(check_namespace(n) for n in namespace)
        if not namespaces:
            raise ValueError("namespace list is empty")
    kinds = None
    if kind is not None:
        kinds = (_kind(kind),) if isinstance(kind, str) else tuple(_kind(k) for k in kind)
    if ids is not None:
        if isinstance(ids, str):
            ids = [ids]
        ids = tuple(ids)
    conditions: list[Filter] = []
    parsed = parse_filter(where) if where is not None else None
    if parsed is not None:
        conditions.append(parsed)
    if tags is not None:
        conditions.append(Condition("@tags", "$any", _tags(tags)))
    if category is not None:
        conditions.append(Condition("@category", "$in", [category] if isinstance(category, str) else list(category)))
    if source is not None:
        conditions.append(Condition("@source", "$in", [source] if isinstance(source, str) else list(source)))
    if since is not None:
        conditions.append(Condition("@created_at", "$gte", to_iso(time_or_none(since, "since"))))
    if until is not None:
        conditions.append(Condition("@created_at", "$lt", to_iso(time_or_none(until, "until"))))
    combined: Filter | None
    if not conditions:
        combined = None
    elif len(conditions) == 1:
        combined = conditions[0]
    else:
        combined = And(tuple(conditions))
    return Scope(
        namespaces=namespaces,
        namespace_prefix=namespace_prefix,
        kinds=kinds,
        ids=ids,
        where=combined,
        live_at=live_at,
        current_only=current_only,
    )

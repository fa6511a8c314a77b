"""``MemoryRepository``: all SQL of the searchable index (``memory_chunks``, its FTS entries by
trigger, its vectors through the vector index). Callers hold the kernel's session; writes run
in a transaction, so row, keyword entry and vector are written together or not at all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..clock import Clock, from_iso, to_iso
from ..config import Config
from ..db import Backend
from ..db.backend import inserted_rowid
from ..embed import Embedder, as_matrix, content_hash
from ..embed.hashes import content_hashes
from ..errors import BusyError, NotFoundError
from ..index.protocols import RowState, VectorIndex, epoch_of, stamp_of
from ..index.scope import Scope
from ..namespaces import check_namespace
from ..ranking import SCORE_BOUND
from ..restatement import is_restatement
from ..validation import check_name, check_tags, check_text, time_or_none, unit_or_none
from .activity_repository import ActivityRepository
from .checks import check_kind, expiry, metadata_json, optional_name
from .records import (
    COLUMNS,
    SELECT_COLUMNS,
    AddResult,
    Memory,
    NearFacts,
    NewMemory,
    Prepared,
    new_id,
    new_ids,
)

__all__ = ["MemoryRepository"]


_INSERT = (
    "INSERT INTO memory_chunks (id, source, text, created_at, kind, namespace, owner_id, tags, category, "
    "metadata, importance, confidence, pinned, updated_at, expires_at, valid_from, session_id, task_id, "
    "content_hash, embedding_model, embedded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_WITH_VECTOR = _INSERT.replace("embedded_at)", "embedded_at, embedding)").replace("?)", "?, ?)")


class MemoryRepository:
    """SQL for memories. Callers hold the store lock; writes run in ``db.transaction()``."""

    def __init__(self, db: Backend, vectors: VectorIndex, embedder: Embedder, clock: Clock, config: Config) -> None:
        self._access: dict[int, int] = {}  # access counts a read could not write yet (another writer had the turn)
        self.db = db
        self.vectors = vectors
        self.embedder = embedder
        self.clock = clock
        self.config = config
        self.activity = ActivityRepository(db, clock)  # access and feedback per day, for the inspector

    # -- preparing ----------------------------------------------------------------------

    def prepare(self, items: Sequence[NewMemory]) -> list[Prepared]:
        """Validate and embed (in one batch) before any transaction starts."""
        now = self.clock.now()
        prepared: list[Prepared] = []
        for item in items:
            if not isinstance(item, NewMemory):
                raise TypeError(f"expected NewMemory, got {type(item).__name__}")
            text = check_text(item.text)
            embedding_text = check_text(item.embedding_text, "embedding_text") if item.embedding_text else text
            if item.id is not None:
                check_name(item.id, "id")
            prepared.append(
                Prepared(
                    id=item.id,
                    text=text,
                    kind=check_kind(item.kind),
                    namespace=check_namespace(item.namespace),
                    tags=check_tags(item.tags),
                    category=optional_name(item.category, "category"),
                    source=optional_name(item.source, "source") or "agent",
                    metadata_json=metadata_json(item.metadata),
                    importance=unit_or_none(item.importance, "importance"),
                    confidence=unit_or_none(item.confidence, "confidence"),
                    pinned=bool(item.pinned),
                    session_id=optional_name(item.session_id, "session_id"),
                    task_id=optional_name(item.task_id, "task_id"),
                    owner_id=optional_name(item.owner_id, "owner_id"),
                    expires_at=expiry(item.expires_at, item.ttl, now),
                    created_at=time_or_none(item.created_at, "created_at"),
                    vector=None,
                    embedding_text=embedding_text,
                    hash="",  # filled in below, for the whole batch at once
                )
            )
        for item_hash, ready in zip(content_hashes([p.embedding_text for p in prepared]), prepared, strict=True):
            ready.hash = item_hash
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
        found = {m.id: m for m in map(Memory.from_row, self._where_in(SELECT_COLUMNS, "id", list(dict.fromkeys(ids))))
                 if namespace is None or m.namespace == namespace}
        return [found[i] for i in ids if i in found]

    def ranking_columns(self, rowids: Sequence[int]) -> list[tuple[int, float, datetime | None, datetime | None]]:
        """(rowid, feedback score, last_hit_at, created_at) of each row that exists: what search ranks on."""
        return [(int(rowid), float(score or 0.0), from_iso(last_hit_at), from_iso(created_at))
                for rowid, score, last_hit_at, created_at
                in self._where_in("chunk_rowid, score, last_hit_at, created_at", "chunk_rowid", rowids)]

    def session_neighbours(self, rowids: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        """(previous, next) rowid in its namespace and session, by (created_at, rowid), of each row with a session."""
        side = ("(SELECT {t}.chunk_rowid FROM memory_chunks {t} WHERE {t}.namespace = c.namespace AND {t}.session_id = "
                "c.session_id AND ({t}.created_at, {t}.chunk_rowid) {op} (c.created_at, c.chunk_rowid) "
                "ORDER BY {t}.created_at {d}, {t}.chunk_rowid {d} LIMIT 1)")  # row values: one index seek
        out: dict[int, tuple[int | None, int | None]] = {}
        for start in range(0, len(rowids), 500):
            part = list(rowids[start : start + 500])
            for rowid, before, after in self.db.query(
                f"SELECT c.chunk_rowid, {side.format(t='p', op='<', d='DESC')}, {side.format(t='n', op='>', d='ASC')} "
                f"FROM memory_chunks c WHERE c.session_id IS NOT NULL AND c.chunk_rowid IN ({', '.join('?' for _ in part)})",
                part,
            ):
                out[int(rowid)] = (None if before is None else int(before), None if after is None else int(after))
        return out

    def by_rowids(self, rowids: Sequence[int]) -> dict[int, Memory]:
        return {m.rowid: m for m in map(Memory.from_row, self._where_in(SELECT_COLUMNS, "chunk_rowid", rowids))}

    def _where_in(self, columns: str, key: str, values: Sequence[Any]) -> Iterator[Any]:
        """``columns`` of the rows whose ``key`` is one of ``values``, 500 to a statement."""
        for start in range(0, len(values), 500):
            part = list(values[start : start + 500])
            yield from self.db.query(
                f"SELECT {columns} FROM memory_chunks WHERE {key} IN ({', '.join('?' for _ in part)})", part
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

    def newest_texts(self, scope: Scope, *, limit: int) -> list[tuple[int, str, dict[str, Any]]]:
        """(row id, text, metadata) of the ``limit`` newest rows in ``scope``: for a rule that reads
        only these of many rows (whole records of 500 rows took ~9 ms)."""
        sql, params = scope.sql("c", self.db.capabilities.sql_flavour)
        rows = self.db.query(f"SELECT c.chunk_rowid, c.text, c.metadata FROM memory_chunks c WHERE {sql} "
                             "ORDER BY c.created_at DESC, c.chunk_rowid DESC LIMIT ?", [*params, int(limit)])
        return [(int(rowid), text, json.loads(metadata) if metadata and metadata != "{}" else {})
                for rowid, text, metadata in rows]

    def count(self, scope: Scope, cap: int | None = None) -> int:
        """The rows in ``scope``, counted up to ``cap`` (a capped count stops there: ``cap=1`` asks if any)."""
        flavour = self.db.capabilities.sql_flavour
        if cap is None:
            return int(self.db.scalar(*scope.count_query("memory_chunks", flavour)) or 0)
        sql, params = scope.sql("c", flavour)
        return int(self.db.scalar(f"SELECT count(*) FROM (SELECT 1 FROM memory_chunks c WHERE {sql} LIMIT ?) AS counted",
                                  [*params, cap]) or 0)

    def rowids(self, scope: Scope) -> list[int]:
        sql, params = scope.sql("c", self.db.capabilities.sql_flavour)
        return [int(r[0]) for r in self.db.query(f"SELECT c.chunk_rowid FROM memory_chunks c WHERE {sql}", params)]

    def expired_rowids(self) -> list[int]:
        """The rows whose ``expires_at`` has passed (is at or before now)."""
        return [int(r[0]) for r in self.db.query(
            "SELECT chunk_rowid FROM memory_chunks WHERE expires_at IS NOT NULL AND expires_at <= ?",
            (to_iso(self.clock.now()),))]

    def row_count(self) -> int:
        """Every row of the index (live memories of all namespaces, expired ones too)."""
        return int(self.db.scalar("SELECT count(*) FROM memory_chunks") or 0)

    def count_by_namespace(self, scope: Scope) -> dict[str, int]:
        sql, params = scope.sql("c", self.db.capabilities.sql_flavour)
        return {ns: int(n) for ns, n in self.db.query(
            f"SELECT c.namespace, count(*) FROM memory_chunks c WHERE {sql} GROUP BY c.namespace ORDER BY c.namespace",
            params)}

    def all_rowids(self) -> list[int]:
        return [int(r[0]) for r in self.db.query("SELECT chunk_rowid FROM memory_chunks")]

    def embedding_states(self) -> list[tuple[int, str | None, str | None]]:
        """(rowid, content hash, embedder name) of every row: what re-embedding compares."""
        return [(int(r[0]), r[1], r[2]) for r in
                self.db.query("SELECT chunk_rowid, content_hash, embedding_model FROM memory_chunks")]

    def mark_embedded(self, rows: Sequence[tuple[int, str]], embedder_name: str, now_iso: str) -> None:
        """Record that each (rowid, content hash) was embedded by ``embedder_name`` now (its vector is written)."""
        self.db.executemany(
            "UPDATE memory_chunks SET content_hash = ?, embedding_model = ?, embedded_at = ? WHERE chunk_rowid = ?",
            [(text_hash, embedder_name, now_iso, rowid) for rowid, text_hash in rows],
        )

    def categories(self, scope: Scope) -> list[str]:
        """The categories of the rows in ``scope``, most used first."""
        sql, params = scope.sql("c", self.db.capabilities.sql_flavour)
        return [r[0] for r in self.db.query(
            f"SELECT c.category, count(*) AS n FROM memory_chunks c WHERE {sql} AND c.category IS NOT NULL "
            "AND c.category != '' GROUP BY c.category ORDER BY n DESC, c.category", params)]

    def count_by_kind(self) -> dict[str, int]:
        return {k: int(n) for k, n in self.db.query("SELECT kind, count(*) FROM memory_chunks GROUP BY kind")}

    # -- writing (inside a transaction) ---------------------------------------------------

    def write(self, item: Prepared, *, dedup: bool) -> AddResult:
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
            self.vectors.put(rowid, _vector(item), self._state(item, now_iso), replace=False)
        return AddResult(memory_id, "created")

    def write_many(self, items: list[Prepared]) -> list[AddResult]:
        """Bulk insert without dedup: one statement batch for the new rows (caller-given ids still upsert)."""
        now = self.clock.now()
        now_iso = to_iso(now)
        given = [item.id for item in items if item.id is not None]
        taken = {m.id for m in self.get_many(given)} if given else set()
        results: list[AddResult] = []
        pending: list[tuple[str, Prepared]] = []

        def flush() -> None:
            if not pending:
                return
            self.db.insert_many(self._insert_sql, [self._row(memory_id, item, now_iso) for memory_id, item in pending])
            if not self.vectors.inline:
                rowids = dict(self._where_in("id, chunk_rowid", "id", [memory_id for memory_id, _ in pending]))
                self.vectors.put_many(
                    [(rowids[memory_id], _vector(item), self._state(item, now_iso)) for memory_id, item in pending])
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

    def near_facts(self, item: Prepared, *, extra: int = 4) -> NearFacts:
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
        # a few, as the most similar may not be the restatement
        near = self.vectors.above(_vector(item), threshold, scope, now=now_epoch, limit=1 + extra)
        if not near:
            return NearFacts(None, ())
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
        created = to_iso(memory.created_at or now)
        values: list[Any] = [
            memory.id, memory.source, check_text(memory.text), created, check_kind(memory.kind),
            check_namespace(memory.namespace), memory.owner_id, json.dumps(check_tags(memory.tags), ensure_ascii=False),
            memory.category, metadata_json(memory.metadata), memory.importance, memory.confidence, int(memory.pinned),
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
        rowid = inserted_rowid(cursor)
        if not self.vectors.inline:
            state = RowState(memory.namespace, memory.kind, epoch_of(to_iso(memory.expires_at)),
                             memory.valid_to is None, stamp_of(to_iso(now), text_hash), epoch_of(created))
            self.vectors.put(rowid, vector, state, replace=False)
        return rowid

    def _insert(self, memory_id: str, item: Prepared, now_iso: str | None) -> int:
        cursor = self.db.execute(self._insert_sql, self._row(memory_id, item, now_iso))
        return inserted_rowid(cursor)

    @property
    def _insert_sql(self) -> str:
        return _INSERT_WITH_VECTOR if self.vectors.inline else _INSERT

    def _row(self, memory_id: str, item: Prepared, now_iso: str | None) -> tuple[Any, ...]:
        created = to_iso(item.created_at) if item.created_at is not None else now_iso
        row = (
            memory_id, item.source, item.text, created, item.kind, item.namespace, item.owner_id,
            json.dumps(item.tags, ensure_ascii=False) if item.tags else "[]", item.category, item.metadata_json,
            item.importance, item.confidence, int(item.pinned), now_iso, to_iso(item.expires_at), created,
            item.session_id, item.task_id, item.hash, self.embedder.name, now_iso,
        )
        return (*row, _vector(item)) if self.vectors.inline else row  # PostgreSQL: the vector is a column

    def _replace(self, existing: Memory, item: Prepared, now: datetime) -> None:
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
        self.vectors.put(existing.rowid, _vector(item), self._state(item, to_iso(now), to_iso(existing.created_at)),
                         replace=True)

    def _state(self, item: Prepared, now_iso: str | None, kept_created: str | None = None) -> RowState:
        """The vector index's state of a row written from ``item``: created when it says, else at
        ``kept_created`` (an upsert keeps the row's time), else now."""
        expires = math.inf if item.expires_at is None else item.expires_at.timestamp()
        created = to_iso(item.created_at) if item.created_at is not None else kept_created or now_iso
        return RowState(item.namespace, item.kind, expires, True, stamp_of(now_iso, item.hash), epoch_of(created))

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
            params.append(json.dumps(check_tags(tags), ensure_ascii=False))
        if metadata is not None:
            sets.append("metadata = ?")
            params.append(metadata_json(metadata))
        if category is not ...:
            sets.append("category = ?")
            params.append(optional_name(category, "category"))
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
            new_text = check_text(text) if text is not None else memory.text
            basis = check_text(embedding_text, "embedding_text") if embedding_text else new_text
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
                             stamp_of(to_iso(now), new_hash), epoch_of(to_iso(memory.created_at)))
            self.vectors.put(memory.rowid, new_vector, state, replace=True)

    def set_expiry(self, rowids: Sequence[int], when: str | None) -> None:
        self.db.executemany("UPDATE memory_chunks SET expires_at = ? WHERE chunk_rowid = ?",
                            [(when, rowid) for rowid in rowids])

    def close_version(self, rowid: int, superseded_by: str, reason: str) -> None:
        """End a memory's validity now: it was superseded by ``superseded_by`` (the reason in its metadata)."""
        now_iso = to_iso(self.clock.now())
        self.db.execute(
            "UPDATE memory_chunks SET valid_to = ?, superseded_by = ?, updated_at = ?, "
            "metadata = json_set(metadata, '$.superseded_reason', ?) WHERE chunk_rowid = ?",
            (now_iso, superseded_by, now_iso, reason, rowid),
        )

    def superseded_by(self, memory_id: str) -> list[str]:
        """The ids of the live rows that ``memory_id`` superseded."""
        return [r[0] for r in self.db.query("SELECT id FROM memory_chunks WHERE superseded_by = ?", (memory_id,))]

    def set_metadata_value(self, memory_id: str, key: str, value: Any) -> None:
        """Set one top-level metadata key (a plain name) of a memory, leaving the rest as it is."""
        if not key.isidentifier():
            raise ValueError(f"a metadata key set in place must be a plain name, got {key!r}")
        self.db.execute(f"UPDATE memory_chunks SET metadata = json_set(metadata, '$.{key}', ?) WHERE id = ?",
                        (value, memory_id))

    def set_confidence(self, rows: Sequence[tuple[float, str]]) -> None:
        """(confidence, memory id) for each memory whose confidence changed (a learning's, say)."""
        self.db.executemany("UPDATE memory_chunks SET confidence = ? WHERE id = ?", rows)

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
        self.activity.feedback(memory.id, memory.namespace, delta, now, reinforced=hit)

    def track_access(self, rowids: Iterable[int]) -> None:
        """Seed 003's access tracking: one statement for all returned rows (inside a transaction)."""
        for rowid in rowids:
            self._access[int(rowid)] = self._access.get(int(rowid), 0) + 1
        self._flush_access()

    def note_access(self, rowids: Iterable[int], then: Callable[[], object] | None = None) -> bool:
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
        moment = self.clock.now()
        now = to_iso(moment)
        for count, ids in by_count.items():
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                self.db.execute(
                    "UPDATE memory_chunks SET access_count = access_count + ?, last_access_at = ? "
                    f"WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                    (count, now, *part),
                )
                self.activity.accessed(part, count, moment)

    def delete_rows(self, rowids: Sequence[int]) -> int:
        ids = list(rowids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            self.db.execute(f"DELETE FROM memory_chunks WHERE chunk_rowid IN ({', '.join('?' for _ in part)})", part)
        self.vectors.delete(ids)
        return len(ids)


def _vector(item: Prepared) -> np.ndarray:
    """``item``'s vector: :meth:`MemoryRepository.prepare` gives every item one."""
    if item.vector is None:
        raise ValueError("a memory is written as MemoryRepository.prepare returned it, with its vector")
    return item.vector

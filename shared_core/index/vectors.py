"""The vector side of search on SQLite.

Vectors live in ``memory_vec`` (a sqlite-vec ``vec0`` table, cosine distance): that is
the durable copy, written in the same transaction as the row and its FTS entry. Two
ways to search them:

* ``sqlite-vec``: exact KNN inside SQLite, with the scope as a ``chunk_rowid IN
  (subquery)`` constraint, so filters apply before top-k. No memory cost; about
  60-80 ms at 100k rows on a small machine.
* ``mirror`` (the default): an in-process copy of the vectors as a float32 matrix plus
  their sign bits (binary quantisation, :mod:`.mirror`). Small scopes are scanned exactly; large ones
  are ranked by Hamming distance on the bits, and the best ``rerank_pool`` are then
  scored exactly, which finds the true top-k for well over 95 % of queries on real
  sentence embeddings at a few milliseconds per 100k rows.

The mirror follows other connections through ``index_log``, a table every change to a
chunk appends to (by trigger): before each search it reads the log past the last
sequence number it applied, refreshes those rows' state, and re-reads a vector only
when the row's embedding stamp changed. Its own writes reach it after commit, never
before, so a rolled-back write cannot leak into search.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..config import DatabaseConfig, SearchConfig
from ..db import Backend, Database
from ..db.postgres import PostgresDatabase
from .mirror import SEVERAL, SMALL_MIRROR, Mirror, dot, least_centred, sign_bit_bound, sign_code
from .protocols import RowState, VectorIndex, epoch_of, stamp_of
from .scope import Scope

__all__ = ["SqliteVectorIndex", "vector_index_for"]

_VEC0_MAX_K = 4096  # sqlite-vec refuses a KNN query for more neighbours
_BATCH = 500  # rowids per IN (...) list
_VEC_CLEARS_ON_DELETE = (0, 1, 9)  # the first sqlite-vec seen to zero a deleted vector's bytes
_CPUS = os.cpu_count() or 1  # one: no worker thread for the vector scan
_STATE_COLUMNS = "chunk_rowid, namespace, kind, expires_at, valid_to IS NULL, embedded_at, content_hash"
_JOINED_STATE_COLUMNS = ", ".join(f"c.{column}" for column in _STATE_COLUMNS.split(", "))


def _state(row: Sequence[Any]) -> RowState:
    return RowState(row[1], row[2], epoch_of(row[3]), bool(row[4]), stamp_of(row[5], row[6]))


_pool: ThreadPoolExecutor | None = None


def _scan_pool() -> ThreadPoolExecutor:
    """The threads that run vector scans beside keyword queries (numpy and SQLite both let go
    of the GIL while they work), created on first use and again in a forked child."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=min(4, _CPUS), thread_name_prefix="openkoi-vector-scan")
    return _pool


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _vec_version(db: Any) -> tuple[int, ...]:
    """sqlite-vec's version as numbers (``v0.1.9`` -> (0, 1, 9)); (0,) when it cannot be read."""
    text = str(db.scalar("SELECT vec_version()") or "").lstrip("v").split("-")[0]
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return (0,)


def vector_index_for(db: Backend, dims: int, config: SearchConfig,
                     database: DatabaseConfig | None = None) -> VectorIndex:
    """The vector index for ``db``'s backend: :class:`SqliteVectorIndex` or ``PgVectorIndex``
    (``database``: the ``[database]`` section, for pgvector's HNSW settings)."""
    if isinstance(db, Database):
        return SqliteVectorIndex(db, dims, config)
    if isinstance(db, PostgresDatabase):
        from .vectors_pg import PgVectorIndex

        return PgVectorIndex(db, dims, config, database)
    raise TypeError(f"no vector index for a {type(db).__name__} backend")


class SqliteVectorIndex:
    """Reads and writes ``memory_vec``; answers KNN queries within a scope."""

    inline = False  # vectors are rows of their own table, written after the chunk row

    def __init__(self, db: Database, dims: int, config: SearchConfig) -> None:
        self.db = db
        self.dims = dims
        self.config = config
        self._mirror: Mirror | None = None
        self._last_seq = 0
        self._synced_at: tuple[int, int] | None = None  # the db.snapshot the mirror last caught up with

    # -- writes (inside the caller's transaction) -----------------------------------------

    def put(self, rowid: int, vector: np.ndarray, state: RowState, *, replace: bool) -> None:
        if replace:
            self.db.execute("DELETE FROM memory_vec WHERE chunk_rowid = ?", (rowid,))
        self.db.execute(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)", (rowid, vector.tobytes())
        )
        if self._mirror is not None:
            mirror = self._mirror
            self.db.after_commit(lambda: mirror.upsert(rowid, state, vector))

    def put_many(self, rows: list[tuple[int, np.ndarray, RowState]]) -> None:
        """Insert vectors for new rows (no replace) in one statement batch."""
        self.db.executemany(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)",
            [(rowid, vector.tobytes()) for rowid, vector, _ in rows],
        )
        if self._mirror is not None:
            mirror = self._mirror

            def apply() -> None:
                for rowid, vector, state in rows:
                    mirror.upsert(rowid, state, vector)

            self.db.after_commit(apply)

    def delete(self, rowids: Iterable[int]) -> None:
        ids = list(rowids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self.db.execute(
                f"DELETE FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})", part
            )
        if self._mirror is not None and ids:
            mirror = self._mirror

            def apply() -> None:
                for rowid in ids:
                    mirror.remove(rowid)

            self.db.after_commit(apply)

    def reset(self) -> None:
        """Forget the mirror (after the vector table was rebuilt, e.g. by a re-embed)."""
        self._mirror = None
        self._last_seq = 0

    def ensure_ready(self) -> None:
        """Nothing to prepare: migration 2 created ``memory_vec`` for the embedder's dimensions."""

    def purge_deleted(self) -> None:
        """Make sure no deleted vector's bytes stay in ``memory_vec``'s chunks.

        sqlite-vec 0.1.9 and later zero a vector when it is deleted (tests/core/test_erase.py looks
        for an erased vector's bytes in the files), so there is nothing to do. Older versions only
        mark it invalid: the live vectors are copied out and back (2 s at 100k inside the erase).
        """
        if _vec_version(self.db) >= _VEC_CLEARS_ON_DELETE:
            return
        db = self.db
        db.execute("CREATE TEMP TABLE IF NOT EXISTS openkoi_vec_copy (chunk_rowid INTEGER PRIMARY KEY, embedding BLOB)")
        db.execute("DELETE FROM temp.openkoi_vec_copy")
        db.execute("INSERT INTO temp.openkoi_vec_copy SELECT chunk_rowid, embedding FROM memory_vec")
        self._recreate(self.dims)
        db.execute("INSERT INTO memory_vec (chunk_rowid, embedding) SELECT chunk_rowid, embedding FROM temp.openkoi_vec_copy")
        db.execute("DROP TABLE temp.openkoi_vec_copy")

    def rebuild(self, dims: int) -> None:
        """Start re-embedding with ``dims`` (inside a transaction): an empty vector table of that size."""
        self._recreate(dims)
        self.dims = int(dims)

    def _recreate(self, dims: int) -> None:
        self.db.execute("DROP TABLE memory_vec")
        self.db.execute(
            f"CREATE VIRTUAL TABLE memory_vec USING vec0(chunk_rowid INTEGER PRIMARY KEY, "
            f"embedding float[{int(dims)}] distance_metric=cosine, chunk_size=256)"  # as migration 43 made it
        )

    def write_all(self, rows: list[tuple[int, np.ndarray]]) -> None:
        """Vectors for rows that have none (after :meth:`rebuild`)."""
        self.db.executemany(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)", [(r, v.tobytes()) for r, v in rows]
        )

    # -- reads ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The index as ``search.vector_index`` names it (``auto``, ``mirror`` or ``sqlite-vec``)."""
        return self.config.vector_index

    @property
    def uses_mirror(self) -> bool:
        return self.config.vector_index in ("auto", "mirror")

    def search(
        self, query: np.ndarray, k: int, scope: Scope, *, now: float
    ) -> list[tuple[int, float]]:
        """(chunk_rowid, cosine similarity), best first: the top ``k`` within ``scope``."""
        if k <= 0:
            return []
        if not self.uses_mirror or (self._mirror is None and self.db.has_uncommitted_writes):
            # never build the mirror from a transaction's uncommitted state: ask SQLite directly
            return self._search_sqlite_vec(query, k, scope)
        mirror = self.sync()
        allowed = None
        if scope.needs_row_filter:
            allowed = np.zeros(mirror.size, dtype=bool)
            for rowid in self._rowids_in(scope):
                slot = mirror.slot.get(rowid)
                if slot is not None:
                    allowed[slot] = True
        return self._scan(mirror, query, k, scope, now, allowed)

    def search_in_background(self, query: np.ndarray, k: int, scope: Scope, *, now: float) -> Future | None:
        """:meth:`search` on a worker thread, for the caller to overlap with its keyword query,
        or None when that would not pay (a small mirror, no mirror, a scope that needs the
        table): then call :meth:`search`. The caller waits for the result before it lets go
        of the store's lock, so no write can change the mirror during the scan."""
        if (k <= 0 or _CPUS < 2 or not self.uses_mirror or scope.needs_row_filter or self._mirror is None
                or not self.config.parallel_scan_rows or self._mirror.size < self.config.parallel_scan_rows
                or self.db.has_uncommitted_writes):
            return None
        return _scan_pool().submit(self._scan, self.sync(), query, k, scope, now, None)

    def _scan(self, mirror: Mirror, query: np.ndarray, k: int, scope: Scope, now: float,
              allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The top ``k`` of the mirror's rows in ``scope`` (and ``allowed``, when given): numpy only."""
        mask = mirror.mask(scope, now)
        if allowed is not None:
            mask &= allowed
        slots = np.flatnonzero(mask)
        if slots.size == 0:
            return []
        if slots.size <= max(self.config.exact_scan_rows, k):
            if slots.size * 2 > mirror.size:
                sims = dot(mirror.vectors[: mirror.size], query)[slots]
            else:
                sims = dot(mirror.vectors[slots], query)
            candidates = slots
        else:
            distances = mirror.hamming(slots, sign_code(query, mirror.words))
            pool = min(slots.size, max(self.config.rerank_pool, 20 * k))
            nearest = np.argpartition(distances, pool - 1)[:pool]
            candidates = slots[nearest]
            sims = dot(mirror.vectors[candidates], query)
        top = min(k, sims.size)
        best = np.argpartition(-sims, top - 1)[:top]
        best = best[np.argsort(-sims[best], kind="stable")]
        return [(int(mirror.rowids[candidates[i]]), float(sims[i])) for i in best]

    def same_content(self, content_hash: str, scope: Scope, *, now: float) -> tuple[bool, int | None]:
        """(True, a row in ``scope`` whose content hash is ``content_hash``, or None if there is none),
        or (False, None) when the mirror cannot tell (none loaded, or several rows with that content):
        then ask the table. Rows without a vector are not in the mirror; every add stores one."""
        if not self.uses_mirror or scope.needs_row_filter or (self._mirror is None and self.db.has_uncommitted_writes):
            return False, None
        mirror = self.sync()
        held = mirror.by_content.get(content_hash)
        if held is None:
            return True, None
        slot = mirror.slot.get(held)
        if held == SEVERAL or slot is None:
            return False, None
        return True, held if mirror.mask(scope, now, np.array([slot]))[0] else None

    def best_above(
        self, query: np.ndarray, threshold: float, scope: Scope, *, now: float
    ) -> tuple[int, float] | None:
        """The most similar row in ``scope`` if its cosine similarity exceeds ``threshold``, else None.

        The near-duplicate check of every ``add``. A row that similar differs from the query in
        few sign bits (:func:`centred_threshold`, :func:`sign_bit_bound`), so the mirror compares
        the first two words of every code with the bound for 128 bits (about a third of the work
        of a full Hamming scan), then the rest of the code for the few rows that pass with the
        bound for the whole code, and scores the survivors in scope exactly (the ``rerank_pool``
        nearest, should more be left). On LoCoMo texts, pairs above 0.9 differed in at most 26 of
        the first 128 bits (bound 43 and up) with all-MiniLM-L6-v2 and with hashing vectors;
        tests/core/test_near_duplicates.py checks the answers against an exact scan.
        """
        mirror = None
        if self.uses_mirror and not scope.needs_row_filter and not (
            self._mirror is None and self.db.has_uncommitted_writes
        ):
            mirror = self.sync()
        centred = code = None
        if mirror is not None:
            distance, code = mirror.centred(query)
            centred = least_centred(threshold, distance, mirror.centre_norm)
        head_bound = sign_bit_bound(centred, 64 * mirror.head) if mirror is not None and centred is not None else None
        if mirror is None or code is None or centred is None or head_bound is None or mirror.size <= SMALL_MIRROR:
            best = self.search(query, 1, scope, now=now)
            return best[0] if best and best[0][1] > threshold else None
        bound = sign_bit_bound(centred, 64 * mirror.words) or 64 * mirror.words
        near, distances = mirror.near_centred(code, head_bound, bound)
        if near.size:
            in_scope = mirror.mask(scope, now, near)
            near, distances = near[in_scope], distances[in_scope]
        if near.size == 0:
            return None
        if near.size > self.config.rerank_pool:
            near = near[np.argpartition(distances, self.config.rerank_pool - 1)[: self.config.rerank_pool]]
        sims = mirror.scores(near, query)
        i = int(np.argmax(sims))
        return (int(mirror.rowids[near[i]]), float(sims[i])) if sims[i] > threshold else None

    def similarities(self, query: np.ndarray, rowids: Sequence[int]) -> dict[int, float]:
        """Exact cosine similarity of ``query`` to each of ``rowids`` (rows without a vector are left out)."""
        if not rowids:
            return {}
        if self.uses_mirror and not (self._mirror is None and self.db.has_uncommitted_writes):
            mirror = self.sync()
            pairs = [(r, mirror.slot[r]) for r in rowids if r in mirror.slot]
            if not pairs:
                return {}
            slots = np.fromiter((s for _, s in pairs), dtype=np.int64, count=len(pairs))
            sims = dot(mirror.vectors[slots], query)
            return {r: float(s) for (r, _), s in zip(pairs, sims, strict=False)}
        out: dict[int, float] = {}
        blob = query.astype(np.float32).tobytes()
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            for rowid, distance in self.db.query(
                "SELECT chunk_rowid, vec_distance_cosine(embedding, ?) FROM memory_vec "
                f"WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                (blob, *part),
            ):
                out[int(rowid)] = 1.0 - float(distance)
        return out

    def vectors_of(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors of some rows."""
        out: dict[int, np.ndarray] = {}
        if self.uses_mirror and self._mirror is not None and not self.db.has_uncommitted_writes:
            mirror = self.sync()
            missing = []
            for rowid in rowids:
                slot = mirror.slot.get(rowid)
                if slot is None:
                    missing.append(rowid)
                else:
                    out[rowid] = mirror.vectors[slot].copy()
            rowids = missing
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            for rowid, blob in self.db.query(
                f"SELECT chunk_rowid, embedding FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                part,
            ):
                out[int(rowid)] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def _rowids_in(self, scope: Scope) -> list[int]:
        sql, params = scope.sql("c")
        return [int(r[0]) for r in self.db.query(f"SELECT c.chunk_rowid FROM memory_chunks c WHERE {sql}", params)]

    def _search_sqlite_vec(self, query: np.ndarray, k: int, scope: Scope) -> list[tuple[int, float]]:
        sql, params = scope.sql("c")
        blob = query.astype(np.float32).tobytes()
        if k > _VEC0_MAX_K:  # past what vec0's KNN takes: the same exact answer from a scan of the scope
            rows = self.db.query(
                "SELECT v.chunk_rowid, vec_distance_cosine(v.embedding, ?) AS distance FROM memory_vec v "
                f"JOIN memory_chunks c ON c.chunk_rowid = v.chunk_rowid WHERE {sql} ORDER BY distance LIMIT ?",
                (blob, *params, k),
            )
        else:
            rows = self.db.query(
                "SELECT chunk_rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ? "
                f"AND chunk_rowid IN (SELECT c.chunk_rowid FROM memory_chunks c WHERE {sql}) ORDER BY distance",
                (blob, k, *params),
            )
        return [(int(rowid), 1.0 - float(distance)) for rowid, distance in rows]

    # -- keeping the mirror current -------------------------------------------------------

    def sync(self) -> Mirror:
        """Load the mirror on first use; afterwards apply what ``index_log`` says changed."""
        mirror = self._mirror
        if mirror is None:
            return self._full_load()
        if self.db.has_uncommitted_writes:
            # this transaction's writes are in the log; they reach the mirror after commit
            return mirror
        snapshot = self.db.snapshot
        if snapshot is not None and snapshot == self._synced_at:
            return mirror  # caught up earlier in this write transaction: no one else can have written since
        # the log past our position and each changed row's state, in one statement (one snapshot); a
        # log longer than the limit (another process's bulk load, say) is cheaper to reload in full
        # (the limit is written into the SQL, rounded so the text changes rarely: SQLite ran this
        # statement in 35 us with `LIMIT ?` and 13 with a literal)
        limit = max(5000, -(-mirror.size // 20 // 5000) * 5000)
        log = self.db.query(
            f"SELECT l.seq, l.chunk_rowid, {_JOINED_STATE_COLUMNS} FROM index_log l LEFT JOIN memory_chunks c "
            f"ON c.chunk_rowid = l.chunk_rowid WHERE l.seq > ? ORDER BY l.seq LIMIT {limit + 1}",
            (self._last_seq,),
        )
        if not log:
            self._synced_at = snapshot
            return mirror
        # sequence numbers have no gaps (AUTOINCREMENT; a rollback takes its numbers back) except where
        # maintenance trimmed the log's old end: a first number past the next one means we missed some
        if int(log[0][0]) != self._last_seq + 1 or len(log) > limit:
            return self._full_load()
        newest = int(log[-1][0])
        changed = list(dict.fromkeys(int(r[1]) for r in log))
        states = {int(r[1]): _state(r[2:]) for r in log if r[2] is not None}  # a deleted row joins nothing
        stale = [r for r, s in states.items() if mirror.stamps.get(r) != s.stamp]
        fetched: dict[int, np.ndarray] = {}
        for start in range(0, len(stale), _BATCH):
            part = stale[start : start + _BATCH]
            for rowid, blob in self.db.query(
                f"SELECT chunk_rowid, embedding FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                part,
            ):
                fetched[int(rowid)] = np.frombuffer(blob, dtype=np.float32)
        for rowid in changed:
            state = states.get(rowid)
            if state is None:
                mirror.remove(rowid)
            elif rowid in fetched:
                mirror.upsert(rowid, state, fetched[rowid])
            elif rowid in stale:
                mirror.remove(rowid)  # a row without a vector is not vector-searchable
            else:
                mirror.upsert(rowid, state, None)
        self._last_seq = newest
        self._synced_at = snapshot
        return mirror

    def _full_load(self) -> Mirror:
        db = self.db
        own_snapshot = not db.conn.in_transaction
        with db.lock:
            if own_snapshot:
                db.execute("BEGIN")  # one read snapshot for the log position and the rows
            try:
                newest = int(db.scalar("SELECT max(seq) FROM index_log") or 0)
                vectors = db.query("SELECT chunk_rowid, embedding FROM memory_vec")
                states = {int(r[0]): _state(r) for r in db.query(f"SELECT {_STATE_COLUMNS} FROM memory_chunks")}
            finally:
                if own_snapshot:
                    db.execute("COMMIT")
        keep = [(int(rowid), blob) for rowid, blob in vectors if int(rowid) in states]
        mirror = Mirror(self.dims)
        if keep:
            rowids = np.fromiter((r for r, _ in keep), dtype=np.int64, count=len(keep))
            matrix = np.frombuffer(b"".join(b for _, b in keep), dtype=np.float32).reshape(len(keep), self.dims)
            mirror.bulk_load(rowids, [states[r] for r, _ in keep], matrix)
        self._mirror = mirror
        self._last_seq = newest
        self._synced_at = db.snapshot
        return mirror

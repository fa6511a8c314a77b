"""The vector side of search on SQLite.

Vectors live in ``memory_vec`` (a sqlite-vec ``vec0`` table, cosine distance): that is
the durable copy, written in the same transaction as the row and its FTS entry. Two
ways to search them:

* ``sqlite-vec``: exact KNN inside SQLite, with the scope as a ``chunk_rowid IN
  (subquery)`` constraint, so filters apply before top-k. No memory cost; about
  60-80 ms at 100k rows on a small machine.
* ``mirror`` (the default): the vectors' sign bits (binary quantisation), int8 and float32
  copies and filter columns (:mod:`.mirror`), kept in the memory's vector file and mapped by
  every process that searches (:mod:`.vector_file`, :mod:`.mirror_keeper`). Small scopes are
  scored in int8; large ones are ranked by the bits whose sign differs from the query's, each
  weighted by the query's component there (:func:`.codes.weight_planes`), and the best
  ``rerank_pool`` scored in int8; the final candidates are scored exactly.

The mirror follows other connections through ``index_log``, a table every change to a
chunk appends to (by trigger): before each search it reads the log past the last
sequence number it applied, refreshes those rows' state, and re-reads a vector only
when the row's embedding stamp changed. Its own writes reach it after commit, never
before, so a rolled-back write cannot leak into search.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from ..config import DatabaseConfig, SearchConfig
from ..db import Backend, Database
from ..db.postgres import PostgresDatabase
from . import workers
from .codes import least_centred, sign_bit_bound, sign_code, weight_planes
from .mirror import SMALL_MIRROR, Mirror
from .mirror_keeper import MirrorKeeper
from .protocols import RowState, VectorIndex
from .scope import Scope

__all__ = ["SqliteVectorIndex", "vector_index_for"]

_VEC0_MAX_K = 4096  # sqlite-vec refuses a KNN query for more neighbours
_BATCH = 500  # rowids per IN (...) list
_VEC_CLEARS_ON_DELETE = (0, 1, 9)  # the first sqlite-vec seen to zero a deleted vector's bytes
_EXACT_EXTRA = 16  # int8-scored candidates past k that are scored exactly: int8 can swap close neighbours
_EXACT_MAX = 1024  # sign-ranked candidates of a file-backed index whose int8 rows are read
_FILE_DIRECT_ROWS = 4096  # a scope this small is scored in int8 whole (each row a pread from the vector file)
_NEAR_MARGIN = 0.02  # int8 scores this far under a near-duplicate threshold are checked exactly


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
        self._keeper = MirrorKeeper(db, dims)
        self._rebuilt = False  # rebuild() emptied memory_vec: reset() drops the vector file
        # (the mirror's rows, their number then, live rows per namespace): see _namespace_slots
        self._ns_sizes: tuple[object, int, np.ndarray] | None = None

    @property
    def _mirror(self) -> Mirror | None:
        return self._keeper.mirror

    # -- writes (inside the caller's transaction) -----------------------------------------

    def put(self, rowid: int, vector: np.ndarray, state: RowState, *, replace: bool) -> None:
        if replace:
            self.db.execute("DELETE FROM memory_vec WHERE chunk_rowid = ?", (rowid,))
        self.db.execute(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)", (rowid, vector.tobytes())
        )
        self._after_commit([(rowid, vector, state)])

    def put_many(self, rows: list[tuple[int, np.ndarray, RowState]]) -> None:
        """Insert vectors for new rows (no replace) in one statement batch."""
        self.db.executemany(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)",
            [(rowid, vector.tobytes()) for rowid, vector, _ in rows],
        )
        self._after_commit(rows)

    def delete(self, rowids: Iterable[int]) -> None:
        ids = list(rowids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self.db.execute(
                f"DELETE FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})", part
            )
        if ids:
            self._after_commit([], ids)

    def _after_commit(self, rows: list[tuple[int, np.ndarray, RowState]], removed: Sequence[int] = ()) -> None:
        """Own writes reach the mirror (and through it the vector file) once committed."""
        keeper = self._keeper
        if self.uses_mirror and (keeper.mirror is not None or keeper.writable):
            self.db.after_commit(lambda: keeper.apply_own(rows, removed))

    def reset(self) -> None:
        """After the vector table was rewritten (a re-embed: the vector file goes too) or rows were
        erased (the file is scrubbed of them)."""
        if self._rebuilt:
            self._keeper.forget()
            self._keeper = MirrorKeeper(self.db, self.dims)
            self._rebuilt = False
        else:
            self._keeper.scrub()
        self._ns_sizes = None

    def close(self) -> None:
        """Sync the vector file, so a crash of the machine later does not make it untrusted."""
        self._keeper.close()

    def ensure_ready(self) -> None:
        """Nothing to prepare: migration 2 created ``memory_vec`` for the embedder's dimensions."""

    def purge_deleted(self) -> None:
        """Make sure no deleted vector's bytes stay in ``memory_vec``'s chunks.

        sqlite-vec 0.1.9 and later zero a vector when it is deleted (tests/core/test_erase.py looks
        for an erased vector's bytes in the files), so there is nothing to do. Older versions only
        mark it invalid: the live vectors are copied out and back (2 s at 100k inside the erase).
        The vector file is scrubbed by :meth:`reset`, after the erase commits.
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
        self._rebuilt = True

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

    def _usable(self) -> bool:
        """Whether to answer from the mirror: never build it from a transaction's uncommitted state."""
        return self.uses_mirror and not (self._keeper.mirror is None and self.db.has_uncommitted_writes)

    def search(
        self, query: np.ndarray, k: int, scope: Scope, *, now: float
    ) -> list[tuple[int, float]]:
        """(chunk_rowid, cosine similarity), best first: the top ``k`` within ``scope``."""
        if k <= 0:
            return []
        if not self._usable():
            return self._search_sqlite_vec(query, k, scope)
        mirror = self.sync()
        allowed = None
        if scope.needs_row_filter:
            slots = mirror.slots_of(np.array(self._rowids_in(scope), dtype=np.int64))
            allowed = np.zeros(mirror.size, dtype=bool)
            allowed[slots[slots >= 0]] = True
        return self._scan(mirror, query, k, scope, now, allowed)

    def search_in_background(self, query: np.ndarray, k: int, scope: Scope, *, now: float) -> Future | None:
        """:meth:`search` on a worker thread, for the caller to overlap with its keyword query,
        or None when that would not pay (a small mirror, no mirror, a scope that needs the
        table): then call :meth:`search`. The caller waits for the result before it lets go
        of the store's lock, so no write can change the mirror during the scan."""
        mirror = self._keeper.mirror
        if (k <= 0 or not self.uses_mirror or scope.needs_row_filter or mirror is None
                or not self.config.parallel_scan_rows or mirror.size < self.config.parallel_scan_rows
                or self.db.has_uncommitted_writes):
            return None
        return workers.submit(self._scan, self.sync(), query, k, scope, now, None)

    def _pool(self, k: int, rows: int) -> int:
        """How many of the nearest codes are scored again: ``rerank_pool``, at least 20 x k, and a
        128th of the rows searched. Sign bits rank worse the more rows there are: recall@10 of
        hashing vectors at 1M was 0.85 with the best 1,000 by Hamming distance scored exactly, 0.95
        with 4,000 and 0.97 with 8,000. A file-backed index ranks them by the query against their
        sign bits and scores the best 1,024 of them in int8: 0.966 at 1M by Hamming distance, 0.978
        with its bits weighted by the query (:func:`.codes.weight_planes`); the default (static)
        embedder's vectors, which lean one way, 0.920 and 0.958 (0.853 and 0.982 at 100k)."""
        return max(self.config.rerank_pool, 20 * k, rows // 128)

    def _scan(self, mirror: Mirror, query: np.ndarray, k: int, scope: Scope, now: float,
              allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The top ``k`` of the mirror's rows in ``scope`` (and ``allowed``, when given): numpy only."""
        mask = mirror.mask(scope, now)
        if allowed is not None:
            mask &= allowed
        rows = int(np.count_nonzero(mask))
        if rows == 0:
            return []
        if rows <= k + _EXACT_EXTRA:
            chosen = np.flatnonzero(mask)
        else:
            direct = min(self.config.exact_scan_rows, _FILE_DIRECT_ROWS) if mirror.file_backed else self.config.exact_scan_rows
            window = k + _EXACT_EXTRA
            if rows <= max(direct, k):
                candidates = np.flatnonzero(mask)
                approx = mirror.approx(candidates, query)
            else:
                candidates = mirror.nearest(mask, sign_code(query, mirror.words), min(rows, self._pool(k, rows)),
                                            weight_planes(query, mirror.words))
                if mirror.file_backed:
                    # the int8 rows of thousands of candidates would make most of their column resident
                    # (a read fault maps its neighbours too: 460 MB at 1M): rank them by the query against
                    # their sign bits instead, and read the int8 rows of the best 1,024 only
                    signed = mirror.signed(candidates, query)
                    keep = min(candidates.size, max(window, _EXACT_MAX))
                    candidates = candidates[np.argpartition(-signed, keep - 1)[:keep]]
                    approx = mirror.approx(candidates, query, read=True)
                else:
                    approx = mirror.approx(candidates, query)
            window = min(candidates.size, window)
            chosen = candidates[np.argpartition(-approx, window - 1)[:window]]
        sims = mirror.scores(chosen, query)
        top = min(k, sims.size)
        best = np.argpartition(-sims, top - 1)[:top]
        best = best[np.argsort(-sims[best], kind="stable")]
        return [(int(mirror.rowids[chosen[i]]), float(sims[i])) for i in best]

    def same_content(self, content_hash: str, scope: Scope, *, now: float) -> tuple[bool, int | None]:
        """Always (False, None): the table answers, through its (namespace, content_hash) index."""
        return False, None

    def above(self, query: np.ndarray, threshold: float, scope: Scope, *, now: float,
              limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` rows in ``scope`` whose cosine similarity exceeds ``threshold``, best first.

        The near-duplicate check of every ``add``: the rows it scores exactly include every row
        that can be above the threshold, so an ``add`` gets its near-duplicates without searching
        the scope after it (38 ms at a million rows). In a namespace that holds a small part of the
        memory, its rows (from the table's index) are scored exactly. Otherwise a row that
        similar differs from the query in few sign bits (:func:`centred_threshold`,
        :func:`sign_bit_bound`), so the mirror compares the first two words of every code with
        the bound for 128 bits (about a third of the work of a full Hamming scan), then the rest
        of the code for the few rows that pass with the bound for the whole code, and scores the
        survivors in scope exactly (the ``rerank_pool`` nearest, should more be left). On LoCoMo
        texts, pairs above 0.9 differed in at most 26 of the first 128 bits (bound 43 and up)
        with all-MiniLM-L6-v2 and with hashing vectors; tests/core/test_near_duplicates.py
        checks the answers against an exact scan.
        """
        mirror = self.sync() if self._usable() and not scope.needs_row_filter else None
        centred = code = None
        if mirror is not None:
            distance, code = mirror.centred(query)
            centred = least_centred(threshold, distance, mirror.centre_norm)
        head_bound = sign_bit_bound(centred, 64 * mirror.head) if mirror is not None and centred is not None else None
        if mirror is None or code is None or centred is None or head_bound is None or mirror.size <= SMALL_MIRROR:
            return [(rowid, sim) for rowid, sim in self.search(query, limit, scope, now=now) if sim > threshold]
        near = self._namespace_slots(mirror, scope)
        if near is None:
            bound = sign_bit_bound(centred, 64 * mirror.words) or 64 * mirror.words
            near, distances = mirror.near_centred(code, head_bound, bound)
            if near.size:
                in_scope = mirror.mask(scope, now, near)
                near, distances = near[in_scope], distances[in_scope]
            if near.size > self.config.rerank_pool:
                near = near[np.argpartition(distances, self.config.rerank_pool - 1)[: self.config.rerank_pool]]
        else:
            near = near[mirror.mask(scope, now, near)]
            if near.size > self.config.rerank_pool:  # int8 first: the float rows of a few only
                approx = mirror.approx(near, query)
                near = near[approx > threshold - _NEAR_MARGIN]
        if near.size == 0:
            return []
        sims = mirror.scores(near, query)
        hits = np.flatnonzero(sims > threshold)
        hits = hits[np.argsort(-sims[hits], kind="stable")][:limit]
        return [(int(mirror.rowids[near[i]]), float(sims[i])) for i in hits]

    def _namespace_slots(self, mirror: Mirror, scope: Scope) -> np.ndarray | None:
        """The slots of ``scope``'s one namespace when it holds under a sixteenth of the mirror (and
        few rows): read from the table's (namespace, kind) index. None: scan the whole mirror."""
        if scope.namespaces is None or len(scope.namespaces) != 1 or scope.namespace_prefix:
            return None
        known = self._ns_sizes
        # counted again when the rows grow by an eighth or are rebuilt; not when a save maps the same
        # file afresh (a new mirror object every 256 adds; counting a million rows took 3-6 ms)
        rows = mirror.generation if mirror.file_backed else mirror
        if known is None or known[0] != rows or mirror.size > known[1] + known[1] // 8:
            live = mirror.alive[: mirror.size]
            sizes = np.bincount(mirror.ns[: mirror.size][live], minlength=len(mirror.ns_names))
            known = self._ns_sizes = (rows, mirror.size, sizes)
        code = mirror.ns_codes.get(scope.namespaces[0])
        held = int(known[2][code]) if code is not None and code < known[2].size else 0
        if held > min(mirror.size // 16, self.config.exact_scan_rows):
            return None
        slots = mirror.slots_of(np.array(self._rowids_in(scope), dtype=np.int64))
        return slots[slots >= 0]

    def similarities(self, query: np.ndarray, rowids: Sequence[int]) -> dict[int, float]:
        """Exact cosine similarity of ``query`` to each of ``rowids`` (rows without a vector are left out)."""
        if not rowids:
            return {}
        if self._usable():
            mirror = self.sync()
            slots = mirror.slots_of(np.array(rowids, dtype=np.int64))
            held = slots >= 0
            held[held] &= mirror.alive[slots[held]]
            sims = mirror.scores(slots[held], query)
            return {int(r): float(s) for r, s in zip(np.array(rowids)[held], sims, strict=True)}
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
        if self.uses_mirror and self._keeper.mirror is not None and not self.db.has_uncommitted_writes:
            mirror = self.sync()
            missing = []
            for rowid in rowids:
                slot = mirror.slot_of(rowid)
                if slot is None or not mirror.alive[slot]:
                    missing.append(rowid)
                else:
                    out[rowid] = np.array(mirror.rows("vectors", np.array([slot]))[0])
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

    def sync(self) -> Mirror:
        """The mirror, loaded on first use and caught up with ``index_log`` (:class:`.mirror_keeper.MirrorKeeper`)."""
        return self._keeper.sync()

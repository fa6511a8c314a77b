"""The vector side of search on PostgreSQL: pgvector, HNSW with cosine distance.

Vectors live in ``memory_chunks.embedding`` (written in the same statement or transaction
as the row, so row, keyword index and vector change together). The column accepts any
dimensions; the store's embedder fixes them through the HNSW index, an expression index
on ``embedding::vector(<dims>)`` over the rows with vectors of that size, created when the
store opens (``ensure_ready``) and rebuilt when the embedder changes.

A filtered HNSW scan can return fewer than k rows (it collects ``hnsw.ef_search``
candidates, then filters them), and a filtered search must return k results when k
match. So:

* a scope with at most ``database.exact_scan_rows`` rows (2,000) is scanned exactly (an
  ORDER BY the planner cannot serve from the index, over the scope's rows);
* a larger scope asks the index with ``ef_search`` = ``database.hnsw_ef_search`` (at least
  k), and when the filter leaves fewer than k, asks again with four times the candidates
  (up to pgvector's 1,000), then falls back to the exact scan. A scope found bigger than
  the exact scan's limit is taken as big for a minute, without counting it again.

A hybrid search runs this side on a worker thread and another pooled connection, beside the
keyword side's query (:meth:`PgVectorIndex.search_in_background`). A big ``add_many`` drops the
index and builds it once after the load (:meth:`PgVectorIndex.defer_for_load`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..config import DatabaseConfig, SearchConfig
from ..db.postgres import PostgresDatabase
from ..errors import StorageError
from .protocols import RowState
from .scope import Scope

__all__ = ["PgVectorIndex"]

_MAX_EF = 1000  # pgvector's limit for hnsw.ef_search
# pgvector's in-memory HNSW graph takes about 4 bytes a dimension + 32 a unit of m + this, a row
# (the row's vector, its neighbours at the bottom layer, the rest; measured with pgvector 0.6)
_GRAPH_ROW_BYTES = 280
_BIG_SCOPE_S = 60  # how long a scope found too big for the exact scan is taken as big without counting again
_SIZE_STATISTICS = "memory_chunks_vector_dims"  # extended statistics of vector_dims(embedding)
_INDEXES_SQL = ("SELECT indexname::text FROM pg_indexes WHERE schemaname = ? AND tablename = 'memory_chunks' "
                "AND indexname LIKE 'idx_chunks_embedding_%'")  # the HNSW indexes, one per size there was
_WORKERS: list[ThreadPoolExecutor] = []
_WORKERS_LOCK = threading.Lock()
logger = logging.getLogger("openkoi.store")


def _workers() -> ThreadPoolExecutor:
    """The threads that run vector searches beside the keyword side (shared by every memory of the process)."""
    with _WORKERS_LOCK:
        if not _WORKERS:
            _WORKERS.append(ThreadPoolExecutor(max_workers=4, thread_name_prefix="openkoi-pgvector"))
        return _WORKERS[0]


def _forget_workers() -> None:
    """In a forked child: the parent's threads do not exist there, so its executor would never run a task."""
    global _WORKERS_LOCK
    _WORKERS.clear()
    _WORKERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


class PgVectorIndex:
    """Reads and writes ``memory_chunks.embedding``; answers KNN queries within a scope."""

    inline = True  # the vector is a column of the row: INSERTs carry it
    uses_mirror = False
    name = "pgvector-hnsw"  # what store.stats() reports as the vector index

    def __init__(self, db: PostgresDatabase, dims: int, config: SearchConfig,
                 database: DatabaseConfig | None = None) -> None:
        self.db = db
        self.dims = int(dims)
        self.config = config
        self.database = database or DatabaseConfig()
        self._big: dict[tuple[Any, ...], float] = {}  # scopes found bigger than the exact scan's limit, and when
        from psycopg.pq import TransactionStatus

        self._idle = TransactionStatus.IDLE

    @property
    def index_name(self) -> str:
        return f"idx_chunks_embedding_{self.dims}"

    @property
    def expression(self) -> str:
        """The indexed expression; ORDER BY it (with <=>) to use the HNSW index."""
        return f"c.embedding::vector({self.dims})"

    @property
    def sized(self) -> str:
        """The HNSW index's predicate (rows with a vector of this size); a query names it to use the index."""
        return f"vector_dims(c.embedding) = {self.dims}"

    def ensure_ready(self) -> None:
        """Create the HNSW index for this embedder's dimensions, dropping any for others."""
        if self.db.read_only:
            return
        names, sizes_described = self.db.query(  # one round trip for the two questions of every open
            f"SELECT ARRAY({_INDEXES_SQL}), current_setting('server_version_num')::int < 140000 OR EXISTS "
            "(SELECT 1 FROM pg_statistic_ext WHERE stxname = ? AND stxnamespace = CAST(? AS regnamespace))",
            (self.db.schema, _SIZE_STATISTICS, self.db.schema))[0]
        existing = set(names)
        if not sizes_described:  # (PostgreSQL 14 and later) see _describe_sizes
            self._describe_sizes()
        if existing == {self.index_name}:
            return
        with self.db.transaction():
            for name in existing - {self.index_name}:
                self.db.execute(f'DROP INDEX IF EXISTS "{name}"')
            if self.index_name not in existing:
                if self.database.hnsw_build_memory_mb:  # pgvector: a build is fastest when the graph fits
                    self.db.execute(f"SET LOCAL maintenance_work_mem = '{int(self.database.hnsw_build_memory_mb)}MB'")
                self._warn_if_graph_outgrows_memory()
                self.db.execute(
                    f"CREATE INDEX IF NOT EXISTS {self.index_name} ON memory_chunks USING hnsw "
                    f"((embedding::vector({self.dims})) vector_cosine_ops) "
                    f"WITH (m = {int(self.database.hnsw_m)}, ef_construction = {int(self.database.hnsw_ef_construction)}) "
                    # partial: the build also reads rows deleted while another session's snapshot still
                    # sees them, and casting a vector of the size before a re-embedding would fail it
                    f"WHERE vector_dims(embedding) = {self.dims}"
                )

    def _describe_sizes(self) -> None:
        """Statistics of the vectors' sizes for the planner: without them it takes :attr:`sized` for a
        filter that keeps 0.5 % of the rows, and plans a search of a scope for a two-hundredth of its rows."""
        from psycopg.errors import InsufficientPrivilege

        try:
            with self.db.transaction():
                self.db.execute(f"CREATE STATISTICS IF NOT EXISTS {_SIZE_STATISTICS} ON (vector_dims(embedding)) "
                                "FROM memory_chunks")
                if self._rows(up_to=1):  # a memory from before: its statistics now, not at autovacuum's next pass
                    self.db.execute("ANALYZE memory_chunks")
        except StorageError as exc:
            if not isinstance(exc.__cause__, InsufficientPrivilege):
                raise
            logger.warning("%s: the statistics of the vectors' sizes are missing and this user may not create "
                           "them; searches work, planned on a guess, until the owner of memory_chunks opens the "
                           "memory once", self.db.path)

    def _graph_bytes(self, rows: int) -> int:
        """About how much memory pgvector's HNSW graph of ``rows`` rows takes while it is built."""
        return rows * (4 * self.dims + 32 * int(self.database.hnsw_m) + _GRAPH_ROW_BYTES)

    def _rows(self, *, up_to: int | None = None, with_vector: bool = False) -> int:
        """How many rows the table holds (those with a vector), counted up to ``up_to`` at most."""
        where = " WHERE embedding IS NOT NULL" if with_vector else ""
        if up_to is None:
            return int(self.db.scalar(f"SELECT count(*) FROM memory_chunks{where}") or 0)
        return int(self.db.scalar(f"SELECT count(*) FROM (SELECT 1 FROM memory_chunks{where} LIMIT ?) s", (up_to,)) or 0)

    def _warn_if_graph_outgrows_memory(self) -> None:
        """Before a build: pgvector builds the graph in ``maintenance_work_mem`` and, once it no longer
        fits, goes on on disk, several times slower (100k 256-d rows: 292 s at 64 MB against 38 s
        here). A server at PostgreSQL's default (64 MB) holds ~30,000 rows; say what to set."""
        memory = int(self.db.scalar(
            "SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'"))
        fits = memory // self._graph_bytes(1)
        if self._rows(up_to=fits + 1, with_vector=True) <= fits:
            return
        rows = self._rows(with_vector=True)
        needed_mb = -(-self._graph_bytes(rows) // 2**20)
        logger.warning(
            "building the HNSW index of %s memories: pgvector's graph of them needs about %s MB and "
            "maintenance_work_mem is %s MB, so what does not fit is built on disk, several times slower. Set "
            "database.hnsw_build_memory_mb = %s (or the server's maintenance_work_mem) to build it in memory.",
            f"{rows:,}", f"{needed_mb:,}", f"{memory // 2**20:,}", needed_mb)

    def defer_for_load(self, rows: int) -> bool:
        """Before ``add_many`` of ``rows`` memories (inside its write transaction): drop the HNSW index
        when the load is at least ``database.index_after_load_rows`` and at least as many rows as the
        table holds, so that it is built once afterwards (pgvector's advice for loading data) instead
        of growing row by row. True when dropped: the caller then calls :meth:`build_after_load`,
        also after a failed load (a process that dies in between leaves the next open to build it)."""
        threshold = self.database.index_after_load_rows
        if not threshold or rows < threshold or self.db.read_only:
            return False
        held = self._rows(up_to=rows + 1)
        if held > rows:
            return False
        for name in self._indexes():
            self.db.execute(f'DROP INDEX IF EXISTS "{name}"')
        return True

    def build_after_load(self) -> None:
        """Build the HNSW index over the rows a load wrote (after :meth:`defer_for_load`), inside the
        caller's write transaction (the load's ``VACUUM (ANALYZE)`` follows its commit)."""
        self.ensure_ready()

    # -- writes (inside the caller's transaction) -----------------------------------------

    def put(self, rowid: int, vector: np.ndarray, state: RowState, *, replace: bool) -> None:
        self.db.execute("UPDATE memory_chunks SET embedding = ? WHERE chunk_rowid = ?", (_vec(vector), rowid))

    def put_many(self, rows: list[tuple[int, np.ndarray, RowState]]) -> None:
        self.db.executemany(
            "UPDATE memory_chunks SET embedding = ? WHERE chunk_rowid = ?", [(_vec(v), r) for r, v, _ in rows]
        )

    def delete(self, rowids: Iterable[int]) -> None:
        """Nothing to do: the vector went with its row."""

    def reset(self) -> None:
        """Nothing cached in process."""

    def close(self) -> None:
        """Nothing kept outside the database."""

    def purge_deleted(self) -> None:
        """Nothing to do: a deleted row's vector is gone with it (VACUUM reclaims the space)."""

    def rebuild(self, dims: int) -> None:
        """Start re-embedding with ``dims`` (inside a transaction): drop the HNSW index(es) and every vector."""
        for name in self._indexes():
            self.db.execute(f'DROP INDEX IF EXISTS "{name}"')
        self.db.execute("UPDATE memory_chunks SET embedding = NULL")
        self.dims = int(dims)

    def _indexes(self) -> set[str]:
        return {r[0] for r in self.db.query(_INDEXES_SQL, (self.db.schema,))}

    def write_all(self, rows: list[tuple[int, np.ndarray]]) -> None:
        self.db.executemany(
            "UPDATE memory_chunks SET embedding = ? WHERE chunk_rowid = ?", [(_vec(v), r) for r, v in rows]
        )

    # -- reads ----------------------------------------------------------------------------

    def search_in_background(self, query: np.ndarray, k: int, scope: Scope, *,
                             now: float) -> Future[list[tuple[int, float]]] | None:
        """:meth:`search` on a worker thread and another pooled connection, so that the server runs it
        beside the keyword side's query; None inside a transaction (its rows are seen on its own
        connection only: the caller then runs :meth:`search` itself)."""
        if self.db.in_transaction:
            return None
        return _workers().submit(self.search, query, k, scope, now=now)

    def search(self, query: np.ndarray, k: int, scope: Scope, *, now: float) -> list[tuple[int, float]]:
        """(chunk_rowid, cosine similarity), best first: the top ``k`` within ``scope``."""
        if k <= 0:
            return []
        sql, params = scope.sql("c", "postgresql")
        vector = _vec(query)
        if self._small(scope, sql, params, max(self.database.exact_scan_rows, k)):
            return self._exact(vector, k, sql, params)
        ef = max(int(self.database.hnsw_ef_search), k)
        while True:
            with self.db.connection() as conn:  # the setting and the query on one connection
                self._set_ef_search(conn, min(ef, _MAX_EF))
                rows = self.db.query(
                    f"SELECT c.chunk_rowid, 1 - ({self.expression} <=> ?) FROM memory_chunks c "
                    f"WHERE {sql} AND {self.sized} ORDER BY {self.expression} <=> ? LIMIT ?",
                    (vector, *params, vector, k),
                )
            if len(rows) >= k:
                return [(int(r), float(s)) for r, s in rows]
            if ef >= _MAX_EF:
                return self._exact(vector, k, sql, params)
            ef *= 4

    def _small(self, scope: Scope, sql: str, params: list[Any], limit: int) -> bool:
        """Whether ``scope`` holds at most ``limit`` rows with a vector (scanned exactly). A big scope is
        remembered as big for a minute: the index search then skips the count (and still returns k rows
        when k match, see :meth:`search`); a small one is counted each time, as it may grow."""
        key = (sql, repr([p for p in params if p is not scope.live_at]), limit)
        since = self._big.get(key)
        if since is not None and time.monotonic() - since < _BIG_SCOPE_S:
            return False
        in_scope = int(self.db.scalar(
            f"SELECT count(*) FROM (SELECT 1 FROM memory_chunks c WHERE {sql} AND c.embedding IS NOT NULL LIMIT ?) s",
            (*params, limit + 1),
        ) or 0)
        if in_scope <= limit:
            return True
        if len(self._big) > 1000:
            self._big.clear()
        self._big[key] = time.monotonic()
        return False

    def _set_ef_search(self, conn: Any, ef: int) -> None:
        """``SET hnsw.ef_search`` on ``conn`` unless it already holds ``ef`` (a setting made in a
        transaction is undone by its rollback, so there it is set each time)."""
        idle = conn.info.transaction_status == self._idle
        if idle and getattr(conn, "_openkoi_ef_search", None) == ef:
            return
        self.db.execute(f"SET hnsw.ef_search = {int(ef)}")
        conn._openkoi_ef_search = ef if idle else None

    def above(self, query: np.ndarray, threshold: float, scope: Scope, *, now: float,
              limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` rows in ``scope`` whose cosine similarity exceeds ``threshold``, best first."""
        return [(rowid, sim) for rowid, sim in self.search(query, limit, scope, now=now) if sim > threshold]

    def same_content(self, content_hash: str, scope: Scope, *, now: float) -> tuple[bool, int | None]:
        """(False, None): PostgreSQL keeps no mirror to answer from; the caller asks the table."""
        return False, None

    def _exact(self, vector: np.ndarray, k: int, sql: str, params: list[Any]) -> list[tuple[int, float]]:
        rows = self.db.query(
            f"SELECT c.chunk_rowid, 1 - ({self.expression} <=> ?) AS similarity FROM memory_chunks c "
            f"WHERE {sql} AND c.embedding IS NOT NULL ORDER BY similarity DESC, c.chunk_rowid LIMIT ?",
            (vector, *params, k),
        )
        return [(int(r), float(s)) for r, s in rows]

    def similarities(self, query: np.ndarray, rowids: Sequence[int]) -> dict[int, float]:
        """Exact cosine similarity of ``query`` to each of ``rowids`` (rows without a vector are left out)."""
        if not rowids:
            return {}
        rows = self.db.query(
            f"SELECT c.chunk_rowid, 1 - ({self.expression} <=> ?) FROM memory_chunks c "
            "WHERE c.chunk_rowid = ANY(CAST(? AS bigint[])) AND c.embedding IS NOT NULL",
            (_vec(query), [int(r) for r in rowids]),
        )
        return {int(r): float(s) for r, s in rows}

    def vectors_of(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        if not rowids:
            return {}
        rows = self.db.query(
            "SELECT chunk_rowid, embedding FROM memory_chunks WHERE chunk_rowid = ANY(CAST(? AS bigint[])) "
            "AND embedding IS NOT NULL",
            ([int(r) for r in rowids],),
        )
        return {int(r): np.asarray(v, dtype=np.float32) for r, v in rows}


def _vec(vector: Any) -> np.ndarray:
    return np.ascontiguousarray(vector, dtype=np.float32).ravel()

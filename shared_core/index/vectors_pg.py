"""The vector side of search on PostgreSQL: pgvector, HNSW with cosine distance.

Vectors live in ``memory_chunks.embedding`` (written in the same statement or transaction
as the row, so row, keyword index and vector change together). The column accepts any
dimensions; the store's embedder fixes them through the HNSW index, an expression index
on ``embedding::vector(<dims>)`` created when the store opens (``ensure_ready``) and
rebuilt when the embedder changes.

A filtered HNSW scan can return fewer than k rows (it collects ``hnsw.ef_search``
candidates, then filters them), and a filtered search must return k results when k
match. So:

* a scope with at most ``database.exact_scan_rows`` rows (2,000) is scanned exactly (an
  ORDER BY the planner cannot serve from the index, over the scope's rows);
* a larger scope asks the index with ``ef_search`` = ``database.hnsw_ef_search`` (at least
  k), and when the filter leaves fewer than k, asks again with four times the candidates
  (up to pgvector's 1,000), then falls back to the exact scan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..config import DatabaseConfig, SearchConfig
from ..db.postgres import PostgresDatabase
from .protocols import RowState
from .scope import Scope

__all__ = ["PgVectorIndex"]

_MAX_EF = 1000  # pgvector's limit for hnsw.ef_search


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

    @property
    def index_name(self) -> str:
        return f"idx_chunks_embedding_{self.dims}"

    @property
    def expression(self) -> str:
        """The indexed expression; ORDER BY it (with <=>) to use the HNSW index."""
        return f"c.embedding::vector({self.dims})"

    def ensure_ready(self) -> None:
        """Create the HNSW index for this embedder's dimensions, dropping any for others."""
        if self.db.read_only:
            return
        existing = self._indexes()
        if existing == {self.index_name}:
            return
        with self.db.transaction():
            for name in existing - {self.index_name}:
                self.db.execute(f'DROP INDEX IF EXISTS "{name}"')
            if self.index_name not in existing:
                self.db.execute(
                    f"CREATE INDEX IF NOT EXISTS {self.index_name} ON memory_chunks USING hnsw "
                    f"((embedding::vector({self.dims})) vector_cosine_ops) "
                    f"WITH (m = {int(self.database.hnsw_m)}, ef_construction = {int(self.database.hnsw_ef_construction)})"
                )

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

    def purge_deleted(self) -> None:
        """Nothing to do: a deleted row's vector is gone with it (VACUUM reclaims the space)."""

    def rebuild(self, dims: int) -> None:
        """Start re-embedding with ``dims`` (inside a transaction): drop the HNSW index(es) and every vector."""
        for name in self._indexes():
            self.db.execute(f'DROP INDEX IF EXISTS "{name}"')
        self.db.execute("UPDATE memory_chunks SET embedding = NULL")
        self.dims = int(dims)

    def _indexes(self) -> set[str]:
        return {r[0] for r in self.db.query(
            "SELECT indexname FROM pg_indexes WHERE schemaname = ? AND tablename = 'memory_chunks' "
            "AND indexname LIKE 'idx_chunks_embedding_%'", (self.db.schema,))}

    def write_all(self, rows: list[tuple[int, np.ndarray]]) -> None:
        self.db.executemany(
            "UPDATE memory_chunks SET embedding = ? WHERE chunk_rowid = ?", [(_vec(v), r) for r, v in rows]
        )

    # -- reads ----------------------------------------------------------------------------

    def search_in_background(self, query: np.ndarray, k: int, scope: Scope, *, now: float) -> None:
        """None: the KNN is a query on the store's one connection, run by :meth:`search`."""
        return None

    def search(self, query: np.ndarray, k: int, scope: Scope, *, now: float) -> list[tuple[int, float]]:
        """(chunk_rowid, cosine similarity), best first: the top ``k`` within ``scope``."""
        if k <= 0:
            return []
        sql, params = scope.sql("c", "postgresql")
        vector = _vec(query)
        limit = max(self.database.exact_scan_rows, k)
        in_scope = int(self.db.scalar(
            f"SELECT count(*) FROM (SELECT 1 FROM memory_chunks c WHERE {sql} AND c.embedding IS NOT NULL LIMIT ?) s",
            (*params, limit + 1),
        ) or 0)
        if in_scope <= limit:
            return self._exact(vector, k, sql, params)
        ef = max(int(self.database.hnsw_ef_search), k)
        while True:
            with self.db.connection():  # the setting and the query on one connection
                self.db.execute(f"SET hnsw.ef_search = {min(ef, _MAX_EF)}")
                rows = self.db.query(
                    f"SELECT c.chunk_rowid, 1 - ({self.expression} <=> ?) FROM memory_chunks c "
                    f"WHERE {sql} AND c.embedding IS NOT NULL ORDER BY {self.expression} <=> ? LIMIT ?",
                    (vector, *params, vector, k),
                )
            if len(rows) >= k:
                return [(int(r), float(s)) for r, s in rows]
            if ef >= _MAX_EF:
                return self._exact(vector, k, sql, params)
            ef *= 4

    def best_above(
        self, query: np.ndarray, threshold: float, scope: Scope, *, now: float
    ) -> tuple[int, float] | None:
        """The most similar row in ``scope`` if its cosine similarity exceeds ``threshold``, else None."""
        best = self.search(query, 1, scope, now=now)
        return best[0] if best and best[0][1] > threshold else None

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

"""Space in a PostgreSQL schema: the live search index's payload, VACUUM, the catalog of tables.

``measure_payload`` (size pruning's measure, ``pg_column_size``): the stored bytes of every live
row, its vector and its tsvector counted apart, plus the index keys as SQLite's ``estimate``
counts them. Space is given back by plain ``VACUUM``, which never blocks the other servers; to
rewrite the files with no trace of deleted rows (``VACUUM FULL`` takes an exclusive lock), see
docs/scaling.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ...errors import StorageError
from ..backend import INDEX_ENTRIES, INDEX_KEYS, Backend, SizeMeasure


class _SchemaBackend(Backend, Protocol):
    """The PostgreSQL backend as this module uses it."""

    schema: str

    def connection(self) -> AbstractContextManager[Any]: ...


__all__ = ["ident", "measure_payload", "reclaim_space", "settle_after_load", "storage_bytes", "tables_with_column", "vacuum"]

_TABLES = ("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
           "WHERE n.nspname = %s AND c.relkind = 'r'")


def ident(name: str) -> str:
    """``name`` quoted as a PostgreSQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def measure_payload(db: _SchemaBackend, method: str, *, columns: Sequence[str], dims: int) -> SizeMeasure:
    """``auto`` and ``estimate`` both measure with ``pg_column_size``; there is no ``dbstat``."""
    if method == "dbstat":
        raise StorageError("PostgreSQL has no dbstat table; use method='auto' or 'estimate'")
    key_bytes = " + ".join(f"coalesce(octet_length({c}), 0)" for c in INDEX_KEYS)
    rows, whole, vectors, keywords, keys = db.query(
        "SELECT count(*), coalesce(sum(pg_column_size(c.*)), 0), coalesce(sum(pg_column_size(c.embedding)), 0), "
        f"coalesce(sum(pg_column_size(c.search_text)), 0), coalesce(sum({key_bytes}), 0) FROM memory_chunks c")[0]
    rows = int(rows)
    parts = {"rows": int(whole) - int(vectors) - int(keywords), "indexes": int(keys) + rows * INDEX_ENTRIES * 8,
             "keyword_index": int(keywords), "vectors": int(vectors)}
    return SizeMeasure("pg_column_size", sum(parts.values()), rows, parts)


def reclaim_space(db: _SchemaBackend) -> tuple[int, bool]:
    """``VACUUM memory_chunks``: (its pages given back, False: nothing to switch on)."""
    if db.read_only:
        return 0, False
    pages = "SELECT pg_relation_size('memory_chunks') / current_setting('block_size')::bigint"
    before = int(db.scalar(pages) or 0)
    with db.connection() as conn:
        conn.execute("VACUUM memory_chunks")
    return max(0, before - int(db.scalar(pages) or 0)), False


def settle_after_load(db: _SchemaBackend) -> None:
    """``VACUUM (ANALYZE) memory_chunks`` after a bulk load, as PostgreSQL advises: the planner's
    statistics, GIN's pending list merged into the index, and the visibility map set, so that
    counting a word's rows (its idf) reads the GIN index alone instead of a table page per row
    (at a million rows 10-60 ms a word -> 1-6 ms) where the server allows it (PostgreSQL 16.2 does,
    16.14 and 18.4 read the pages anyway). VACUUM skips pages already all-visible: it
    costs about as much as the rows the load added. Rows whose commits are not on disk yet
    (``synchronous_commit = off``) are left for autovacuum to mark, as are the rows of a role
    that does not own the table (PostgreSQL warns and skips it)."""
    if db.read_only:
        return
    with db.connection() as conn:
        conn.execute("VACUUM (ANALYZE) memory_chunks")


def vacuum(db: _SchemaBackend) -> None:
    """VACUUM every table of the memory, so deleted rows' space is pruned and reused."""
    if db.read_only:
        return
    with db.connection() as conn:
        for (table,) in conn.execute(_TABLES, (db.schema,)).fetchall():
            conn.execute(f"VACUUM {ident(db.schema)}.{ident(table)}")


def storage_bytes(db: _SchemaBackend) -> int:
    """Bytes the memory's tables, their indexes and TOAST data take on the server."""
    return int(db.scalar(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relkind = 'r'",
        (db.schema,),
    ) or 0)


def tables_with_column(db: _SchemaBackend, column: str) -> list[str]:
    """The schema's base tables with ``column``, by name."""
    return [r[0] for r in db.query(
        "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
        "USING (table_schema, table_name) WHERE c.table_schema = ? AND c.column_name = ? "
        "AND t.table_type = 'BASE TABLE' ORDER BY c.table_name", (db.schema, column))]

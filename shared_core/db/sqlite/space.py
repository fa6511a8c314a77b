"""Space in an SQLite file: the live search index's payload, freed pages given back, sampled keys,
and which tables have a column (for erasing a namespace).

``measure_payload`` (size pruning's measure) counts what the live rows take:

* ``dbstat`` (when the SQLite build has the virtual table, as the bundled sqlean one does): the
  payload bytes of ``memory_chunks``, its indexes and the FTS5 index's shadow tables. Payload,
  not pages: deleting 1 % of the rows frees almost no pages (they are spread over all of them),
  while payload falls by exactly what was removed, so pruning converges.
* ``estimate`` (otherwise): the bytes of every column of every live row, the key columns of the
  indexes (plus 8 bytes a row each), and the FTS5 index's blocks, read exactly.
* vectors, either way: live rows x dims x 4 bytes. sqlite-vec stores vectors in preallocated
  chunks and frees a chunk only once it is empty, so its pages say little about the live vectors.

``reclaim_space`` gives freed pages back with ``PRAGMA incremental_vacuum``. That needs
``auto_vacuum = INCREMENTAL``, which SQLite only accepts before the first table exists or through
a full ``VACUUM``; a WAL-mode file has its header written before the first migration runs, so the
first reclaim on a file that is not yet incremental switches it with one ``VACUUM``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from ...errors import StorageError
from ..backend import INDEX_ENTRIES, INDEX_KEYS, Backend, SizeMeasure
from .driver import Driver, get_driver


class _FileBackend(Backend, Protocol):
    """The SQLite backend as this module uses it."""

    def log_to_ourselves(self) -> AbstractContextManager[None]: ...


__all__ = ["measure_payload", "reclaim_space", "refresh_statistics", "tables_with_column"]

_FTS_SHADOWS = ("memory_fts_data", "memory_fts_idx", "memory_fts_docsize", "memory_fts_config")


def measure_payload(db: _FileBackend, method: str, *, columns: Sequence[str], dims: int) -> SizeMeasure:
    """``auto`` (``dbstat`` when the build has it), ``dbstat`` or ``estimate``."""
    if method == "dbstat" and not _has_dbstat(get_driver()):
        raise StorageError("this SQLite build has no dbstat table; use method='estimate'")
    if method == "estimate" or (method == "auto" and not _has_dbstat(get_driver())):
        return _estimate(db, columns, dims)
    return _dbstat(db, dims)


@functools.cache
def _has_dbstat(driver: Driver) -> bool:
    """Whether the build has the ``dbstat`` table (a compile option): probed once, in memory."""
    probe = driver.module.connect(":memory:")
    try:
        probe.execute("SELECT 1 FROM dbstat LIMIT 1")
        return True
    except driver.Error:
        return False
    finally:
        probe.close()


def _live_btrees(db: _FileBackend) -> list[str]:
    names = [r[0] for r in db.query(
        "SELECT name FROM sqlite_master WHERE (type = 'table' AND name = 'memory_chunks') "
        "OR (type = 'index' AND tbl_name = 'memory_chunks') ORDER BY name")]
    present = {r[0] for r in db.query(
        f"SELECT name FROM sqlite_master WHERE name IN ({', '.join('?' for _ in _FTS_SHADOWS)})", _FTS_SHADOWS)}
    return names + [n for n in _FTS_SHADOWS if n in present]


def _dbstat(db: _FileBackend, dims: int) -> SizeMeasure:
    parts: dict[str, int] = {}
    for name in _live_btrees(db):
        try:
            value = db.scalar("SELECT payload FROM dbstat WHERE name = ? AND aggregate = 1", (name,))
        except StorageError:  # SQLite before 3.31 has no aggregate column
            value = db.scalar("SELECT sum(payload) FROM dbstat WHERE name = ?", (name,))
        parts[name] = int(value or 0)
    rows = int(db.scalar("SELECT count(*) FROM memory_chunks") or 0)
    parts["vectors"] = rows * dims * 4
    return SizeMeasure("dbstat", sum(parts.values()), rows, parts)


def _estimate(db: _FileBackend, columns: Sequence[str], dims: int) -> SizeMeasure:
    row_bytes = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in columns)
    key_bytes = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in INDEX_KEYS)
    rows, data, keys = db.query(
        f"SELECT count(*), coalesce(sum({row_bytes}), 0), coalesce(sum({key_bytes}), 0) FROM memory_chunks")[0]
    fts = int(db.scalar("SELECT coalesce(sum(length(block)), 0) FROM memory_fts_data") or 0)
    fts += int(db.scalar("SELECT coalesce(sum(length(sz)), 0) FROM memory_fts_docsize") or 0)
    fts += int(db.scalar("SELECT coalesce(sum(length(CAST(term AS BLOB)) + 16), 0) FROM memory_fts_idx") or 0)
    rows = int(rows)
    parts = {"rows": int(data), "indexes": int(keys) + rows * INDEX_ENTRIES * 8, "keyword_index": fts,
             "vectors": rows * dims * 4}
    return SizeMeasure("estimate", sum(parts.values()), rows, parts)


def reclaim_space(db: _FileBackend) -> tuple[int, bool]:
    """(pages given back, whether this call switched the file to incremental vacuum)."""
    if db.read_only or db.path == ":memory:":
        return 0, False
    mode = int(db.scalar("PRAGMA auto_vacuum") or 0)
    if mode == 1:  # FULL: SQLite already gave the pages back at commit
        return 0, False
    with db.log_to_ourselves():
        if mode != 2:
            pages_before = int(db.scalar("PRAGMA page_count") or 0)
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            db.execute("VACUUM")  # the one full rewrite that makes incremental vacuum possible
            reclaimed, switched = max(0, pages_before - int(db.scalar("PRAGMA page_count") or 0)), True
        else:
            reclaimed = int(db.scalar("PRAGMA freelist_count") or 0)
            left = reclaimed
            while left:  # SQLite 3.40 can end a pass with pages that moving the others freed
                db.query("PRAGMA incremental_vacuum")  # fetch all: each step frees pages
                left, before = int(db.scalar("PRAGMA freelist_count") or 0), left
                if left >= before:
                    break
            switched = False
        db.query("PRAGMA wal_checkpoint(TRUNCATE)")
    return reclaimed, switched


def refresh_statistics(db: _FileBackend) -> None:
    """``sqlite_stat4`` keeps sampled index keys (namespaces, ids, FTS terms) until ANALYZE runs again;
    rebuilt from the live rows when there are any (a memory copied by migrate-backend has them)."""
    has_stat4 = db.scalar("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat4'")
    if has_stat4 and db.scalar("SELECT 1 FROM sqlite_stat4 LIMIT 1"):
        db.execute("ANALYZE")


def tables_with_column(db: _FileBackend, column: str) -> list[str]:
    """Plain tables (not virtual ones) with ``column``, by name."""
    tables = [r[0] for r in db.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")]
    return [t for t in tables if any(col[1] == column for col in db.query(f'PRAGMA table_info("{t}")'))]

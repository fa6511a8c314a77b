"""Copy a whole memory between backends: SQLite to PostgreSQL and back (``openkoi-memory migrate-backend``).

Every table of the schema is copied row for row, keys and rowids included (so ids, order and
links survive), memory_chunks together with its vectors (sqlite-vec's ``memory_vec`` on one
side, the ``embedding`` column on the other); what each backend derives by itself (the
keyword indexes, the change log of the SQLite vector mirror) is rebuilt by the target.

The copy is resumable: it runs in batches of ``batch_size`` rows, each one transaction on the
target that also records how far it got (``_transfer_progress``), so an interrupted copy
continues where it stopped when run again. It ends with a check, table by table, that both
sides hold the same number of rows and the same content: an order-independent SHA-256
checksum of every row (vectors included, as float32 bytes).
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..clock import SystemClock, to_iso
from ..errors import OpenKoiError, SchemaError
from . import open_database
from .migrations import available_migrations
from .sqlite.migrate import statements

__all__ = ["TableCheck", "TransferReport", "migrate_backend", "verify"]

_PROGRESS = "_transfer_progress"
_DERIVED = {"index_log"}  # the SQLite vector mirror's change log: the target starts its own
_FIRST = ("store_meta", "memory_chunks", "memory_archive")  # before the tables their triggers write to
_MASK = (1 << 256) - 1


class TransferError(OpenKoiError):
    """The two memories cannot be copied one into the other as asked."""


@dataclass(frozen=True)
class TableCheck:
    table: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def ok(self) -> bool:
        return self.source_rows == self.target_rows and self.source_checksum == self.target_checksum


@dataclass
class TransferReport:
    source: str
    target: str
    copied: dict[str, int] = field(default_factory=dict)  # rows copied by this run, per table
    resumed: bool = False
    checks: list[TableCheck] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tables only the source has (another library's)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def __str__(self) -> str:
        lines = [f"{'resumed' if self.resumed else 'copied'} {self.source} -> {self.target}"]
        for check in self.checks:
            mark = "ok" if check.ok else "MISMATCH"
            lines.append(f"  {check.table:28} {check.source_rows:>9} -> {check.target_rows:<9} {mark}")
        if self.skipped:
            lines.append(f"  not copied (not openkoi-memory's tables): {', '.join(self.skipped)}")
        lines.append("verified: counts and checksums match" if self.ok else "verification FAILED")
        return "\n".join(lines)


_CREATE = re.compile(r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_RENAME = re.compile(r"^\s*ALTER\s+TABLE\s+([A-Za-z_][A-Za-z0-9_]*)\s+RENAME\s+TO\s+([A-Za-z_][A-Za-z0-9_]*)",
                     re.IGNORECASE)
_DROP = re.compile(r"^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def _schema_tables() -> list[str]:
    """The plain tables the migrations leave behind (the logical schema; virtual tables left out)."""
    tables: list[str] = []
    for migration in available_migrations():
        for statement in statements(migration, dims=1):
            statement = re.sub(r"--[^\n]*", "", statement)
            if (match := _CREATE.match(statement)) and "TEMP" not in statement.split("(")[0].upper():
                tables.append(match.group(1).lower())
            elif match := _RENAME.match(statement):
                tables = [match.group(2).lower() if t == match.group(1).lower() else t for t in tables]
            elif match := _DROP.match(statement):
                tables = [t for t in tables if t != match.group(1).lower()]
    return list(dict.fromkeys(tables))


# -- what each backend says about its tables -----------------------------------------------------------


def _tables(db: Any) -> list[str]:
    if db.dialect == "postgresql":
        return [r[0] for r in db.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE' "
            "ORDER BY table_name", (db.schema,))]
    rows = db.query("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
    return [name for name, sql in rows if not (sql or "").upper().startswith("CREATE VIRTUAL")
            and not name.startswith("sqlite_") and not _is_shadow(name)]


def _is_shadow(name: str) -> bool:
    """FTS5 and vec0 keep their data in shadow tables named after the virtual table."""
    return name.startswith(("memory_fts_", "memory_archive_fts_", "memory_vec_"))


def _columns(db: Any, table: str) -> list[str]:
    """Stored columns, in order; generated ones (PostgreSQL's search_text, ...) left out."""
    if db.dialect == "postgresql":
        return [r[0] for r in db.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
            "AND is_generated = 'NEVER' ORDER BY ordinal_position", (db.schema, table))]
    with db.translate_errors():
        return [r[1] for r in db.conn.execute(f'PRAGMA table_xinfo("{table}")').fetchall() if r[6] == 0]


def _has_rowid(db: Any, table: str, columns: list[str]) -> bool:
    """SQLite's implicit rowid (an explicit column on PostgreSQL): copied so that order survives."""
    if db.dialect == "postgresql":
        return "rowid" in columns
    sql = db.scalar("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)) or ""
    if "WITHOUT ROWID" in sql.upper():
        return False
    return not any(_integer_key(db, table, c) for c in columns)


def _integer_key(db: Any, table: str, column: str) -> bool:
    with db.translate_errors():
        info = db.conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    keys = [r for r in info if r[5]]
    return len(keys) == 1 and keys[0][1] == column and keys[0][2].upper() == "INTEGER"


def _key(db: Any, table: str) -> list[str]:
    """Columns that order the table's rows for the copy (a rowid, or the primary key)."""
    if db.dialect == "postgresql":
        keys = [r[0] for r in db.query(
            "SELECT kcu.column_name FROM information_schema.table_constraints tc "
            "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name "
            "AND kcu.table_schema = tc.table_schema AND kcu.table_name = tc.table_name "
            "WHERE tc.table_schema = ? AND tc.table_name = ? AND tc.constraint_type = 'PRIMARY KEY' "
            "ORDER BY kcu.ordinal_position", (db.schema, table))]
        columns = _columns(db, table)
        identity = db.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
            "AND is_identity = 'YES'", (db.schema, table))
        if identity and (not keys or keys == [identity[0][0]]):
            return [identity[0][0]]
        return keys or columns
    with db.translate_errors():
        info = db.conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    keys = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
    columns = [r[1] for r in info]
    if _has_rowid(db, table, columns):
        return ["rowid"]
    return keys or columns


def _parents(db: Any, table: str) -> set[str]:
    if db.dialect == "postgresql":
        return {r[0] for r in db.query(
            "SELECT ccu.table_name FROM information_schema.table_constraints tc "
            "JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name "
            "AND ccu.table_schema = tc.table_schema WHERE tc.table_schema = ? AND tc.table_name = ? "
            "AND tc.constraint_type = 'FOREIGN KEY'", (db.schema, table))} - {table}
    with db.translate_errors():
        return {r[2] for r in db.conn.execute(f'PRAGMA foreign_key_list("{table}")').fetchall()} - {table}


def _order(db: Any, tables: list[str]) -> list[str]:
    """Parents before children, and the tables whose triggers fill others first."""
    ordered: list[str] = [t for t in _FIRST if t in tables]
    remaining = [t for t in tables if t not in ordered]
    parents = {t: _parents(db, t) for t in remaining}
    while remaining:
        ready = [t for t in remaining if parents[t] <= set(ordered) | (set(parents[t]) - set(tables))]
        if not ready:  # a cycle: foreign keys are checked at commit on both sides anyway
            ready = remaining[:1]
        for t in ready:
            ordered.append(t)
            remaining.remove(t)
    return ordered


# -- values and checksums --------------------------------------------------------------------------------


def _vector_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return np.asarray(value, dtype="<f4").tobytes()


def _canonical(value: Any) -> bytes:
    if value is None:
        return b"N"
    if isinstance(value, bool):
        return b"I" + str(int(value)).encode()
    if isinstance(value, int):
        return b"I" + str(value).encode()
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            return b"I" + str(int(value)).encode()  # SQLite's REAL 1.0 and PostgreSQL's 1 agree
        return b"F" + struct.pack("<d", value)
    if isinstance(value, str):
        return b"S" + value.encode("utf-8", "surrogatepass")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"B" + bytes(value)
    return b"S" + str(value).encode()


def _row_hash(values: Sequence[Any]) -> int:
    digest = hashlib.sha256()
    for value in values:
        part = _canonical(value)
        digest.update(len(part).to_bytes(4, "little") + part)
    return int.from_bytes(digest.digest(), "big")


class _Side:
    """One memory (source or target), seen as logical tables."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def select_columns(self, table: str, columns: list[str]) -> str:
        names = ", ".join(f"t.{c}" for c in columns)
        if table == "memory_chunks":
            vector = "t.embedding" if self.db.dialect == "postgresql" else "v.embedding"
            names += f", {vector}"
        return names

    def from_clause(self, table: str) -> str:
        if table == "memory_chunks" and self.db.dialect == "sqlite":
            return "memory_chunks t LEFT JOIN memory_vec v ON v.chunk_rowid = t.chunk_rowid"
        return f"{table} t"

    def batches(self, table: str, columns: list[str], key: list[str], after: list[Any] | None,
                size: int) -> Any:
        """Rows in key order after ``after``, ``size`` at a time (keyset pagination)."""
        marks = ", ".join("?" for _ in key)
        keys = ", ".join(f"t.{k}" for k in key)
        while True:
            where = f"WHERE ({keys}) > ({marks})" if after is not None else ""
            rows = self.db.query(
                f"SELECT {self.select_columns(table, columns)} FROM {self.from_clause(table)} {where} "
                f"ORDER BY {keys} LIMIT ?", (*(after or []), size))
            if not rows:
                return
            yield rows
            positions = [columns.index(k) for k in key]
            after = [rows[-1][p] for p in positions]

    def checksum(self, table: str, columns: list[str]) -> tuple[int, str]:
        total, count = 0, 0
        for rows in self.batches(table, columns, _plain_key(self, table, columns), None, 5000):
            for row in rows:
                values = list(row)
                if table == "memory_chunks":
                    values[-1] = _vector_bytes(values[-1])
                total = (total + _row_hash(values)) & _MASK
                count += 1
        return count, f"{total:064x}"


def _plain_key(side: _Side, table: str, columns: list[str]) -> list[str]:
    key = _key(side.db, table)
    return key if all(k in columns for k in key) else columns


# -- the copy ----------------------------------------------------------------------------------------------


def _open(target: str) -> Any:
    try:
        return open_database(target)
    except OpenKoiError:
        raise
    except Exception as exc:  # pragma: no cover - driver-specific failures to connect
        raise TransferError(f"cannot open {target}: {exc}") from None


def migrate_backend(
    source: str,
    target: str,
    *,
    batch_size: int = 1000,
    progress: Callable[[str, int, int], None] | None = None,
) -> TransferReport:
    """Copy the memory at ``source`` into ``target`` (empty, or a copy of it that was interrupted).

    ``source``/``target``: SQLite paths or ``postgresql://`` URLs. ``progress(table, done, total)``
    is called after each batch. Returns a report with the verification; raises
    :class:`TransferError` when the target holds other data or the schemas cannot match.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    src = _open(source)
    try:
        dst = _open(target)
    except BaseException:
        src.close()
        raise
    try:
        return _migrate(src, dst, source, target, batch_size, progress)
    finally:
        src.close()
        dst.close()


def _migrate(src: Any, dst: Any, source: str, target: str, batch_size: int,
             progress: Callable[[str, int, int], None] | None) -> TransferReport:
    if src.dialect == dst.dialect and src.path == dst.path:
        raise TransferError("the source and the target are the same memory")
    version = src.schema_version()
    if version == 0:
        raise TransferError(f"{src.path} is not an openkoi-memory database")
    if version < src.latest_version():
        raise TransferError(f"{src.path} needs a schema upgrade first; open it once (MemoryStore.open) and retry")
    dims_text = src.get_meta("embedder_dims")
    dims = int(dims_text) if dims_text else 0
    report = TransferReport(src.path, dst.path)
    ours = [t for t in _schema_tables() if t not in _DERIVED]
    resuming = dst.schema_version() > 0 and _PROGRESS in _tables(dst)
    if not resuming and dst.schema_version() > 0:
        present = set(_tables(dst))
        held = sum(int(dst.scalar(f"SELECT count(*) FROM {t}") or 0) for t in ours if t in present and t != "store_meta")
        if held:
            raise TransferError(
                f"{dst.path} already holds a memory ({held} rows); migrate into an empty database (or schema), or "
                "resume an interrupted copy into the same target"
            )
    now = to_iso(SystemClock().now())
    dst.migrate(dims=dims or 384, now_iso=now)
    if dst.schema_version() != version:
        raise SchemaError(
            f"{src.path} is at schema version {version} and {dst.path} at {dst.schema_version()}; "
            "use the same openkoi-memory version on both"
        )
    if not resuming:
        with dst.transaction():
            dst.execute("DELETE FROM store_meta")  # the source's embedder and dates come across
            dst.execute(f"CREATE TABLE {_PROGRESS} (name TEXT PRIMARY KEY, last_key TEXT, done INTEGER NOT NULL, "
                        "copied INTEGER NOT NULL)")
    report.resumed = resuming
    present = set(_tables(src))
    report.skipped = sorted(t for t in present if t not in ours and t not in _DERIVED and t != "_migrations"
                            and not t.startswith("_transfer"))
    tables = _order(src, [t for t in ours if t in present])
    done = {r[0]: (r[1], bool(r[2]), int(r[3])) for r in dst.query(
        f"SELECT name, last_key, done, copied FROM {_PROGRESS}")}
    source_side = _Side(src)
    for table in tables:
        after_text, finished, copied = done.get(table, (None, False, 0))
        if finished:
            continue
        columns = _shared_columns(src, dst, table)
        key = _plain_key(source_side, table, columns)
        after = _loads(after_text)
        total = int(src.scalar(f"SELECT count(*) FROM {table}") or 0)
        count = 0
        for rows in source_side.batches(table, columns, key, after, batch_size):
            last = [rows[-1][columns.index(k)] for k in key]
            with dst.transaction():
                dst.defer_foreign_keys()
                _insert(dst, table, columns, rows)
                copied += len(rows)
                dst.execute(
                    f"INSERT INTO {_PROGRESS} (name, last_key, done, copied) VALUES (?, ?, 0, ?) "
                    "ON CONFLICT(name) DO UPDATE SET last_key = excluded.last_key, copied = excluded.copied",
                    (table, _dumps(last), copied),
                )
            count += len(rows)
            if progress:
                progress(table, copied, total)
        with dst.transaction():
            dst.execute(
                f"INSERT INTO {_PROGRESS} (name, last_key, done, copied) VALUES (?, NULL, 1, ?) "
                "ON CONFLICT(name) DO UPDATE SET done = 1, copied = excluded.copied", (table, copied))
        report.copied[table] = count
    _finish(dst, dims)
    report.checks = verify_open(src, dst, tables)
    if report.ok:
        with dst.transaction():
            dst.execute(f"DROP TABLE {_PROGRESS}")
    return report


def _shared_columns(src: Any, dst: Any, table: str) -> list[str]:
    """The columns both sides store (plus the rowid they both keep), in the source's order."""
    wanted = _columns(src, table)
    if _has_rowid(src, table, wanted) and "rowid" not in wanted:
        wanted = ["rowid", *wanted]
    have = set(_columns(dst, table)) | ({"rowid"} if _has_rowid(dst, table, _columns(dst, table)) else set())
    missing = [c for c in wanted if c not in have and c not in ("embedding",)]
    if missing:
        raise SchemaError(f"{dst.path} has no column {missing[0]!r} in {table}; both sides need the same schema")
    return [c for c in wanted if c != "embedding"]


def _insert(dst: Any, table: str, columns: list[str], rows: list[Any]) -> None:
    if table == "memory_chunks":
        vectors = [row[-1] for row in rows]
        rows = [row[:-1] for row in rows]
        if dst.dialect == "postgresql":
            dst.executemany(
                f"INSERT INTO memory_chunks ({', '.join(columns)}, embedding) VALUES "
                f"({', '.join('?' for _ in columns)}, ?)",
                [(*row, _as_array(vector)) for row, vector in zip(rows, vectors, strict=True)],
            )
            return
        dst.executemany(f"INSERT INTO memory_chunks ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
                        rows)
        rowid_at = columns.index("chunk_rowid")
        dst.executemany("INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)",
                        [(row[rowid_at], _vector_bytes(v)) for row, v in zip(rows, vectors, strict=True) if v is not None])
        return
    dst.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})", rows)


def _as_array(vector: Any) -> Any:
    if vector is None:
        return None
    if isinstance(vector, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(vector), dtype="<f4").astype(np.float32)
    return np.asarray(vector, dtype=np.float32)


def _finish(dst: Any, dims: int) -> None:
    """What the target derives: identity counters past the copied keys; PostgreSQL's HNSW index."""
    if dst.dialect != "postgresql":
        return
    for table, column in dst.query(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ? AND is_identity = 'YES'",
        (dst.schema,),
    ):
        dst.scalar(f"SELECT setval(pg_get_serial_sequence('{dst.schema}.{table}', '{column}'), "
                   f"coalesce((SELECT max({column}) FROM {table}), 0) + 1, false)")
    if dims:
        from ..config import SearchConfig
        from ..index.vectors_pg import PgVectorIndex

        PgVectorIndex(dst, dims, SearchConfig()).ensure_ready()
    with dst.connection() as conn:
        conn.execute("ANALYZE")


def verify(source: str, target: str) -> list[TableCheck]:
    """Count and checksum every shared table on both sides."""
    src, dst = _open(source), _open(target)
    try:
        shared = set(_tables(src)) & set(_tables(dst))
        return verify_open(src, dst, [t for t in _schema_tables() if t in shared and t not in _DERIVED])
    finally:
        src.close()
        dst.close()


def verify_open(src: Any, dst: Any, tables: list[str]) -> list[TableCheck]:
    checks = []
    for table in tables:
        columns = _shared_columns(src, dst, table)
        source_rows, source_sum = _Side(src).checksum(table, columns)
        target_rows, target_sum = _Side(dst).checksum(table, columns)
        checks.append(TableCheck(table, source_rows, target_rows, source_sum, target_sum))
    return checks


def _dumps(values: list[Any]) -> str:
    import json

    return json.dumps(values)


def _loads(text: str | None) -> list[Any] | None:
    import json

    return None if text is None else json.loads(text)

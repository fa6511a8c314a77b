"""``PostgresDatabase``: the ``Database`` interface on PostgreSQL (psycopg 3 + psycopg-pool).

The repositories call ``query``/``execute``/``scalar``/``executemany`` with SQLite SQL and
run writes in ``transaction()``; here every statement is translated once (and cached) by
:mod:`.translate`, and runs on a pooled connection:

* outside a transaction each statement borrows a connection and commits on its own
  (autocommit), like SQLite's autocommit mode;
* ``transaction()`` holds one connection from ``BEGIN`` to ``COMMIT``; nested calls are
  savepoints; ``after_commit``/``on_rollback`` callbacks behave as on SQLite. Statements
  from *other* threads never see a transaction's uncommitted rows (they borrow their own
  connection);
* every write transaction first takes a transaction-scoped advisory lock on the memory,
  so writers are serialised as SQLite's ``BEGIN IMMEDIATE`` serialises them (the domain
  modules' read-then-write steps rely on it), across every process and machine that
  shares the memory. Readers never wait: they read committed snapshots.

A memory lives in one schema (``?schema=name`` in the URL, default ``public``), so one
PostgreSQL database can hold several memories. Values come back as SQLite returns them:
``numeric`` results as ``int`` or ``float``, booleans sent as 0/1, vectors as float32 numpy
arrays.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from ...errors import BusyError, SchemaError, StorageError, StoreClosedError
from ..backend import Capabilities, SizeMeasure
from ..migrations import Migration, apply_migrations, latest_version
from ..transactions import NestedTransactions, busy_error, released, unstorable
from . import space
from .bulk import column_types, copy_plan, copy_rows
from .migrate import MIGRATION_LOCK, PgMigrationSession, statements
from .pool import LOCK_TIMEOUT_S, POOLS, PgDriver, Result, psycopg_modules, register_vector
from .space import ident
from .translate import DialectError, Translated, shared_catalog, translated
from .url import PgTarget, parse_url

__all__ = ["PostgresDatabase"]

_LOCK_CLASS = 0x4F4B4F49  # "OKOI" (fits a signed int4): the advisory lock class of this library
# each column of the schema's tables and views in order: is it an identity column, its place in the
# table's primary key (NULL when not in it)
_CATALOG_SQL = (
    "SELECT c.relname, a.attname, a.attidentity <> '', array_position(i.indkey::int2[], a.attnum) "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid "
    "LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary "
    "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'f') AND a.attnum > 0 AND NOT a.attisdropped "
    "ORDER BY c.relname, a.attnum"
)
BUSY_TIMEOUT_S = 10  # how long a writer waits for its turn (the memory's advisory lock), as SQLite's busy timeout
_MAX_PARAMETERS = 65_535  # the protocol's limit of bound values per statement
#: what an erase cannot promise on this backend (``EraseReport.notes``; docs/privacy.md)
_ERASE_CAVEATS = (
    "PostgreSQL: the rows are deleted and the memory's tables vacuumed; their old versions can stay in "
    "the table files until PostgreSQL reuses that space (VACUUM FULL rewrites them), and in the server's "
    "WAL, WAL archive, replicas and backups until those are recycled",
)


def _search_path(schema: str, conn: Any) -> str:
    """A connection's search_path: the memory's schema, then pgvector's (for its types), then public."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    ).fetchone()
    parts = [schema]
    if row and row[0] != schema:
        parts.append(row[0])
    if "public" not in parts:
        parts.append("public")
    return ", ".join(ident(p) for p in parts)


class PostgresDatabase(NestedTransactions):
    """A memory in a PostgreSQL schema: the PostgreSQL :class:`~shared_core.db.Backend`.

    ``alias``: the name the memory goes by instead of its URL (the test suite's stand-in for a file
    path); a memory with one is not treated as shared between machines.
    """

    dialect = "postgresql"

    def __init__(self, url: str, *, read_only: bool = False, alias: str | None = None, pool_size: int = 8,
                 busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        psycopg, psycopg_pool = psycopg_modules()
        self._pool_timeout = psycopg_pool.PoolTimeout
        self._busy_timeout_s = busy_timeout_s
        self.url = url
        self.target = parse_url(url)
        self.schema = self.target.schema
        self.alias = alias
        self.path = alias or self.target.display
        self.read_only = read_only
        self.capabilities = Capabilities(
            sql_flavour="postgresql", shared=alias is None, in_memory=False, max_parameters=_MAX_PARAMETERS,
            staged_erase=False, erase_caveats=_ERASE_CAVEATS,
        )
        self.lock = threading.RLock()
        self._psycopg = psycopg
        self._local = threading.local()
        self._closed = False
        self._depth = 0
        self._tx_conn: Any = None
        self._tx_thread: int | None = None
        self._after_commit: list[list[Callable[[], None]]] = []
        self._on_rollback: list[Callable[[], None]] = []
        self._writes = False
        self._scratch = 0
        self._catalog = shared_catalog({}, {}, {})
        self._stale_catalog = False
        self._column_types: dict[str, dict[str, tuple[int, str]]] = {}  # by table, until the catalog changes
        self._lock_key = zlib.crc32(self.schema.encode()) - (1 << 31)
        # the pool outlives this object (shared, and kept when POOLS.linger): it holds a function of the
        # schema, not a method, or this object would never be collected and its finalizer never run
        self._pool = POOLS.acquire(self.target, pool_size, partial(_search_path, self.schema), read_only)
        # dropped without close(): the garbage collector gives the pool back instead
        self._release = weakref.finalize(self, POOLS.release, self._pool)
        self._release.atexit = False
        try:
            version = self._scalar_raw("SHOW server_version")
        except BaseException:
            self._release()
            raise
        self.driver = PgDriver("psycopg", f"PostgreSQL {version}", psycopg.Error)
        self.refresh_catalog()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self._release()  # POOLS.release, once

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the store is closed; open it again with MemoryStore.open(...)")

    def companion_connection(self) -> Any:
        raise StorageError(
            "a PostgreSQL memory has no companion SQLite connection; for LangGraph checkpoints use "
            "langgraph-checkpoint-postgres's PostgresSaver on the same URL"
        )

    def postgres_target(self) -> PgTarget:
        """The server (libpq's connection string) and the schema the memory lives in."""
        return self.target

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """One psycopg connection for the statements of this block (the transaction's, inside one).

        Statements this thread runs through ``query``/``execute`` inside the block use it too,
        so a session setting (``SET ...``) applies to the queries that follow it.
        """
        self.check_open()
        if self._in_transaction():
            yield self._tx_conn
            return
        pinned = getattr(self._local, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self.translate_errors(), self._pool.connection() as conn:
            self._ready(conn)
            self._local.conn = conn
            try:
                yield conn
            finally:
                self._local.conn = None

    def _in_transaction(self) -> bool:
        return bool(self._depth) and self._tx_thread == threading.get_ident()

    def _replace_lost(self, conn: Any) -> bool:
        """After the server dropped ``conn`` (it restarted, or closed idle connections): check the pool's
        other idle connections and replace the dead ones, so that a restart costs a caller one failed
        statement at most (none for a read or a ``BEGIN``, which run again). True if ``conn`` was lost."""
        if not conn.broken:
            return False
        self._pool.check()
        return True

    def _ready(self, conn: Any) -> None:
        if not getattr(conn, "_openkoi_vector", False):
            conn._openkoi_vector = register_vector(conn)

    # -- statements ----------------------------------------------------------------------------

    def refresh_catalog(self) -> None:
        """Re-read keys, columns and identity columns (after migrations or DDL)."""
        keys: dict[str, list[tuple[int, str]]] = {}
        columns: dict[str, list[str]] = {}
        identity: dict[str, str] = {}
        with self.connection() as conn:  # pg_catalog in one statement: information_schema's views take ~5x as long
            for table, column, is_identity, key_position in conn.execute(_CATALOG_SQL, (self.schema,)):
                columns.setdefault(table, []).append(column)
                if is_identity:
                    identity[table] = column
                if key_position is not None:
                    keys.setdefault(table, []).append((key_position, column))
        self._catalog = shared_catalog(
            {t: tuple(column for _, column in sorted(c)) for t, c in keys.items()},
            {t: tuple(c) for t, c in columns.items()},
            identity,
        )
        self._column_types.clear()

    def _translate(self, sql: str, many: bool) -> Translated:
        return translated(sql, self._catalog, many=many)

    @staticmethod
    def _params(t: Translated, params: Any) -> Any:
        if t.named:
            if isinstance(params, Mapping):
                return dict(params)
            return {f"p{i + 1}": value for i, value in enumerate(params)}
        if params is None:
            return ()
        return params

    def execute(self, sql: str, params: Any = ()) -> Result:
        return self._run(sql, params)

    def insert_many(self, sql: str, rows: Any) -> None:
        """``INSERT ... VALUES (?, ...)`` for many rows: one binary ``COPY`` (see :mod:`.bulk`), or
        ``executemany`` for an insert COPY cannot do."""
        rows = list(rows)
        plan = copy_plan(sql)
        if not rows or plan is None:
            self.executemany(sql, rows)
            return
        self.check_open()
        with self.connection() as conn, self.translate_errors():
            types = self._column_types.get(plan.table)
            if types is None:
                types = self._column_types[plan.table] = column_types(conn, plan.table)
            copied = copy_rows(conn, plan, types, rows)
        if not copied:
            self.executemany(sql, rows)
            return
        if not self._scratch and self._in_transaction():
            self._writes = True

    def executemany(self, sql: str, rows: Any) -> Result:
        t = self._translate(sql, True)
        data = [self._params(t, r) for r in rows]
        self._note_write(t)
        if not data:
            return Result([], 0, None, None)
        with self.connection() as conn, self.translate_errors():
            cursor = conn.cursor()
            cursor.executemany(t.sql, data)
            return Result([], cursor.rowcount, None, None)

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        return self._run(sql, params).fetchall()

    def scalar(self, sql: str, params: Any = ()) -> Any:
        row = self._run(sql, params).fetchone()
        return None if row is None else row[0]

    def _run(self, sql: str, params: Any) -> Result:
        self.check_open()
        t = self._translate(sql, False)
        bound = self._params(t, params)
        self._note_write(t)
        # a read on a connection of its own runs again once if the server had dropped that connection
        retry = not t.writes and not self._in_transaction() and getattr(self._local, "conn", None) is None
        while True:
            with self.connection() as conn:
                try:
                    with self.translate_errors():
                        cursor = conn.cursor()
                        cursor.execute(t.sql, bound if (bound or "%" in t.sql) else None)
                        rows = cursor.fetchall() if cursor.description is not None else []
                        rowcount, description = cursor.rowcount, cursor.description
                    break
                except StorageError:
                    if not (self._replace_lost(conn) and retry):
                        raise
                    retry = False
        self._after_ddl(sql)
        if t.returning is not None:
            return Result([], rowcount, int(rows[0][0]) if rows else None, None)
        return Result(rows, rowcount, None, description)

    def _scalar_raw(self, sql: str) -> Any:
        with self.connection() as conn, self.translate_errors():
            row = conn.execute(sql).fetchone()
        return None if row is None else row[0]

    def _note_write(self, t: Translated) -> None:
        if t.writes and not self._scratch and self._in_transaction():
            self._writes = True

    def _after_ddl(self, sql: str) -> None:
        """DDL changes what the translator must know: re-read the catalog (at commit, inside a transaction)."""
        if sql.lstrip()[:5].upper() not in ("CREAT", "ALTER", "DROP "):
            return
        if self._in_transaction():
            self._stale_catalog = True
        else:
            self.refresh_catalog()

    # -- transactions --------------------------------------------------------------------------

    def _open_outer(self, wait: float | None) -> None:
        seconds = self._busy_timeout_s if wait is None else max(0.0, wait)
        deadline = time.monotonic() + seconds
        with released(self.lock):  # readers of this store go on while another writer holds the memory
            retry = True  # once, on another connection, if the server had dropped this one
            while True:
                with self.translate_errors():
                    try:
                        conn = self._pool.getconn(timeout=max(0.001, seconds))
                    except self._pool_timeout:
                        raise BusyError(f"no connection to {self.path} came free within {seconds:g} s (every one "
                                        "of the pool is in use); retry shortly, or give the store a bigger pool") from None
                try:
                    self._ready(conn)
                    lock_ms = max(1, round((deadline - time.monotonic()) * 1000))
                    with self.translate_errors():
                        # lock_timeout 0 would mean no limit: a try that cannot wait asks without waiting
                        take = (f"pg_try_advisory_xact_lock({_LOCK_CLASS}, {self._lock_key})" if seconds == 0 else
                                f"pg_advisory_xact_lock({_LOCK_CLASS}, {self._lock_key})")
                        conn.execute(f"BEGIN; SET LOCAL lock_timeout = '{lock_ms}ms'")
                        got = conn.execute(f"SELECT {take}").fetchone()
                        conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT_S}s'")
                    if got is not None and got[0] is False:
                        raise busy_error(self.path)
                    break
                except BaseException as exc:
                    with contextlib.suppress(Exception):
                        conn.rollback()
                    self._pool.putconn(conn)
                    if isinstance(exc, StorageError) and self._replace_lost(conn) and retry:
                        retry = False
                        continue
                    raise
        try:
            self.check_open()  # closed by another thread meanwhile
        except BaseException:
            with contextlib.suppress(Exception):
                conn.rollback()
            self._pool.putconn(conn)
            raise
        self._tx_conn, self._tx_thread = conn, threading.get_ident()
        self._writes = False

    def _commit_outer(self) -> None:
        with self.translate_errors():
            self._tx_conn.execute("COMMIT")
        self._finish()

    def _abort(self) -> None:
        self._rollback()

    def _savepoint_execute(self, sql: str) -> None:
        self._tx_execute(sql)

    def _tx_execute(self, sql: str) -> None:
        with self.translate_errors():
            self._tx_conn.execute(sql)

    def _finish(self) -> None:
        conn, self._tx_conn, self._tx_thread = self._tx_conn, None, None
        self._writes = False
        if conn is not None:
            self._pool.putconn(conn)
        if self._stale_catalog:
            self._stale_catalog = False
            self.refresh_catalog()

    def _rollback(self) -> None:
        callbacks = self._forget_callbacks()
        conn = self._tx_conn
        if conn is not None:
            with contextlib.suppress(self._psycopg.Error):
                conn.execute("ROLLBACK")
        self._finish()
        for callback in callbacks:
            callback()

    @property
    def has_uncommitted_writes(self) -> bool:
        """True inside a transaction that has changed rows (caches must not read its state yet)."""
        return self._depth > 0 and self._writes

    @contextlib.contextmanager
    def scratch(self) -> Iterator[None]:
        """Writes to scratch tables that must not count as uncommitted data."""
        self._scratch += 1
        try:
            yield
        finally:
            self._scratch -= 1

    def after_commit(self, callback: Callable[[], None]) -> None:
        if self._depth == 0:
            callback()
        else:
            self._after_commit[-1].append(callback)

    def on_rollback(self, callback: Callable[[], None]) -> None:
        if self._depth > 0:
            self._on_rollback.append(callback)

    # -- errors --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Turn psycopg errors into library errors with a hint (never leak them raw)."""
        self.check_open()
        try:
            yield
        except DialectError:
            raise
        except self._psycopg.Error as exc:
            raise self._translate_error(exc) from exc
        except (UnicodeEncodeError, OverflowError) as exc:
            raise unstorable(exc) from exc
        except Exception as exc:
            if type(exc).__module__.startswith("psycopg_pool"):
                raise StorageError(
                    f"no PostgreSQL connection became free for {self.path} in time ({exc}); raise the pool size "
                    "or check for long-running transactions"
                ) from exc
            raise

    def _translate_error(self, exc: BaseException) -> Exception:
        errors = self._psycopg.errors
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, self._psycopg.DataError) and "NUL" in message:
            # psycopg refuses to send it: text in PostgreSQL cannot hold NUL, not even to compare with. Writes
            # refuse NUL before this on both backends; this is a value to look for (a filter, an id, a type)
            return ValueError(f"a text value contains a NUL character (\\x00), which PostgreSQL cannot hold or "
                              f"compare; remove it ({message})")
        if isinstance(exc, errors.InFailedSqlTransaction):
            return StorageError(
                f"an earlier statement of this transaction failed on {self.path}, so PostgreSQL refuses the rest "
                "of it; the transaction is rolled back when it ends"
            )
        if isinstance(exc, errors.LockNotAvailable):
            return busy_error(self.path, message)
        if isinstance(exc, errors.ReadOnlySqlTransaction):
            return StorageError(f"{self.path} was opened read-only; open it without read_only=True to write")
        if isinstance(exc, errors.InsufficientPrivilege):
            return StorageError(f"cannot write to {self.path} ({message}); check the database user's privileges")
        if isinstance(exc, errors.DiskFull):
            return StorageError(f"the disk of the PostgreSQL server holding {self.path} is full ({message})")
        if isinstance(exc, errors.UndefinedTable | errors.UndefinedColumn | errors.UndefinedFunction):
            return SchemaError(f"{self.path} is missing part of the openkoi-memory schema ({message})")
        if isinstance(exc, self._psycopg.OperationalError):
            return StorageError(
                f"lost the connection to PostgreSQL at {self.path} ({message}); check that the server is up and retry"
            )
        return StorageError(f"PostgreSQL error on {self.path}: {message}")

    # -- metadata --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        return self.scalar("SELECT value FROM store_meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        self.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- schema ----------------------------------------------------------------------------------

    def applied_versions(self) -> set[int]:
        exists = self._scalar_raw(
            f"SELECT to_regclass('{ident(self.schema)}._migrations') IS NOT NULL"
        )
        if not exists:
            return set()
        return {int(r[0]) for r in self.query("SELECT version FROM _migrations")}

    def schema_version(self) -> int:
        return max(self.applied_versions(), default=0)

    @staticmethod
    def latest_version() -> int:
        return latest_version()

    def migrate(self, *, dims: int, now_iso: str) -> list[int]:
        """Apply the missing numbered migrations (``dims`` is unused: the vector column takes any size)."""
        applied = apply_migrations(self, dims=dims, now_iso=now_iso)
        self.refresh_catalog()
        return applied

    @staticmethod
    def migration_statements(migration: Migration, dims: int) -> list[str]:
        """``migration``'s PostgreSQL statements (see :mod:`.migrate`)."""
        return statements(migration, dims)

    @contextlib.contextmanager
    def migration_session(self) -> Iterator[PgMigrationSession]:
        """One connection for the whole run, under a session advisory lock, with the schema created."""
        with self.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            try:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(self.schema)}")
                yield PgMigrationSession(conn, self.schema, self.path)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))

    def defer_foreign_keys(self) -> None:
        """Check foreign keys at commit, not per statement (the migrations make them deferrable)."""
        self.execute("SET CONSTRAINTS ALL DEFERRED")

    def tables_with_column(self, column: str) -> list[str]:
        return space.tables_with_column(self, column)

    # -- space -----------------------------------------------------------------------------------

    def storage_bytes(self) -> int:
        """Bytes the memory's tables, their indexes and TOAST data take on the server."""
        return space.storage_bytes(self)

    def measure_payload(self, method: str, *, columns: Sequence[str], dims: int) -> SizeMeasure:
        """The live search index's size, by ``pg_column_size`` (see :mod:`.space`)."""
        return space.measure_payload(self, method, columns=columns, dims=dims)

    def reclaim_space(self) -> tuple[int, bool]:
        """VACUUM ``memory_chunks`` after deletes (see :mod:`.space`)."""
        return space.reclaim_space(self)

    @contextlib.contextmanager
    def secure_delete(self) -> Iterator[None]:
        """Nothing to switch on: :meth:`vacuum` prunes what was deleted."""
        yield

    def refresh_statistics(self) -> None:
        """Nothing to do: ANALYZE's statistics are not rebuilt on request (see the erase caveats)."""

    def settle_after_load(self) -> None:
        """``VACUUM (ANALYZE) memory_chunks`` (see :mod:`.space`)."""
        space.settle_after_load(self)

    def vacuum(self, *, wait: float | None = None) -> None:
        """VACUUM every table of the memory (plain VACUUM: it never blocks the other servers)."""
        space.vacuum(self)

    def truncate_log(self, *, wait: float = 0.0) -> bool:
        """True: the server's WAL is not the memory's to cut (see the erase caveats)."""
        return True

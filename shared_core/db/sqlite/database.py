"""One SQLite connection, its lock, and its transactions.

Every public store method runs under ``Database.lock`` (an ``RLock``), so a store is
safe to share between threads. Writes run in ``transaction()``: writers of one file
queue on an OS file lock (fair turns, see ``WriterTurns``), then ``BEGIN IMMEDIATE``
takes the write lock up front (no failed lock upgrades between processes), nested
calls become savepoints, and callbacks registered with ``after_commit`` run only
once the outermost transaction has committed (the vector mirror uses this, so a
rolled-back write never reaches it).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import unicodedata
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import BusyError, DriverError, SchemaError, StorageError, StoreClosedError
from ...index.textform import search_form
from .. import migrations
from ..backend import Capabilities, SizeMeasure
from ..migrations import Migration, apply_migrations, latest_version
from ..transactions import NestedTransactions, busy_error, released, unstorable
from . import space
from .checkpoints import BackgroundCheckpointer
from .driver import Driver, connect, connect_companion, get_driver
from .migrate import SqliteMigrationSession, applied_versions, newest_schema, statements
from .turns import WriterTurns

if TYPE_CHECKING:
    from ..postgres.url import PgTarget

__all__ = ["Database"]

_BUSY_RETRIES = 50
# a migrated in-memory database per (process, driver, vector size): a new ":memory:" store copies its
# pages, a new file runs the statements that build its schema in one go, instead of every migration
# (~30-40 ms each time, a store per test in users' suites too); per process, as SQLite connections
# must not cross a fork
_TEMPLATES: dict[tuple[int, str, int, tuple[Migration, ...]], _Template] = {}
_TEMPLATES_LOCK = threading.Lock()


class _Template:
    """A database this process migrated, in memory, and the statements that build its schema at once."""

    def __init__(self, dims: int, now_iso: str) -> None:
        self.db = Database(":memory:")
        apply_migrations(self.db, dims=dims, now_iso=now_iso)
        self._schema: list[str] | None = None
        self._schema_made = False

    @staticmethod
    def of(driver: Driver, dims: int, now_iso: str) -> _Template:
        """This process's template for ``driver``, vector size ``dims`` and the migrations there are."""
        key = (os.getpid(), driver.name, int(dims), tuple(migrations.available_migrations()))
        with _TEMPLATES_LOCK:
            if key not in _TEMPLATES:
                _TEMPLATES[key] = _Template(dims, now_iso)
            return _TEMPLATES[key]

    def schema(self) -> list[str] | None:
        """The statements (:func:`.migrate.newest_schema`), made when a new file first needs them;
        None where they would not rebuild the schema exactly: every migration runs then."""
        with _TEMPLATES_LOCK:
            if not self._schema_made:
                empty = Database(":memory:")
                try:
                    self._schema = newest_schema(self.db.conn, empty.conn)
                except SchemaError:
                    self._schema = None
                finally:
                    empty.close()
                    self._schema_made = True
        return self._schema


class _ErrorTranslation:
    """:meth:`Database.translate_errors`: a plain class, not a generator, as it wraps every statement."""

    __slots__ = ("_db",)

    def __init__(self, db: Database) -> None:
        self._db = db

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            if isinstance(exc, self._db.driver.Error):
                raise self._db._translate(exc) from exc
            if isinstance(exc, (UnicodeEncodeError, OverflowError)):
                raise unstorable(exc) from exc


class Database(NestedTransactions):
    """A connection to one openkoi-memory file (or ``:memory:``): the SQLite :class:`~shared_core.db.Backend`."""

    dialect = "sqlite"

    def __init__(self, path: str, *, read_only: bool = False, busy_timeout_ms: int = 10_000, cache_mb: int = 64,
                 checkpoint_pages: int = 10_000, background_checkpoints: bool = True) -> None:
        self.path = path
        self.read_only = read_only
        self.driver: Driver = get_driver()
        self.capabilities = Capabilities(
            sql_flavour="sqlite", shared=False, in_memory=path == ":memory:",
            max_parameters=self.driver.max_variables, staged_erase=path != ":memory:",
        )
        if path != ":memory:":
            _prepare_location(Path(path), read_only)
        self.conn = connect(path, read_only=read_only, busy_timeout_ms=busy_timeout_ms)
        self._busy_timeout_s = busy_timeout_ms / 1000
        # SQLite's default page cache is 2 MB; a memory of 100k rows has ~200 MB of pages, and writes
        # that miss the cache (index leaves, vec0 chunks, FTS5 segments) cost 1.5x as much
        self.conn.execute(f"PRAGMA cache_size = {-1024 * int(cache_mb)}")
        # a checkpoint copies every page changed since the last one; the hot pages (FTS5's structure,
        # index interiors) change in every transaction, so fewer, larger checkpoints copy less: 10,000
        # pages made bulk loads 15 % faster than SQLite's 1,000 and left single writes as they were
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint_pages)}")
        self.lock = threading.RLock()
        self._turns = WriterTurns(None if read_only or path == ":memory:" else path)
        self._checkpointer = (
            BackgroundCheckpointer(path, lambda: connect_companion(path, busy_timeout_ms=busy_timeout_ms))
            if background_checkpoints and not read_only and path != ":memory:" else None
        )
        self._depth = 0
        # after-commit callbacks per nesting level: a rolled-back savepoint drops its own
        self._after_commit: list[list[Callable[[], None]]] = []
        self._on_rollback: list[Callable[[], None]] = []
        self._changes_at_begin = 0
        self._outer_transactions = 0  # write transactions begun: tells one from the next (see snapshot)
        self._closed = False
        self._errors = _ErrorTranslation(self)
        self.conn.create_function("casefold", 1, _casefold, deterministic=True)
        # the keyword index's triggers and view call it (migration 45)
        self.conn.create_function("openkoi_search_form", 1, search_form, deterministic=True)
        # dropped without close() (a store opened per request and never closed): the garbage
        # collector releases the file, its lock file and the checkpoint thread instead
        self._finalizer = weakref.finalize(self, _release, self.conn, self._turns, self._checkpointer)
        self._finalizer.atexit = False

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            if self._checkpointer is not None:
                self._checkpointer.close()
            try:
                if self.path != ":memory:" and not self.read_only:
                    with contextlib.suppress(self.driver.Error):
                        self.conn.execute("PRAGMA optimize")
            finally:
                self.conn.close()
                self._turns.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the store is closed; open it again with MemoryStore.open(...)")

    def companion_connection(self) -> Any:
        """A separate plain connection to this file, from the same SQLite library (see ``connect_companion``)."""
        self.check_open()
        return connect_companion(self.path)

    def postgres_target(self) -> PgTarget | None:
        """None: the memory is this file."""
        return None

    # -- statements ----------------------------------------------------------------------------

    def execute(self, sql: str, params: Any = ()) -> Any:
        with self.translate_errors():
            return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        with self.translate_errors():
            return self.conn.executemany(sql, rows)

    def insert_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``INSERT ... VALUES (?, ...)`` for many rows, hundreds of rows per statement.

        Faster than ``executemany`` beyond the saved calls: SQLite runs each statement's
        triggers inside a statement savepoint, and FTS5 writes its pending index data to disk
        at every savepoint, so a trigger that indexes one row per statement builds one tiny
        FTS5 segment per row (half the cost of a bulk load into ``memory_chunks``).
        """
        head, values = _split_values(sql)
        if not rows:
            return
        per = max(1, min(500, self.capabilities.max_parameters // len(rows[0])))
        with self.translate_errors():
            for start in range(0, len(rows), per):
                part = rows[start : start + per]
                self.conn.execute(head + ", ".join([values] * len(part)), [v for row in part for v in row])

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        with self.translate_errors():
            return self.conn.execute(sql, params).fetchall()

    def scalar(self, sql: str, params: Any = ()) -> Any:
        with self.translate_errors():
            row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    # -- transactions --------------------------------------------------------------------------

    def _open_outer(self, wait: float | None) -> None:
        deadline = time.monotonic() + (self._busy_timeout_s if wait is None else max(0.0, wait))
        with released(self.lock):  # readers of this store go on while another writer has the file
            self._turns.acquire(deadline, self.path)
        try:
            self.check_open()  # closed by another thread meanwhile
            self._begin_when_free(deadline)
        except BaseException:
            self._turns.release()
            raise
        self._changes_at_begin = self.conn.total_changes
        self._outer_transactions += 1

    def _commit_outer(self) -> None:
        self._commit()
        self._turns.release()
        if self._checkpointer is not None:
            self._checkpointer.committed(self.conn.total_changes)

    def _abort(self) -> None:
        try:
            self._rollback()
        finally:
            self._turns.release()

    def _savepoint_execute(self, sql: str) -> None:
        self.execute(sql)

    @property
    def has_uncommitted_writes(self) -> bool:
        """True inside a transaction that has changed rows (caches must not read its state yet)."""
        return self._depth > 0 and self.conn.total_changes != self._changes_at_begin

    @property
    def snapshot(self) -> tuple[int, int] | None:
        """What this connection sees, while it holds the write lock: equal values mean nothing changed
        in between (no other connection can commit meanwhile). None outside a write transaction."""
        return (self._outer_transactions, self.conn.total_changes) if self._depth > 0 else None

    @contextlib.contextmanager
    def scratch(self) -> Iterator[None]:
        """Writes to temporary scratch tables that must not count as uncommitted data."""
        before = self.conn.total_changes
        try:
            yield
        finally:
            self._changes_at_begin += self.conn.total_changes - before

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current outermost transaction commits (now, if none is open)."""
        if self._depth == 0:
            callback()
        else:
            self._after_commit[-1].append(callback)

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` if the current outermost transaction rolls back."""
        if self._depth > 0:
            self._on_rollback.append(callback)

    def _begin_when_free(self, deadline: float) -> None:
        """``BEGIN IMMEDIATE``, tried without SQLite's busy wait and retried until ``deadline`` with the
        store's lock let go between tries: a writer that does not queue for the writer's turn (another
        program on the file) keeps this store's readers waiting a short pause at most, never the busy
        timeout."""
        pause = 0.001
        self.conn.execute("PRAGMA busy_timeout = 0")
        try:
            while True:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    return
                except self.driver.OperationalError as exc:
                    if not _is_busy(exc) or time.monotonic() >= deadline:
                        raise self._translate(exc) from None
                with released(self.lock):
                    time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                self.check_open()
                pause = min(2 * pause, 0.05)
        finally:
            if not self._closed:
                self.conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")

    def _commit(self) -> None:
        self._execute_when_free("COMMIT")

    def _execute_when_free(self, sql: str, deadline: float | None = None) -> None:
        """``sql``, retried while SQLite reports the file busy, for ``busy_timeout`` in all.

        SQLite's busy handler already waits that long for an ordinary lock; some busy cases (a
        snapshot gone stale, WAL recovery by another connection) return at once, and a retry
        after a short sleep gets past them. The deadline keeps a lock that is held for good from
        costing a retry count of full waits (50 x 10 s) before the error.
        """
        deadline = time.monotonic() + self._busy_timeout_s if deadline is None else deadline
        for attempt in range(_BUSY_RETRIES):
            try:
                self.conn.execute(sql)
                return
            except self.driver.OperationalError as exc:
                if not _is_busy(exc) or attempt == _BUSY_RETRIES - 1 or time.monotonic() >= deadline:
                    raise self._translate(exc) from None
                time.sleep(min(0.05 * (attempt + 1), 0.5, max(0.0, deadline - time.monotonic())))

    def _rollback(self) -> None:
        callbacks = self._forget_callbacks()
        with contextlib.suppress(self.driver.Error):
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        for callback in callbacks:
            callback()

    # -- errors --------------------------------------------------------------------------------

    def translate_errors(self) -> _ErrorTranslation:
        """A ``with`` block that turns raw driver errors into library errors with a hint (never leak them raw)."""
        self.check_open()
        return self._errors

    def _translate(self, exc: BaseException) -> Exception:
        message = str(exc)
        lowered = message.lower()
        if _is_busy(exc):
            return busy_error(self.path, message)
        if "readonly" in lowered or "read-only" in lowered:
            return StorageError(
                f"cannot write to {self.path} ({message}); check the file and directory permissions"
            )
        if "disk" in lowered and "full" in lowered:
            return StorageError(f"the disk holding {self.path} is full ({message}); free some space")
        if "not a database" in lowered or "malformed" in lowered:
            return SchemaError(f"{self.path} is not a healthy SQLite database ({message})")
        if "no such module" in lowered:
            return DriverError(f"a SQLite extension is missing ({message}); reinstall sqlite-vec")
        return StorageError(f"SQLite error on {self.path}: {message}")

    # -- schema and maintenance ------------------------------------------------------------------

    def applied_versions(self) -> set[int]:
        with self.translate_errors():
            return applied_versions(self.conn)

    def schema_version(self) -> int:
        return max(self.applied_versions(), default=0)

    @staticmethod
    def latest_version() -> int:
        return latest_version()

    def migrate(self, *, dims: int, now_iso: str) -> list[int]:
        """Apply the missing numbered migrations; ``dims`` sizes the vector table."""
        if self.conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
            return apply_migrations(self, dims=dims, now_iso=now_iso)
        template = _Template.of(self.driver, dims, now_iso)
        if self.path != ":memory:":  # in the runner's transaction: another process may be creating the file
            return apply_migrations(self, dims=dims, now_iso=now_iso, schema=template.schema())
        with _TEMPLATES_LOCK:
            template.db.conn.backup(self.conn)
        self.conn.execute("UPDATE _migrations SET applied_at = ?", (now_iso,))
        return sorted(applied_versions(self.conn))

    @staticmethod
    def migration_statements(migration: Migration, dims: int) -> list[str]:
        """``migration``'s SQLite statements (see :mod:`.migrate`)."""
        return statements(migration, dims)

    @contextlib.contextmanager
    def migration_session(self) -> Iterator[SqliteMigrationSession]:
        """The migration runner's transactions, on this connection."""
        yield SqliteMigrationSession(self.conn, self.path)

    def defer_foreign_keys(self) -> None:
        """Check foreign keys at commit, not per statement (erasers may run in any order)."""
        self.execute("PRAGMA defer_foreign_keys = ON")

    @contextlib.contextmanager
    def secure_delete(self) -> Iterator[None]:
        """Deleted content is overwritten with zeros, not just unlinked (for erasing a user)."""
        self.execute("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            self.execute("PRAGMA secure_delete = OFF")

    def vacuum(self, *, wait: float | None = None) -> None:
        """Rewrite the file from its live pages, so no free page or slack space keeps deleted bytes.

        It is a write: it waits for the writer's turn (at most ``wait`` seconds, default the busy
        timeout, then :class:`~shared_core.errors.BusyError`) and holds it while the file is
        rewritten. The old pages stay in the write-ahead log until :meth:`truncate_log` succeeds.
        No-op in memory.
        """
        if self.path == ":memory:":
            return
        with self.lock:
            self.check_open()
            if self._depth:
                raise StorageError("VACUUM cannot run inside a transaction; call it after the transaction commits")
            deadline = time.monotonic() + (self._busy_timeout_s if wait is None else max(0.0, wait))
            with released(self.lock):
                self._turns.acquire(deadline, self.path)
            short = wait is not None and wait < self._busy_timeout_s
            try:
                with self.log_to_ourselves():
                    if short:  # SQLite's own wait (for writers that take no turn) within the same bound
                        self.conn.execute(f"PRAGMA busy_timeout = {int(max(0.0, wait or 0.0) * 1000)}")
                    self._execute_when_free("VACUUM", deadline)
            finally:
                if short:
                    self.conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
                self._turns.release()

    def truncate_log(self, *, wait: float = 0.0) -> bool:
        """Copy the write-ahead log into the file and cut it to zero bytes; True when done.

        False when another connection still reads a snapshot the log holds pages of (or a writer
        or another checkpoint was busy) for ``wait`` seconds: SQLite may not drop those pages yet.
        Writers wait while it waits, so keep ``wait`` short. True at once outside WAL mode.
        """
        if self.path == ":memory:" or self.read_only:
            return True
        with self.lock:
            self.check_open()
            if self._depth:
                raise StorageError("the log cannot be truncated inside a transaction; call it after the commit")
            if str(self.scalar("PRAGMA journal_mode")).lower() != "wal":
                return True
            deadline = time.monotonic() + max(0.0, wait)
            try:
                with released(self.lock):
                    self._turns.acquire(deadline, self.path)
            except BusyError:
                return False
            try:
                with self.log_to_ourselves():
                    self.conn.execute(f"PRAGMA busy_timeout = {int(max(0.0, wait) * 1000)}")
                    try:
                        busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                    except self.driver.OperationalError as exc:
                        if not _is_busy(exc):
                            raise self._translate(exc) from None
                        busy = 1
                    finally:
                        self.conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
            finally:
                self._turns.release()
            wal = f"{self.path}-wal"
            return int(busy) == 0 and (not os.path.exists(wal) or os.path.getsize(wal) == 0)

    @contextlib.contextmanager
    def log_to_ourselves(self) -> Iterator[None]:
        """No background checkpoint of this store runs meanwhile: a truncating checkpoint finding
        one at work would leave the WAL, and the bytes in it, as they were."""
        with self._checkpointer.paused() if self._checkpointer is not None else contextlib.nullcontext():
            yield

    def storage_bytes(self) -> int:
        """Bytes the memory takes: the file and its WAL (the pages, in memory)."""
        if self.path == ":memory:":
            return int(self.scalar("PRAGMA page_count") or 0) * int(self.scalar("PRAGMA page_size") or 0)
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))

    def measure_payload(self, method: str, *, columns: Sequence[str], dims: int) -> SizeMeasure:
        """The live search index's size: ``auto``, ``dbstat`` or ``estimate`` (see :mod:`.space`)."""
        return space.measure_payload(self, method, columns=columns, dims=dims)

    def reclaim_space(self) -> tuple[int, bool]:
        """Give freed pages back to the file system (see :mod:`.space`)."""
        return space.reclaim_space(self)

    def refresh_statistics(self) -> None:
        """Rebuild ``sqlite_stat4``'s sampled keys, which can hold erased values."""
        space.refresh_statistics(self)

    def settle_after_load(self) -> None:
        """Nothing: the load's keyword index is merged by the caller (FTS5 ``optimize``)."""

    def tables_with_column(self, column: str) -> list[str]:
        return space.tables_with_column(self, column)

    # -- metadata --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        return self.scalar("SELECT value FROM store_meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        self.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def _release(conn: Any, turns: WriterTurns, checkpointer: BackgroundCheckpointer | None) -> None:
    """What a :class:`Database` collected without ``close()`` lets go of: never waits, never raises.

    No ``PRAGMA optimize`` (the collector may run inside another store's write transaction on
    the same file, and waiting for its lock would stall that thread); the checkpoint thread is
    told to stop, not joined.
    """
    if checkpointer is not None:
        checkpointer.stop()
    with contextlib.suppress(Exception):
        conn.close()
    turns.close()


_VALUES = re.compile(r"^(\s*INSERT\s.+?\sVALUES\s*)(\([^()]*\))\s*$", re.IGNORECASE | re.DOTALL)


def _split_values(sql: str) -> tuple[str, str]:
    """``INSERT INTO t (a, b) VALUES (?, ?)`` -> (``INSERT INTO t (a, b) VALUES ``, ``(?, ?)``)."""
    match = _VALUES.match(sql)
    if match is None:
        raise ValueError(f"insert_many needs 'INSERT ... VALUES (?, ...)' with nothing after the values, got {sql!r}")
    return match.group(1), match.group(2)


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _casefold(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return unicodedata.normalize("NFKC", value).casefold()


def _prepare_location(path: Path, read_only: bool) -> None:
    if path.is_dir():
        raise StorageError(f"{path} is a directory; give a file path such as {path / 'openkoi.db'}")
    if read_only:
        if not path.exists():
            raise StorageError(f"{path} does not exist; a read-only store must open an existing file")
        return
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create the directory {parent} ({exc.strerror}); choose a writable location") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StorageError(
            f"the directory {parent} is not writable, and SQLite needs to create files beside {path.name}; "
            "choose a writable location or fix the permissions"
        )
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StorageError(f"{path} is not readable and writable by this user; fix its permissions")

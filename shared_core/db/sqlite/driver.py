"""Pick a SQLite DB-API module that can load sqlite-vec, and open connections with it.

The stdlib ``sqlite3`` is used when its build allows ``enable_load_extension``. Many
builds do not (pyenv's default, the macOS system Python, some distributions), so the
fallback is ``sqlean.py``: a DB-API module with its own bundled, recent SQLite that
has FTS5 and extension loading, published as wheels for Linux, macOS and Windows on
x86-64 and ARM. ``OPENKOI_SQLITE_DRIVER=stdlib|sqlean`` forces one.
"""

from __future__ import annotations

import functools
import os
import sqlite3 as _stdlib_sqlite3
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import sqlite_vec

from ...errors import DriverError, SchemaError

__all__ = ["Driver", "get_driver", "connect", "connect_companion"]


@dataclass(frozen=True)
class Driver:
    """A DB-API module and the facts about it that the library needs."""

    name: str  # "stdlib" or "sqlean"
    module: ModuleType

    @property
    def sqlite_version(self) -> str:
        return self.module.sqlite_version

    @property
    def max_variables(self) -> int:
        """Bound parameters one statement may take (SQLite's default limit: 32,766 since 3.32, 999 before)."""
        version = tuple(int(part) for part in self.sqlite_version.split(".")[:2])
        return 32_766 if version >= (3, 32) else 999

    @property
    def Error(self) -> type[Exception]:  # noqa: N802 - mirrors the DB-API name
        return self.module.Error

    @property
    def OperationalError(self) -> type[Exception]:  # noqa: N802
        return self.module.OperationalError

    @property
    def IntegrityError(self) -> type[Exception]:  # noqa: N802
        return self.module.IntegrityError

    @property
    def DatabaseError(self) -> type[Exception]:  # noqa: N802
        return self.module.DatabaseError


def _stdlib_can_load_extensions() -> bool:
    return hasattr(_stdlib_sqlite3.Connection, "enable_load_extension")


def _sqlean() -> ModuleType:
    try:
        import sqlean  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - sqlean.py is a hard dependency
        raise DriverError(
            "this Python's sqlite3 cannot load extensions and the fallback driver is missing; "
            "run: pip install sqlean.py"
        ) from exc
    return sqlean


_cached: Driver | None = None


def get_driver() -> Driver:
    """The driver this process uses (decided once)."""
    global _cached
    if _cached is not None:
        return _cached
    forced = os.environ.get("OPENKOI_SQLITE_DRIVER", "").strip().lower()
    if forced not in {"", "stdlib", "sqlean"}:
        raise DriverError(f"OPENKOI_SQLITE_DRIVER={forced!r} is unknown; use 'stdlib' or 'sqlean'")
    if forced == "stdlib":
        if not _stdlib_can_load_extensions():
            raise DriverError(
                "OPENKOI_SQLITE_DRIVER=stdlib, but this Python's sqlite3 was built without extension "
                "loading; unset the variable to use the bundled sqlean driver"
            )
        _cached = Driver("stdlib", _stdlib_sqlite3)
    elif forced == "sqlean" or not _stdlib_can_load_extensions():
        _cached = Driver("sqlean", _sqlean())
    else:
        _cached = Driver("stdlib", _stdlib_sqlite3)
    return _cached


def connect(path: str, *, read_only: bool = False, busy_timeout_ms: int = 10_000) -> Any:
    """Open a connection with sqlite-vec loaded, WAL, busy timeout and foreign keys on.

    Transactions are explicit (``isolation_level=None``): callers use ``BEGIN IMMEDIATE``
    so that a writer takes the lock up front instead of failing to upgrade later.
    """
    driver = get_driver()
    target = path
    uri = False
    if read_only and path != ":memory:":
        target = f"file:{os.path.abspath(path)}?mode=ro"
        uri = True
    try:
        conn = driver.module.connect(
            target, isolation_level=None, check_same_thread=False, uri=uri, timeout=busy_timeout_ms / 1000
        )
    except driver.Error as exc:
        raise DriverError(f"cannot open {path}: {exc}") from None
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except (AttributeError, driver.Error) as exc:
        conn.close()
        raise DriverError(
            f"could not load the sqlite-vec extension with the {driver.name} driver ({exc}); "
            "reinstall with: pip install --force-reinstall sqlite-vec sqlean.py"
        ) from None
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except driver.DatabaseError as exc:
        conn.close()
        raise SchemaError(
            f"{path} is not an SQLite database ({exc}); point the store at a new or existing openkoi-memory file"
        ) from None
    if not _has_fts5(driver):
        conn.close()
        raise DriverError(
            f"the SQLite {driver.sqlite_version} used by the {driver.name} driver has no FTS5; "
            "set OPENKOI_SQLITE_DRIVER=sqlean to use the bundled SQLite, which has it"
        )
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    conn.execute("PRAGMA foreign_keys = ON")
    if path != ":memory:" and not read_only:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # pragma: no cover - e.g. a network filesystem
            conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def connect_companion(path: str, *, busy_timeout_ms: int = 10_000) -> Any:
    """A plain DB-API connection to ``path`` from the SQLite library the store uses.

    For other libraries that keep their own tables in a store's file (LangGraph's SQLite
    checkpointer, say). Default DB-API transaction handling, no extensions loaded. It must
    come from the same SQLite build as the store's own connection: two builds in one
    process do not see each other's locks, so two writers can both take the WAL write lock
    and one commit is silently lost (sqlite.org/howtocorrupt.html, "Multiple copies of
    SQLite linked into the same application"); ``tests/core/test_companion_connection.py``
    shows the lost commit and the fix.
    """
    if path == ":memory:":
        raise ValueError("an in-memory store cannot be shared with another connection; open the store on a file")
    driver = get_driver()
    try:
        conn = driver.module.connect(path, check_same_thread=False, timeout=busy_timeout_ms / 1000)
    except driver.Error as exc:
        raise DriverError(f"cannot open {path}: {exc}") from None
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    return conn


@functools.cache
def _has_fts5(driver: Driver) -> bool:
    """Probe once per driver, on a throwaway in-memory database (never on the user's file)."""
    probe = driver.module.connect(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE fts5_probe USING fts5(x)")
        return True
    except driver.Error:
        return False
    finally:
        probe.close()

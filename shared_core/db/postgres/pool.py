"""Connections to PostgreSQL: psycopg loaded on demand, values adapted as SQLite returns them,
one pool per memory in a process, and the result of a finished statement."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import DriverError, StorageError
from .url import PgTarget

__all__ = ["POOLS", "PgDriver", "Result", "psycopg_modules", "register_vector"]

LOCK_TIMEOUT_S = 60  # how long a statement inside a transaction waits for a row lock before giving up


def psycopg_modules() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise DriverError(
            "a postgresql:// memory needs psycopg 3 and psycopg-pool; install them with: "
            'pip install "psycopg[binary]" psycopg-pool'
        ) from exc
    return psycopg, psycopg_pool


# -- adapters: values in and out as the SQLite driver has them --------------------------------


def _adapters(conn: Any) -> None:
    from psycopg.adapt import Dumper, Loader

    class BoolAsInt(Dumper):  # SQLite stores True as 1; our INTEGER columns are bigint
        oid = 20

        def dump(self, obj: bool) -> bytes:
            return b"1" if obj else b"0"

    class NumericLoader(Loader):  # sum()/avg() of integers: int when whole, like SQLite
        def load(self, data: Any) -> Any:
            text = bytes(data).decode()
            if text in ("NaN", "Infinity", "-Infinity"):
                return float(text.replace("Infinity", "inf"))
            return float(text) if any(c in text for c in ".eE") else int(text)

    class FloatLoader(Loader):  # numpy scalars never appear: plain float, as SQLite gives
        def load(self, data: Any) -> float:
            return float(bytes(data).decode())

    conn.adapters.register_dumper(bool, BoolAsInt)
    conn.adapters.register_loader("numeric", NumericLoader)
    conn.adapters.register_loader("float4", FloatLoader)


def register_vector(conn: Any) -> bool:
    """numpy arrays <-> pgvector's binary format on this connection (False before the extension exists)."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format

    row = conn.execute("SELECT to_regtype('vector')::oid").fetchone()
    oid = row[0] if row else None
    if not oid:
        return False

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: np.ndarray) -> bytes:
            vector = np.asarray(obj, dtype=">f4").ravel()
            return len(vector).to_bytes(2, "big") + b"\x00\x00" + vector.tobytes()

    VectorDumper.oid = oid

    class VectorLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            return np.frombuffer(bytes(data)[4:], dtype=">f4").astype(np.float32)

    class VectorTextLoader(Loader):
        def load(self, data: Any) -> np.ndarray:
            text = bytes(data).decode().strip("[]")
            return np.array([float(x) for x in text.split(",")] if text else [], dtype=np.float32)

    conn.adapters.register_dumper(np.ndarray, VectorDumper)
    conn.adapters.register_loader(oid, VectorLoader)
    conn.adapters.register_loader(oid, VectorTextLoader)
    return True


# -- shared pools ------------------------------------------------------------------------------


class Pools:
    """One pool per (conninfo, schema) in a process, shared by every store open on it.

    ``linger``: keep a pool (and its open connections) after its last store closes, for
    programs that open and close stores on the same memory over and over (test suites,
    request handlers); closed at exit.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: dict[tuple[str, str, int, bool], list[Any]] = {}
        self._inherited: list[Any] = []  # a forked child's copies of its parent's pools: never used, never closed
        self.linger = False

    def forget_inherited(self) -> None:
        """In a forked child: open new pools from now on. The parent's connections are its server sessions;
        using them would mix two processes' statements on one session, and closing them (here or when they
        are collected) would end the parent's sessions, so they are only kept out of reach."""
        self._inherited.extend(self._pools.values())
        self._pools = {}
        self._lock = threading.Lock()

    def acquire(self, target: PgTarget, size: int, search_path: Callable[[Any], str], read_only: bool = False) -> Any:
        key = (target.conninfo, target.schema, size, read_only)
        with self._lock:
            entry = self._pools.get(key)
            if entry is not None:
                entry[1] += 1
                return entry[0]
            _, psycopg_pool = psycopg_modules()

            def configure(conn: Any) -> None:
                _adapters(conn)
                conn.execute(f"SET search_path TO {search_path(conn)}")
                conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT_S}s'")  # SQLite's busy timeout, roughly
                # psycopg prepares a statement run five times; PostgreSQL would then plan it once for any
                # value, and a plan made for the average namespace scans the whole table for a small one
                conn.execute("SET plan_cache_mode = force_custom_plan")
                if read_only:
                    conn.execute("SET default_transaction_read_only = on")
                conn._openkoi_vector = register_vector(conn)  # type: ignore[attr-defined]

            pool = psycopg_pool.ConnectionPool(
                target.conninfo, min_size=1, max_size=size, kwargs={"autocommit": True}, configure=configure,
                open=False, name=f"openkoi:{target.schema}", timeout=30.0, num_workers=1,
            )
            try:
                pool.open(wait=True, timeout=30.0)
            except Exception as exc:
                pool.close()
                raise StorageError(
                    f"cannot connect to PostgreSQL at {target.display} ({exc}); check the URL, that the server "
                    "is running, and the user's password"
                ) from None
            self._pools[key] = [pool, 1]
            return pool

    def release(self, pool: Any) -> None:
        with self._lock:
            for key, entry in list(self._pools.items()):
                if entry[0] is pool:
                    entry[1] -= 1
                    if entry[1] <= 0 and not self.linger:
                        del self._pools[key]
                        pool.close()
                    return

    def close_all(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool, _ in pools:
            with contextlib.suppress(Exception):
                pool.close()


POOLS = Pools()
atexit.register(POOLS.close_all)
os.register_at_fork(after_in_child=POOLS.forget_inherited)


@dataclass(frozen=True)
class PgDriver:
    """What ``store.db.driver`` says on PostgreSQL (``sqlite_version`` holds the server's version)."""

    name: str
    sqlite_version: str
    Error: type[Exception]  # noqa: N815 - mirrors the DB-API name


class Result:
    """A finished statement: rows fetched eagerly (the connection went back to the pool)."""

    def __init__(self, rows: list[Any], rowcount: int, lastrowid: int | None, description: Any) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount
        self.lastrowid = lastrowid
        self.description = description

    def fetchone(self) -> Any:
        if self._next >= len(self._rows):
            return None
        row = self._rows[self._next]
        self._next += 1
        return row

    def fetchall(self) -> list[Any]:
        rows = self._rows[self._next :]
        self._next = len(self._rows)
        return rows

    def fetchmany(self, size: int = 1) -> list[Any]:
        rows = self._rows[self._next : self._next + size]
        self._next += len(rows)
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

"""Companion connections: other libraries' tables in the store's file, from the same SQLite build."""

from __future__ import annotations

import sqlite3

import pytest

from shared_core import MemoryStore
from shared_core.db.sqlite.driver import connect_companion, get_driver

pytestmark = pytest.mark.sqlite_only  # companion connections share an SQLite file's locks


def _second_writer_is_blocked(first, second) -> bool:
    first.execute("BEGIN IMMEDIATE")
    try:
        second.execute("BEGIN IMMEDIATE")
    except Exception as exc:  # the driver's OperationalError: "database is locked"
        assert "locked" in str(exc)
        return True
    finally:
        first.execute("ROLLBACK")
    second.execute("ROLLBACK")
    return False


def test_companion_connection_shares_the_stores_locks(file_store):
    companion = file_store.db.companion_connection()
    try:
        companion.execute("PRAGMA busy_timeout = 0")
        companion.isolation_level = None
        assert _second_writer_is_blocked(file_store.db.conn, companion)
        companion.execute("CREATE TABLE IF NOT EXISTS side (x)")
        companion.execute("INSERT INTO side VALUES (1)")
        assert file_store.db.query("SELECT x FROM side") == [(1,)]
    finally:
        companion.close()


@pytest.mark.skipif(get_driver().module is sqlite3, reason="the store already uses the stdlib sqlite3 build")
def test_a_second_sqlite_build_in_the_process_loses_a_commit(tmp_path):
    """Why the companion exists: stdlib sqlite3 beside the bundled build takes the same write lock."""
    path = str(tmp_path / "two-builds.db")
    with MemoryStore.open(path) as store:
        store.db.execute("CREATE TABLE side (x)")
        foreign = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            assert not _second_writer_is_blocked(store.db.conn, foreign)
            store.db.execute("BEGIN IMMEDIATE")
            store.db.execute("INSERT INTO side VALUES ('store')")
            foreign.execute("BEGIN IMMEDIATE")  # should wait for the store's lock, but gets it
            foreign.execute("INSERT INTO side VALUES ('foreign')")
            foreign.execute("COMMIT")
            store.db.execute("COMMIT")
        finally:
            foreign.close()
        assert store.db.query("SELECT x FROM side") == [("store",)]  # the other commit is gone


def test_in_memory_stores_have_no_companion():
    with MemoryStore.open(":memory:") as store:
        with pytest.raises(ValueError, match="in-memory"):
            store.db.companion_connection()
    with pytest.raises(ValueError):
        connect_companion(":memory:")
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.db.companion_connection()

"""The SQLite backend's part of the migration runner: statements split by SQLite itself, one connection.

Each migration's transaction is ``BEGIN IMMEDIATE`` on the store's own connection, so processes
opening the same file at once take turns and the second finds the first one's versions.
"""

from __future__ import annotations

from typing import Any

from ...errors import SchemaError
from ..migrations import ConnectionSession, Migration
from .driver import get_driver

__all__ = ["SqliteMigrationSession", "applied_versions", "statements"]


def statements(migration: Migration, dims: int) -> list[str]:
    """The SQLite blocks of ``migration`` split into statements (trigger bodies stay whole)."""
    complete = get_driver().module.complete_statement
    out: list[str] = []
    for block, _ in migration.blocks("sqlite"):
        text = block.replace("@DIMS@", str(int(dims)))
        buffer = ""
        for line in text.splitlines(keepends=True):
            stripped = line.strip()
            if not buffer and (not stripped or stripped.startswith("--")):
                continue
            buffer += line
            if complete(buffer):
                out.append(buffer.strip())
                buffer = ""
        if buffer.strip():
            raise SchemaError(f"migration {migration.version} ({migration.name}) ends a block with an incomplete "
                              "statement")
    return out


def applied_versions(conn: Any) -> set[int]:
    """Every migration recorded in ``_migrations`` (empty for a database without our tables)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if not exists:
        return set()
    return {int(row[0]) for row in conn.execute("SELECT version FROM _migrations")}


class SqliteMigrationSession(ConnectionSession):
    """:class:`~shared_core.db.migrations.MigrationSession` on the store's connection to ``path``."""

    begin_sql = "BEGIN IMMEDIATE"

    def applied(self) -> set[int]:
        return applied_versions(self._conn)

    def refuse_foreign_tables(self) -> None:
        """A file without our ``_migrations`` but with tables of our names belongs to something else."""
        clash = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('memory_chunks', 'learnings', 'tasks')"
        ).fetchone()
        if clash:
            raise SchemaError(f"{self._path} already has a table named {clash[0]!r} that openkoi-memory did not "
                              "create; use a different file")

    def create_log(self) -> None:
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )

    def record(self, migration: Migration, now_iso: str) -> None:
        self._conn.execute("INSERT INTO _migrations (version, name, applied_at) VALUES (?, ?, ?)",
                           (migration.version, migration.name, now_iso))

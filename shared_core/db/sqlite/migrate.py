"""The SQLite backend's part of the migration runner: statements split by SQLite itself, one connection.

Each migration's transaction is ``BEGIN IMMEDIATE`` on the store's own connection, so processes
opening the same file at once take turns and the second finds the first one's versions.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import SchemaError
from ..migrations import ConnectionSession, Migration
from .driver import get_driver

__all__ = ["SqliteMigrationSession", "applied_versions", "newest_schema", "statements"]


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


def newest_schema(migrated: Any, empty: Any) -> list[str]:
    """Statements that build the schema of ``migrated`` (a database every migration ran on) on an empty
    database in one go: a new file needs the result, not the history (each ``ALTER TABLE`` re-reads
    the whole schema; ~40 ms of statements against a few).

    They are SQLite's own text of each object, tables first, leaving out the tables a virtual table
    makes for itself, then the FTS5 options and the rows the migrations set. ``empty``, a connection
    to an empty database with the same extensions, runs them as a check: what they do not rebuild
    exactly (objects, rows, options) raises :class:`SchemaError`.
    """
    objects = [(kind, name, sql) for kind, name, _, sql in _objects(migrated) if sql is not None]
    out: list[str] = []
    ordinary: list[str] = []
    for kind, name, sql in objects:
        if _exists(empty, name):  # a virtual table's own tables exist once it does
            continue
        empty.execute(sql)
        out.append(sql)
        if kind == "table" and not sql.upper().startswith("CREATE VIRTUAL"):
            ordinary.append(name)
    fts5 = [name for kind, name, sql in objects if kind == "table" and re.search(r"USING\s+fts5\b", sql, re.I)]
    for name in fts5:  # options such as automerge live in the table's config rows, set by a command
        options = migrated.execute(f'SELECT k, v FROM "{name}_config" WHERE k <> \'version\'').fetchall()
        for key, value in options:
            out.append(f'INSERT INTO "{name}"("{name}", rank) VALUES ({_literal(empty, key)}, {_literal(empty, value)})')
            empty.execute(out[-1])
    for name in ordinary:
        for (row,) in migrated.execute(f'SELECT {_row_literal(migrated, name)} FROM "{name}"'):
            out.append(f'INSERT INTO "{name}" VALUES ({row})')
            empty.execute(out[-1])
    _check_same(migrated, empty, skip={f"{name}_data" for name in fts5})  # FTS5's cookie and averages differ
    return out


def _objects(conn: Any) -> list[tuple[str, str, str, str | None]]:
    """(type, name, table, SQL) of every object but SQLite's own and the migration log, tables first,
    each kind in the order made."""
    return list(conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!' "
        "AND tbl_name <> '_migrations' ORDER BY type <> 'table', rowid"
    ).fetchall())


def _exists(conn: Any, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _literal(conn: Any, value: Any) -> str:
    return str(conn.execute("SELECT quote(?)", (value,)).fetchone()[0])


def _row_literal(conn: Any, table: str) -> str:
    """An expression giving a row of ``table`` as SQL literals separated by commas."""
    columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
    return " || ',' || ".join(f'quote("{column}")' for column in columns)


def _check_same(migrated: Any, built: Any, *, skip: set[str]) -> None:
    """Raise :class:`SchemaError` unless ``built`` has ``migrated``'s objects and, in its tables (a
    virtual table's own ones included, but not those in ``skip``), its rows."""
    schema, rebuilt = set(_objects(migrated)), set(_objects(built))
    if schema != rebuilt:
        raise SchemaError(f"the schema built in one go differs from the migrated one: {schema ^ rebuilt}")
    for kind, name, _, sql in schema:
        if kind != "table" or name in skip or (sql or "").upper().startswith("CREATE VIRTUAL"):
            continue
        rows = [sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"').fetchall())) for conn in (migrated, built)]
        if rows[0] != rows[1]:
            raise SchemaError(f"the schema built in one go leaves other rows in {name} than the migrations")


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

"""The PostgreSQL backend's part of the migration runner: shared statements translated, one connection.

A migration's shared blocks are SQLite's dialect: ``CREATE TABLE`` and ``ALTER TABLE ... ADD``
get PostgreSQL's types (:func:`.translate.translate_ddl`), other DDL passes as written, and DML
goes through the statement translator. What cannot be translated (a trigger, a virtual table, a
PRAGMA) in a shared block stops the upgrade with an error that says where it belongs. The
``-- @postgresql`` blocks are PostgreSQL's own SQL (only their column types are mapped).

The run holds one pooled connection and a session advisory lock, so concurrent openers (several
app servers starting at once) take turns; each migration is one transaction on it.
"""

from __future__ import annotations

from typing import Any

from ...errors import SchemaError
from ..migrations import ConnectionSession, Migration
from .translate import Catalog, DialectError, split_statements, tokenize, translate, translate_ddl

__all__ = ["MIGRATION_LOCK", "PgMigrationSession", "statements"]

MIGRATION_LOCK = 0x4F4B4D47  # "OKMG": one migrator at a time per database
_UNTRANSLATABLE = ("TRIGGER", "VIRTUAL", "PRAGMA")


def statements(migration: Migration, dims: int) -> list[str]:
    """``migration``'s statements for PostgreSQL, in file order."""
    out = []
    for block, shared in migration.blocks("postgresql"):
        for statement in split_statements(block.replace("@DIMS@", str(int(dims)))):
            out.append(_shared(migration, statement) if shared else _own(statement))
    return out


def _words(statement: str) -> list[str]:
    return [t.text.upper() for t in tokenize(statement) if t.kind not in ("space", "comment")]


def _own(statement: str) -> str:
    words = _words(statement)
    if words[:2] == ["CREATE", "TABLE"] or (words[:2] == ["ALTER", "TABLE"] and "ADD" in words):
        return translate_ddl(statement)
    return statement


def _shared(migration: Migration, statement: str) -> str:
    words = _words(statement)
    if words[0] == "PRAGMA" or (words[0] == "CREATE" and any(w in words[1:3] for w in _UNTRANSLATABLE)):
        raise SchemaError(
            f"migration {migration.version} ({migration.name}) uses {' '.join(words[:3])}, which has no automatic "
            "PostgreSQL translation; put it in a '-- @sqlite' block of the migration and write its PostgreSQL "
            "version in a '-- @postgresql' block"
        )
    if words[0] in ("CREATE", "DROP", "ALTER"):
        return _own(statement)
    try:
        return translate(statement, Catalog()).sql.replace("%%", "%")
    except DialectError as exc:
        raise SchemaError(f"migration {migration.version} ({migration.name}): {exc}") from None


class PgMigrationSession(ConnectionSession):
    """:class:`~shared_core.db.migrations.MigrationSession` on one connection to the memory's schema."""

    def __init__(self, conn: Any, schema: str, path: str) -> None:
        super().__init__(conn, path)
        self._schema = schema

    def applied(self) -> set[int]:
        exists = self._conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = '_migrations'",
            (self._schema,),
        ).fetchone()
        if not exists:
            return set()
        return {int(r[0]) for r in self._conn.execute("SELECT version FROM _migrations")}

    def refuse_foreign_tables(self) -> None:
        clash = self._conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name IN ('memory_chunks', 'learnings', 'tasks') LIMIT 1", (self._schema,)
        ).fetchone()
        if clash:
            raise SchemaError(
                f"the schema {self._schema!r} of {self._path} already has a table named {clash[0]!r} that "
                "openkoi-memory did not create; use another schema (?schema=name in the URL)"
            )

    def create_log(self) -> None:
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )

    def record(self, migration: Migration, now_iso: str) -> None:
        self._conn.execute("INSERT INTO _migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                           (migration.version, migration.name, now_iso))

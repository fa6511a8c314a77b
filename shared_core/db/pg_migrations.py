"""The PostgreSQL backend's migrations: the same numbered versions as the SQLite files.

For each version in ``shared_core/db/migrations/`` the runner uses the PostgreSQL twin
``shared_core/db/migrations_pg/NNNN_name.sql`` when there is one (the SQLite file uses
FTS5, sqlite-vec or triggers), and otherwise translates the SQLite file statement by
statement (:func:`~.pg_translate.translate_ddl` for tables and columns, the DML translator
for the rest). A SQLite migration that cannot be translated (a trigger, a virtual table)
and has no twin stops the upgrade with an error that says so. Versions that exist only in
``migrations_pg/`` run on PostgreSQL only.

Each version runs in one transaction, recorded in ``_migrations``; a session advisory
lock makes concurrent openers (several app servers starting at once) take turns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from ..errors import SchemaError
from .migrations import available_migrations
from .postgres.translate import (
    Catalog,
    DialectError,
    split_statements,
    tokenize,
    translate,
    translate_ddl,
)

if TYPE_CHECKING:
    from .postgres import PostgresDatabase

__all__ = ["PgMigration", "pg_migrations", "apply_pg_migrations"]

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_MIGRATION_LOCK = 0x4F4B4D47  # "OKMG": one migrator at a time per database
_UNTRANSLATABLE = ("TRIGGER", "VIRTUAL", "PRAGMA")


@dataclass(frozen=True)
class PgMigration:
    version: int
    name: str
    statements: tuple[str, ...]
    twin: bool  # written for PostgreSQL (else translated from the SQLite file)


def _twins() -> dict[int, tuple[str, str]]:
    found = {}
    for entry in resources.files(__package__).joinpath("migrations_pg").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found[int(match.group(1))] = (match.group(2), entry.read_text(encoding="utf-8"))
    return found


def _prepare(statement: str) -> str:
    words = [t.text.upper() for t in tokenize(statement) if t.kind not in ("space", "comment")]
    if words[:2] == ["CREATE", "TABLE"] or (words[:2] == ["ALTER", "TABLE"] and "ADD" in words):
        return translate_ddl(statement)
    return statement


def _translated(version: int, name: str, sql: str) -> tuple[str, ...]:
    out = []
    for statement in split_statements(sql):
        words = [t.text.upper() for t in tokenize(statement) if t.kind not in ("space", "comment")]
        if words[0] == "PRAGMA" or (words[0] == "CREATE" and any(w in words[1:3] for w in _UNTRANSLATABLE)):
            raise SchemaError(
                f"migration {version} ({name}) uses {' '.join(words[:3])}, which has no automatic PostgreSQL "
                f"translation; add its PostgreSQL twin as shared_core/db/migrations_pg/{version:04d}_{name}.sql"
            )
        if words[:2] == ["CREATE", "TABLE"] or (words[:2] == ["ALTER", "TABLE"] and "ADD" in words):
            out.append(translate_ddl(statement))
        elif words[0] in ("CREATE", "DROP", "ALTER"):
            out.append(statement)
        else:
            try:
                out.append(translate(statement, Catalog()).sql.replace("%%", "%"))
            except DialectError as exc:
                raise SchemaError(f"migration {version} ({name}): {exc}") from None
    return tuple(out)


def pg_migrations() -> list[PgMigration]:
    """Every version, in order, as PostgreSQL statements."""
    twins = _twins()
    by_version: dict[int, PgMigration] = {}
    for migration in available_migrations():
        if migration.version in twins:
            continue
        by_version[migration.version] = PgMigration(
            migration.version, migration.name, _translated(migration.version, migration.name, migration.sql), False
        )
    for version, (name, sql) in twins.items():
        by_version[version] = PgMigration(version, name, tuple(_prepare(s) for s in split_statements(sql)), True)
    return [by_version[v] for v in sorted(by_version)]


def latest_pg_version() -> int:
    migrations = pg_migrations()
    return migrations[-1].version if migrations else 0


def apply_pg_migrations(db: PostgresDatabase, *, now_iso: str) -> list[int]:
    """Bring the memory's schema up to date; return the versions applied. Refuses a newer schema."""
    migrations = pg_migrations()
    newest = migrations[-1].version if migrations else 0
    schema = '"' + db.schema.replace('"', '""') + '"'
    applied: list[int] = []
    with db.connection() as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
        try:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            done = _done(conn, db.schema)
            current = max(done, default=0)
            if current > newest:
                raise SchemaError(
                    f"{db.path} was written by a newer openkoi-memory (schema version {current}; this version "
                    f"knows up to {newest}); upgrade with: pip install -U openkoi-memory"
                )
            if not done:
                clash = conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                    "AND table_name IN ('memory_chunks', 'learnings', 'tasks') LIMIT 1", (db.schema,)
                ).fetchone()
                if clash:
                    raise SchemaError(
                        f"the schema {db.schema!r} of {db.path} already has a table named {clash[0]!r} that "
                        "openkoi-memory did not create; use another schema (?schema=name in the URL)"
                    )
            for migration in migrations:
                if migration.version in done:
                    continue
                conn.execute("BEGIN")
                try:
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS _migrations (version BIGINT PRIMARY KEY, "
                        "name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                    )
                    for statement in migration.statements:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO _migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                        (migration.version, migration.name, now_iso),
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                applied.append(migration.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
    return applied


def _done(conn: object, schema: str) -> set[int]:
    exists = conn.execute(  # type: ignore[attr-defined]
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = '_migrations'", (schema,)
    ).fetchone()
    if not exists:
        return set()
    return {int(r[0]) for r in conn.execute("SELECT version FROM _migrations")}  # type: ignore[attr-defined]

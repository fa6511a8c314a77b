"""Numbered SQL migrations, applied on open, one transaction each, recorded in ``_migrations``.

A migration is a file ``NNNN_name.sql`` in ``shared_core/db/migrations/``. Released
migrations are never edited; a change is a new file. ``@DIMS@`` in a file stands for
the embedder's dimensions (the vector table is sized to it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..errors import SchemaError

__all__ = [
    "Migration", "available_migrations", "latest_version", "apply_migrations", "schema_version", "applied_versions",
    "schema_tables",
]

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    def statements(self, dims: int) -> list[str]:
        """The file split into statements (trigger bodies stay whole)."""
        from .sqlite.driver import get_driver

        complete = get_driver().module.complete_statement
        text = self.sql.replace("@DIMS@", str(int(dims)))
        out: list[str] = []
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
            raise SchemaError(f"migration {self.version} ({self.name}) ends with an incomplete statement")
        return out


def available_migrations() -> list[Migration]:
    found = []
    for entry in resources.files(__package__).joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):  # pragma: no cover - a packaging mistake
        raise SchemaError(f"two migrations share a number: {versions}")
    return found


_CREATE = re.compile(r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_RENAME = re.compile(r"^\s*ALTER\s+TABLE\s+([A-Za-z_][A-Za-z0-9_]*)\s+RENAME\s+TO\s+([A-Za-z_][A-Za-z0-9_]*)",
                     re.IGNORECASE)
_DROP = re.compile(r"^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def schema_tables() -> list[str]:
    """The plain tables the migrations leave behind (the logical schema; virtual tables left out)."""
    from .postgres.translate import split_statements

    tables: list[str] = []
    for migration in available_migrations():
        for statement in split_statements(migration.sql):
            statement = re.sub(r"--[^\n]*", "", statement)
            if (match := _CREATE.match(statement)) and "TEMP" not in statement.split("(")[0].upper():
                tables.append(match.group(1).lower())
            elif match := _RENAME.match(statement):
                tables = [match.group(2).lower() if t == match.group(1).lower() else t for t in tables]
            elif match := _DROP.match(statement):
                tables = [t for t in tables if t != match.group(1).lower()]
    return list(dict.fromkeys(tables))


def latest_version() -> int:
    migrations = available_migrations()
    return migrations[-1].version if migrations else 0


def applied_versions(conn: Any) -> set[int]:
    """Every migration recorded in ``_migrations`` (empty for a database without our tables)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if not exists:
        return set()
    return {int(row[0]) for row in conn.execute("SELECT version FROM _migrations")}


def schema_version(conn: Any) -> int:
    """The highest applied migration (0 for a database without our tables)."""
    return max(applied_versions(conn), default=0)


def apply_migrations(conn: Any, *, dims: int, now_iso: str, path: str) -> list[int]:
    """Bring the schema up to date; return the versions applied. Refuses a newer schema."""
    current = schema_version(conn)
    newest = latest_version()
    if current > newest:
        raise SchemaError(
            f"{path} was written by a newer openkoi-memory (schema version {current}; this version "
            f"knows up to {newest}); upgrade with: pip install -U openkoi-memory"
        )
    applied = []
    done = applied_versions(conn)
    for migration in available_migrations():
        if migration.version in done:  # every missing version runs, not only those above the highest
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            present = applied_versions(conn)  # read under the write lock: other processes may be opening it too
            if migration.version in present:  # another process got here first
                conn.execute("COMMIT")
                continue
            if not present:
                _refuse_foreign_tables(conn, path)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS _migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            for statement in migration.statements(dims):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO _migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, now_iso),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(migration.version)
    return applied


def _refuse_foreign_tables(conn: Any, path: str) -> None:
    """A file without our ``_migrations`` but with tables of our names belongs to something else."""
    clash = conn.execute(
        "SELECT name FROM sqlite_master WHERE name IN ('memory_chunks', 'learnings', 'tasks')"
    ).fetchone()
    if clash:
        raise SchemaError(
            f"{path} already has a table named {clash[0]!r} that openkoi-memory did not create; use a different file"
        )

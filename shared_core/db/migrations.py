"""Numbered SQL migrations for both backends, applied on open, one transaction each, recorded in ``_migrations``.

A migration is one file ``NNNN_name.sql`` in ``shared_core/db/migrations/``, written once for both
backends in SQLite's dialect (the PostgreSQL backend maps its column types and statements, see
:mod:`.postgres.translate`). Where the SQL really differs (FTS5 and sqlite-vec tables, triggers,
PostgreSQL's functions and generated columns), a line ``-- @sqlite`` or ``-- @postgresql`` starts
a block for that backend only, and ``-- @both`` returns to shared statements; the blocks run in
file order. Released migrations are never edited; a change is a new file. ``@DIMS@`` stands for
the embedder's dimensions (the vector table is sized to it).

One runner (:func:`apply_migrations`) serves both backends: the backend splits a migration into
its statements and gives a :class:`MigrationSession` (its connection, its transaction and its
catalog), and the runner decides what to apply.
"""

from __future__ import annotations

import functools
import re
from contextlib import AbstractContextManager
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

from ..errors import SchemaError

__all__ = [
    "ConnectionSession", "Migration", "MigrationSession", "Migrator", "apply_migrations", "available_migrations", "latest_version",
]

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_MARKER = re.compile(r"^--\s*@(sqlite|postgresql|both)\s*$")
BACKENDS = ("sqlite", "postgresql")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    def blocks(self, dialect: str) -> list[tuple[str, bool]]:
        """The file's text for ``dialect`` in order, as (text, shared by both backends) blocks."""
        if dialect not in BACKENDS:
            raise ValueError(f"unknown backend {dialect!r}; migrations are written for {', '.join(BACKENDS)}")
        out: list[tuple[str, bool]] = []
        current, lines = "both", []
        for line in self.sql.splitlines(keepends=True):
            marker = _MARKER.match(line.strip())
            if marker is None:
                lines.append(line)
                continue
            if current in ("both", dialect) and "".join(lines).strip():
                out.append(("".join(lines), current == "both"))
            current, lines = marker.group(1), []
        if current in ("both", dialect) and "".join(lines).strip():
            out.append(("".join(lines), current == "both"))
        return out


class MigrationSession(Protocol):
    """The backend's side of a migration run: one connection, held for the whole run."""

    def applied(self) -> set[int]:
        """The versions recorded in ``_migrations`` (empty without the table)."""

    def refuse_foreign_tables(self) -> None:
        """Raise :class:`SchemaError` when tables of our names exist that we did not create."""

    def begin(self) -> None:
        """Begin a migration's transaction, taking the write lock."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def run(self, statement: str) -> None: ...

    def create_log(self) -> None:
        """Create ``_migrations`` if it does not exist."""

    def record(self, migration: Migration, now_iso: str) -> None:
        """Add ``migration`` to ``_migrations``."""


class ConnectionSession:
    """The transaction statements of a run on one DB-API connection; each backend's session adds its
    catalog queries and its ``_migrations`` table (:class:`MigrationSession`)."""

    begin_sql = "BEGIN"

    def __init__(self, conn: Any, path: str) -> None:
        self._conn = conn
        self._path = path

    def begin(self) -> None:
        self._conn.execute(self.begin_sql)

    def commit(self) -> None:
        self._conn.execute("COMMIT")

    def rollback(self) -> None:
        self._conn.execute("ROLLBACK")

    def run(self, statement: str) -> None:
        self._conn.execute(statement)


class Migrator(Protocol):
    """What a backend gives the runner."""

    path: str

    def migration_statements(self, migration: Migration, dims: int) -> list[str]:
        """``migration``'s statements for this backend, ready to run."""

    def migration_session(self) -> AbstractContextManager[MigrationSession]: ...


def available_migrations() -> list[Migration]:
    """The package's migrations in version order (read once per process: every open asks)."""
    return list(_read_migrations())


@functools.cache
def _read_migrations() -> tuple[Migration, ...]:
    found = []
    for entry in resources.files(__package__).joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):  # pragma: no cover - a packaging mistake
        raise SchemaError(f"two migrations share a number: {versions}")
    return tuple(found)


def latest_version() -> int:
    migrations = available_migrations()
    return migrations[-1].version if migrations else 0


def apply_migrations(backend: Migrator, *, dims: int, now_iso: str, schema: list[str] | None = None) -> list[int]:
    """Bring the schema up to date; return the versions applied. Refuses a newer schema.

    Every missing version runs, not only those above the highest applied. Each runs in its own
    transaction; the versions applied are read again inside it, since other processes (other
    servers) may be opening the same memory at the same time. ``schema``, statements that build what
    every migration builds, replaces their statements when the database turns out to be new.
    """
    migrations = available_migrations()
    newest = migrations[-1].version if migrations else 0
    with backend.migration_session() as session:
        done = session.applied()
        current = max(done, default=0)
        if current > newest:
            raise SchemaError(
                f"{backend.path} was written by a newer openkoi-memory (schema version {current}; this version "
                f"knows up to {newest}); upgrade with: pip install -U openkoi-memory"
            )
        # every statement prepared before the first change: one that cannot be stops nothing half-way
        plan = [(m, backend.migration_statements(m, dims)) for m in migrations if m.version not in done]
        # a new memory in one transaction, so another process opening it meanwhile sees none of it or
        # all of it (at version 1 it would take the file for one of the first schema's)
        if not done and plan:
            whole = plan if schema is None else [(plan[0][0], schema), *((m, []) for m, _ in plan[1:])]
            if _apply(session, whole, now_iso, new_only=True):
                return [migration.version for migration, _ in plan]
        applied = [step[0].version for step in plan if _apply(session, [step], now_iso)]
    return applied


def _apply(session: MigrationSession, steps: list[tuple[Migration, list[str]]], now_iso: str, *,
           new_only: bool = False) -> bool:
    """Apply ``steps`` in one transaction; False, writing nothing, when another process got there first
    (it applied the step, or with ``new_only`` it created the memory)."""
    session.begin()
    try:
        present = session.applied()
        if present if new_only else steps[0][0].version in present:
            session.commit()
            return False
        if not present:
            session.refuse_foreign_tables()
        session.create_log()
        for migration, statements in steps:
            for statement in statements:
                session.run(statement)
            session.record(migration, now_iso)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    return True

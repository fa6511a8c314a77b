"""What the core may ask of a database: the :class:`Backend` protocol and its :class:`Capabilities`.

Two classes implement it: :class:`~shared_core.db.sqlite.Database` (one SQLite file, the default)
and :class:`~shared_core.db.postgres.PostgresDatabase` (a schema on a PostgreSQL server). Each owns
its SQL where the dialects differ (payload measuring, space reclaiming, which tables have a column,
migration steps). Code outside ``db/`` and the index factories reads :attr:`Backend.capabilities`
or calls a backend method instead of comparing backend names.

Statements are SQLite's dialect with ``?`` placeholders on both backends; the PostgreSQL backend
translates them (see :mod:`shared_core.db.postgres.translate`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from .postgres.url import PgTarget

__all__ = ["Backend", "Capabilities", "DriverInfo", "Rows", "SizeMeasure", "SqlFlavour", "INDEX_KEYS",
           "INDEX_ENTRIES", "inserted_rowid"]

#: the SQL a backend's scope filters, JSON paths and constant conditions are written in
SqlFlavour = Literal["sqlite", "postgresql"]

#: key columns of memory_chunks' indexes (migration 2), counted by both backends' payload measures
INDEX_KEYS = (
    "namespace", "kind", "namespace", "content_hash", "namespace", "category", "namespace", "created_at",
    "id", "owner_id", "expires_at",
)
INDEX_ENTRIES = 7  # indexes per row (the two partial ones counted as if always present)


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, and how, for the code that must act differently on each.

    ``sql_flavour``: what scope filters render to (``Scope.sql``). ``shared``: other machines may
    use the same memory, so a local copy of part of it (a transcript file) would be partial.
    ``in_memory``: the memory lives and dies with this process. ``max_parameters``: bound values
    one statement may take. ``staged_erase``: erased bytes leave only with a rewrite of the file and
    a cut of its log, which other connections' reads can hold up, so an erase may finish later
    (SQLite files). ``erase_caveats``: what an erase cannot promise here (``EraseReport.notes``).
    """

    sql_flavour: SqlFlavour
    shared: bool
    in_memory: bool
    max_parameters: int
    staged_erase: bool
    erase_caveats: tuple[str, ...] = ()


@dataclass(frozen=True)
class SizeMeasure:
    """How big the live data is, and how that was measured (``dbstat``, ``estimate`` or ``pg_column_size``)."""

    method: str
    total: int
    rows: int
    parts: dict[str, int] = field(default_factory=dict)  # table/index bytes, keyword index, vectors


class Rows(Protocol):
    """What ``execute`` returns: a DB-API cursor on SQLite, fetched rows on PostgreSQL."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def inserted_rowid(rows: Rows) -> int:
    """The row id an ``INSERT`` gave its row (both backends report it for the memory's tables)."""
    rowid = rows.lastrowid
    if rowid is None:
        from ..errors import StorageError

        raise StorageError("the database reported no row id for an insert; is the table missing its key?")
    return int(rowid)


class DriverInfo(Protocol):
    """``backend.driver``: the library that talks to the database, for stats and messages."""

    @property
    def name(self) -> str: ...

    @property
    def sqlite_version(self) -> str: ...  # the server's version on PostgreSQL

    @property
    def Error(self) -> type[Exception]: ...  # noqa: N802 - the DB-API name


class Backend(Protocol):
    """A memory's database. Methods raise library errors (``shared_core.errors``), never the driver's."""

    #: the backend's name ("sqlite", "postgresql") for messages and the index factories
    dialect: str
    #: the file, ``:memory:``, or the PostgreSQL URL without its password
    path: str
    read_only: bool
    #: held by every public store method (an ``RLock``): a store is shared between threads
    lock: Any
    capabilities: Capabilities

    @property
    def driver(self) -> DriverInfo: ...

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool: ...

    def check_open(self) -> None:
        """Raise :class:`~shared_core.errors.StoreClosedError` when closed."""

    def close(self) -> None: ...

    def companion_connection(self) -> Any:
        """A plain DB-API connection for another library's tables in the same SQLite file."""

    def postgres_target(self) -> PgTarget | None:
        """The PostgreSQL server and schema the memory lives in (None for an SQLite file)."""

    # -- statements -----------------------------------------------------------------------------

    def execute(self, sql: str, params: Any = ()) -> Rows: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any: ...

    def insert_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """``INSERT ... VALUES (?, ...)`` for many rows, batched as the backend does it best."""

    def query(self, sql: str, params: Any = ()) -> list[Any]: ...

    def scalar(self, sql: str, params: Any = ()) -> Any: ...

    def translate_errors(self) -> AbstractContextManager[None]:
        """A ``with`` block that turns the driver's errors into the library's."""

    # -- transactions ---------------------------------------------------------------------------

    def transaction(self, *, wait: float | None = None) -> AbstractContextManager[None]:
        """A write transaction (nested: a savepoint), waiting at most ``wait`` s for the write turn."""

    @property
    def in_transaction(self) -> bool: ...

    @property
    def has_uncommitted_writes(self) -> bool: ...

    def scratch(self) -> AbstractContextManager[None]:
        """Writes to scratch tables that must not count as uncommitted data."""

    def after_commit(self, callback: Callable[[], None]) -> None: ...

    def on_rollback(self, callback: Callable[[], None]) -> None: ...

    def defer_foreign_keys(self) -> None: ...

    # -- schema and metadata --------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def applied_versions(self) -> set[int]: ...

    def schema_version(self) -> int: ...

    def latest_version(self) -> int: ...

    def migrate(self, *, dims: int, now_iso: str) -> list[int]:
        """Apply the missing numbered migrations; ``dims`` sizes the vector table."""

    def tables_with_column(self, column: str) -> list[str]:
        """The memory's plain tables that have ``column``, by name."""

    # -- space ----------------------------------------------------------------------------------

    def storage_bytes(self) -> int: ...

    def measure_payload(self, method: str, *, columns: Sequence[str], dims: int) -> SizeMeasure:
        """The live search index's size (``auto``, ``dbstat`` or ``estimate``; see size pruning)."""

    def reclaim_space(self) -> tuple[int, bool]:
        """Give space freed by deletes back: (pages reclaimed, whether the file switched to incremental vacuum)."""

    def secure_delete(self) -> AbstractContextManager[None]:
        """Deleted content is overwritten, where the backend can do that."""

    def refresh_statistics(self) -> None:
        """Rebuild the planner's sampled keys, which can hold erased values."""

    def settle_after_load(self) -> None:
        """After a bulk load has committed (outside any transaction): what the database needs to
        search the new rows at full speed."""

    def vacuum(self, *, wait: float | None = None) -> None:
        """Rewrite the memory's storage from its live rows."""

    def truncate_log(self, *, wait: float = 0.0) -> bool:
        """Cut the write-ahead log to zero bytes; False while another reader still needs it."""

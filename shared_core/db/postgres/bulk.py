"""Many rows into one table as one ``COPY``: the PostgreSQL side of ``insert_many``.

``COPY ... FROM STDIN (FORMAT BINARY)`` sends the rows as one stream: no statement per row
for the server to bind and run, and no text formatting of vectors in Python (a 384-d vector
goes as its 1,540 bytes). Generated columns and defaults (``search_text``, the rowid) are
computed by the server as for an ``INSERT``. Only the plain form ``INSERT INTO t (a, b)
VALUES (?, ?)`` is copied, into columns of the types below; anything else (``ON CONFLICT``,
expressions, other types) runs as ``executemany``. The COPY is one statement: inside a
transaction it fails or succeeds with it, outside one it is all or nothing by itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .space import ident

__all__ = ["CopyPlan", "column_types", "copy_plan", "copy_rows"]

_PLAIN_INSERT = re.compile(
    r"^\s*INSERT\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([A-Za-z0-9_,\s]+)\)\s*"
    r"VALUES\s*\(\s*\?(?:\s*,\s*\?)*\s*\)\s*;?\s*$",
    re.IGNORECASE,
)


def _text(value: Any) -> Any:
    return value if value is None or isinstance(value, str) else str(value)


def _integer(value: Any) -> Any:
    return value if value is None else int(value)


def _real(value: Any) -> Any:
    return value if value is None else float(value)


def _vector(value: Any) -> Any:
    return value if value is None else np.ascontiguousarray(value, dtype=np.float32).ravel()


def _raw(value: Any) -> Any:
    return value


#: the column types a COPY here writes (``pg_type.typname``), and what makes a value fit each as an
#: ``INSERT`` would have cast it (SQLite's loose typing: an int into a REAL column, a bool into an INTEGER)
_COERCE: dict[str, Callable[[Any], Any]] = {
    "text": _text, "varchar": _text, "int8": _integer, "int4": _integer, "int2": _integer,
    "float8": _real, "float4": _real, "vector": _vector, "bytea": _raw,
}


@dataclass(frozen=True)
class CopyPlan:
    """Where the rows of a plain ``INSERT ... VALUES (?, ...)`` go."""

    table: str
    columns: tuple[str, ...]


def copy_plan(sql: str) -> CopyPlan | None:
    """The table and columns of ``sql`` when it is a plain insert of placeholders (else None)."""
    match = _PLAIN_INSERT.match(sql)
    if match is None:
        return None
    columns = tuple(c.strip().lower() for c in match.group(2).split(","))
    if sql.count("?") != len(columns) or not all(columns):
        return None
    return CopyPlan(match.group(1).lower(), columns)


def column_types(conn: Any, table: str) -> dict[str, tuple[int, str]]:
    """Each column of ``table`` (on the connection's search path): (type oid, type name)."""
    rows = conn.execute(
        "SELECT a.attname, a.atttypid::bigint, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped",
        (table,),
    ).fetchall()
    return {name: (int(oid), typname) for name, oid, typname in rows}


def copy_rows(conn: Any, plan: CopyPlan, types: dict[str, tuple[int, str]], rows: Sequence[Sequence[Any]]) -> bool:
    """COPY ``rows`` into ``plan.table``; False (nothing sent) when a column's type is not one COPY handles here."""
    try:
        wanted = [types[c] for c in plan.columns]
    except KeyError:
        return False
    if any(name not in _COERCE for _, name in wanted):
        return False
    fits = [_COERCE[name] for _, name in wanted]
    columns = ", ".join(ident(c) for c in plan.columns)
    with conn.cursor() as cursor, cursor.copy(f"COPY {ident(plan.table)} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([oid for oid, _ in wanted])
        for row in rows:
            copy.write_row([fit(value) for fit, value in zip(fits, row, strict=True)])
    return True

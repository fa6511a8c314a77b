"""The filter language on SQLite: JSON1 functions over the metadata text (``json_extract``,
``json_type``, ``json_each``), every condition two-valued, bound parameters only."""

from __future__ import annotations

import functools
import json
from typing import Any

from ..db import get_driver
from ..errors import FilterError
from .filters import BUILTIN_FIELDS, Condition

__all__ = ["sqlite_condition"]


class _Field:
    """SQL snippets for one field of the chunk table aliased ``alias``."""

    def __init__(self, name: str | tuple[str, ...], alias: str) -> None:
        self.params: list[Any] = []
        self.column: str | None = None  # a plain column of the chunk table (an index can range over it)
        if isinstance(name, str) and name.startswith("@"):
            column, kind = BUILTIN_FIELDS[name]
            ref = f"{alias}.{column}"
            if kind == "json":
                self.value = ref
                self.type = f"json_type({ref})"
                self.each = f"json_each({ref})"
            else:
                self.column = ref
                self.value = ref
                self.type = (
                    f"(CASE typeof({ref}) WHEN 'null' THEN NULL WHEN 'integer' THEN 'integer' "
                    f"WHEN 'real' THEN 'real' ELSE 'text' END)"
                )
                self.each = f"json_each(json_quote({ref}))"
            self.path_params: list[Any] = []
        else:
            parts = name if isinstance(name, tuple) else name.split(".")
            if any('"' in part for part in parts) and not _escaped_labels():
                raise FilterError(
                    f"the SQLite {get_driver().sqlite_version} in use cannot address a metadata key containing a "
                    "double quote (that needs SQLite 3.45+); rename the key, or set OPENKOI_SQLITE_DRIVER=sqlean"
                )
            path = "$" + "".join('."' + part.replace("\\", "\\\\").replace('"', '\\"') + '"' for part in parts)
            self.value = f"json_extract({alias}.metadata, ?)"
            self.type = f"json_type({alias}.metadata, ?)"
            self.each = f"json_each({alias}.metadata, ?)"
            self.path_params = [path]


@functools.lru_cache(maxsize=1)
def _escaped_labels() -> bool:
    """JSON paths with backslash-escaped quotes inside labels work from SQLite 3.45 on."""
    version = tuple(int(x) for x in get_driver().sqlite_version.split(".")[:2])
    return version >= (3, 45)


def sqlite_condition(cond: Condition, alias: str) -> tuple[str, list[Any]]:
    f = _Field(cond.field, alias)
    p = f.path_params  # each use of value/type/each needs its own copy of the path parameter
    op, value = cond.op, cond.value

    def typed_compare(symbol: str, operand: Any) -> tuple[str, list[Any]]:
        if isinstance(operand, str):
            typed = f"coalesce({f.type} = 'text' AND {f.value} {symbol} ?, 0)"
            if f.column is not None:  # the bare comparison first: an index on the column (created_at) serves it
                return f"({f.column} {symbol} ? AND {typed})", [operand, operand]
            return f"({typed})", [*p, *p, operand]
        return (
            f"(coalesce({f.type} IN {_NUMERIC} AND {f.value} {symbol} ?, 0))",
            [*p, *p, operand],
        )

    def contains(item: Any) -> tuple[str, list[Any]]:
        if isinstance(item, str):
            return (
                f"(CASE {f.type} WHEN 'array' THEN EXISTS (SELECT 1 FROM {f.each} WHERE value = ?) "
                f"WHEN 'text' THEN instr({f.value}, ?) > 0 ELSE 0 END)",
                [*p, *p, item, *p, item],
            )
        return (
            f"(coalesce(EXISTS (SELECT 1 FROM {f.each} WHERE value = ?), 0))",
            [*p, _sql_value(item)],
        )

    def is_empty() -> tuple[str, list[Any]]:
        return (
            f"({f.type} IS NULL OR {f.type} = 'null' "
            f"OR ({f.type} = 'array' AND NOT EXISTS (SELECT 1 FROM {f.each})) "
            f"OR ({f.type} = 'object' AND NOT EXISTS (SELECT 1 FROM {f.each})) "
            f"OR ({f.type} = 'text' AND {f.value} = ''))",
            [*p, *p, *p, *p, *p, *p, *p, *p],
        )

    if op in ("$eq", "$ne"):
        if value is None:
            sql, params = f"({f.type} IS NULL OR {f.type} = 'null')", [*p, *p]
        elif isinstance(value, (list, dict)):
            # CASE, not AND: SQLite may evaluate json() of a plain string (malformed JSON) otherwise
            sql = f"(CASE WHEN {f.type} IN ('array', 'object') THEN json({f.value}) = json(?) ELSE 0 END)"
            params = [*p, *p, json.dumps(value, separators=(",", ":"))]
        elif isinstance(value, str):
            sql, params = f"(coalesce({f.type} = 'text' AND {f.value} = ?, 0))", [*p, *p, value]
        else:  # numbers and booleans: true == 1 and false == 0, as in Python
            sql = f"(coalesce({f.type} IN {_NUMERIC} AND {f.value} = ?, 0))"
            params = [*p, *p, _sql_value(value)]
        return (sql, params) if op == "$eq" else (f"(NOT {sql})", params)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return typed_compare({"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op], value)
    if op == "$between":
        low_sql, low_params = typed_compare(">=", value[0])
        high_sql, high_params = typed_compare("<=", value[1])
        return f"({low_sql} AND {high_sql})", [*low_params, *high_params]
    if op in ("$in", "$nin"):
        values = [_sql_value(v) for v in value]
        if not values:
            return ("0", []) if op == "$in" else ("1", [])
        marks = ", ".join("?" for _ in values)
        sql = f"(coalesce({f.type} NOT IN ('array', 'object') AND {f.value} IN ({marks}), 0))"
        params = [*p, *p, *values]
        return (sql, params) if op == "$in" else (f"(NOT {sql})", params)
    if op == "$contains":
        return contains(value)
    if op in ("$any", "$all"):
        values = list(dict.fromkeys(value))
        if not values:  # nothing to contain: "any of none" never holds, "all of none" needs a value
            return ("0", []) if op == "$any" else (f"(NOT ({f.type} IS NULL OR {f.type} = 'null'))", [*p, *p])
        parts = [contains(item) for item in values]
        joiner = " OR " if op == "$any" else " AND "
        return "(" + joiner.join(sql for sql, _ in parts) + ")", [x for _, params in parts for x in params]
    if op == "$text_match":
        return f"(coalesce({f.type} = 'text' AND instr({f.value}, ?) > 0, 0))", [*p, *p, value]
    if op == "$text_match_insensitive":
        return (
            f"(coalesce({f.type} = 'text' AND instr(casefold({f.value}), casefold(?)) > 0, 0))",
            [*p, *p, value],
        )
    if op == "$is_empty":
        sql, params = is_empty()
        return (sql, params) if value else (f"(NOT {sql})", params)
    if op == "$exists":
        sql, params = f"({f.type} IS NOT NULL)", [*p]
        return (sql, params) if value else (f"(NOT {sql})", params)
    raise FilterError(f"unknown filter operator {op!r}")  # pragma: no cover - checked in Condition


_NUMERIC = "('integer', 'real', 'true', 'false')"  # json_type()s that compare as numbers


def _sql_value(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value

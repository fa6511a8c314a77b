"""The filter language on PostgreSQL: the same answers as the SQLite compiler, over jsonb.

Metadata is stored as JSON text (so it round-trips byte for byte, key order kept) and read
here as ``metadata::jsonb #> path``. Every condition is two-valued (never SQL NULL),
strings compare byte-wise (``COLLATE "C"``, as SQLite's ``BINARY``), and numbers and
booleans compare as numbers (``true`` = 1), as in :mod:`.filters`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import FilterError
from .filters import BUILTIN_FIELDS, Condition

__all__ = ["pg_condition"]

# the static type of each built-in scalar column on PostgreSQL
_NUMBER_COLUMNS = {"importance", "confidence", "score", "pinned", "access_count"}


@dataclass
class _Field:
    """SQL snippets for one field; each snippet's parameters come with it."""

    json: tuple[str, list[Any]] | None  # the jsonb value (None for plain scalar columns)
    column: str | None  # the plain column (None for JSON fields)
    number_column: bool = False

    def kind(self) -> tuple[str, list[Any]]:
        """jsonb_typeof-style type name, NULL when the field is missing."""
        if self.json is not None:
            sql, params = self.json
            return f"jsonb_typeof({sql})", list(params)
        type_name = "number" if self.number_column else "string"
        return f"(CASE WHEN {self.column} IS NULL THEN NULL ELSE '{type_name}' END)", []

    def is_string(self) -> tuple[str, list[Any]]:
        if self.json is not None:
            sql, params = self.json
            return f"coalesce(jsonb_typeof({sql}) = 'string', FALSE)", list(params)
        return ("FALSE", []) if self.number_column else (f"({self.column} IS NOT NULL)", [])

    def is_number(self) -> tuple[str, list[Any]]:
        if self.json is not None:
            sql, params = self.json
            return f"coalesce(jsonb_typeof({sql}) IN ('number', 'boolean'), FALSE)", list(params)
        return (f"({self.column} IS NOT NULL)", []) if self.number_column else ("FALSE", [])

    def text(self) -> tuple[str, list[Any]]:
        if self.json is not None:
            sql, params = self.json
            return f"(({sql}) #>> '{{}}') COLLATE \"C\"", list(params)
        return self.column or "NULL", []

    def number(self) -> tuple[str, list[Any]]:
        if self.json is not None:
            sql, params = self.json
            return _json_number(sql), [*params, *params, *params]
        return (self.column or "NULL", []) if self.number_column else ("NULL", [])


def _json_number(sql: str) -> str:
    """A jsonb number or boolean as numeric (true = 1), NULL otherwise; ``sql`` appears three times."""
    return (
        f"(CASE jsonb_typeof({sql}) WHEN 'number' THEN (({sql}) #>> '{{}}')::numeric "
        f"WHEN 'boolean' THEN (CASE WHEN ({sql}) = 'true'::jsonb THEN 1 ELSE 0 END)::numeric END)"
    )


def _field(name: str | tuple[str, ...], alias: str) -> _Field:
    if isinstance(name, str) and name.startswith("@"):
        column, kind = BUILTIN_FIELDS[name]
        ref = f"{alias}.{column}"
        if kind == "json":
            return _Field((f"({ref})::jsonb", []), None)
        return _Field(None, ref, number_column=column in _NUMBER_COLUMNS)
    parts = list(name) if isinstance(name, tuple) else name.split(".")
    if any(_nul(part) for part in parts):  # no stored object has such a key: the field is missing
        return _Field(("CAST(NULL AS jsonb)", []), None)
    return _Field((f"({alias}.metadata::jsonb #> CAST(? AS text[]))", [parts]), None)


def _join(parts: list[tuple[str, list[Any]]], joiner: str) -> tuple[str, list[Any]]:
    return "(" + joiner.join(sql for sql, _ in parts) + ")", [x for _, params in parts for x in params]


def _and(*parts: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    return _join(list(parts), " AND ")


def _not(part: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    return f"(NOT {part[0]})", part[1]


def _num(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def _nul(value: Any) -> bool:
    """PostgreSQL text and jsonb cannot hold NUL: no stored string equals or contains one."""
    return isinstance(value, str) and "\x00" in value


def pg_condition(cond: Condition, alias: str) -> tuple[str, list[Any]]:
    """One condition as a PostgreSQL boolean expression (never NULL) and its parameters."""
    f = _field(cond.field, alias)
    op, value = cond.op, cond.value

    def compare(symbol: str, operand: Any) -> tuple[str, list[Any]]:
        if _nul(operand):
            if symbol == "=":
                return ("FALSE", [])
            text_sql, text_params = f.text()  # byte order is "C" order: compare the UTF-8 bytes
            return _and(f.is_string(), (f"coalesce(convert_to({text_sql}, 'UTF8') {symbol} ?, FALSE)",
                                        [*text_params, operand.encode()]))
        if isinstance(operand, str):
            if f.json is None and f.column is not None and not f.number_column:  # bare, so its index serves it
                return f"({f.column} IS NOT NULL AND {f.column} {symbol} ?)", [operand]
            text_sql, text_params = f.text()
            return _and(f.is_string(), (f"coalesce({text_sql} {symbol} ?, FALSE)", [*text_params, operand]))
        number_sql, number_params = f.number()
        return _and(f.is_number(), (f"coalesce({number_sql} {symbol} ?, FALSE)", [*number_params, _num(operand)]))

    def missing() -> tuple[str, list[Any]]:
        kind_sql, kind_params = f.kind()
        return f"({kind_sql} IS NULL OR {kind_sql} = 'null')", [*kind_params, *kind_params]

    def contains(item: Any) -> tuple[str, list[Any]]:
        if _nul(item):
            return ("FALSE", [])
        if isinstance(item, str):
            text_sql, text_params = f.text()
            in_text = _and(f.is_string(), (f"coalesce(strpos({text_sql}, ?) > 0, FALSE)", [*text_params, item]))
            if f.json is None:
                return in_text
            json_sql, json_params = f.json
            in_array = (
                f"coalesce(jsonb_typeof({json_sql}) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements("
                f"CASE WHEN jsonb_typeof({json_sql}) = 'array' THEN {json_sql} ELSE '[]'::jsonb END) e "
                "WHERE e = to_jsonb(CAST(? AS text))), FALSE)",
                [*json_params, *json_params, *json_params, item],
            )
            return _join([in_array, in_text], " OR ")
        if f.json is None:
            number_sql, number_params = f.number()
            return f"coalesce({number_sql} = ?, FALSE)", [*number_params, _num(item)]
        json_sql, json_params = f.json
        elements = (
            f"CASE jsonb_typeof({json_sql}) WHEN 'array' THEN {json_sql} "
            f"WHEN 'object' THEN (SELECT coalesce(jsonb_agg(m.value), '[]'::jsonb) FROM jsonb_each({json_sql}) m) "
            f"ELSE jsonb_build_array({json_sql}) END"
        )
        return (
            f"coalesce(EXISTS (SELECT 1 FROM jsonb_array_elements({elements}) e WHERE {_json_number('e')} = ?), FALSE)",
            [*json_params, *json_params, *json_params, *json_params, _num(item)],
        )

    def is_empty() -> tuple[str, list[Any]]:
        if f.json is None:
            if f.number_column:
                return f"({f.column} IS NULL)", []
            return f"({f.column} IS NULL OR {f.column} = '')", []
        sql, params = f.json
        return (
            f"(({sql}) IS NULL OR (CASE jsonb_typeof({sql}) WHEN 'null' THEN TRUE "
            f"WHEN 'array' THEN jsonb_array_length({sql}) = 0 WHEN 'object' THEN ({sql}) = '{{}}'::jsonb "
            f"WHEN 'string' THEN (({sql}) #>> '{{}}') = '' ELSE FALSE END))",
            [*params, *params, *params, *params, *params],
        )

    if op in ("$eq", "$ne"):
        if value is None:
            part = missing()
        elif isinstance(value, (list, dict)):
            if f.json is None or "\\u0000" in json.dumps(value):
                part = ("FALSE", [])
            else:
                sql, params = f.json
                part = (
                    f"coalesce(jsonb_typeof({sql}) IN ('array', 'object') AND ({sql}) = CAST(? AS jsonb), FALSE)",
                    [*params, *params, json.dumps(value, separators=(",", ":"))],
                )
        else:
            part = compare("=", value)
        return part if op == "$eq" else _not(part)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return compare({"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op], value)
    if op == "$between":
        return _and(compare(">=", value[0]), compare("<=", value[1]))
    if op in ("$in", "$nin"):
        strings = [v for v in value if isinstance(v, str) and not _nul(v)]
        numbers = [_num(v) for v in value if v is not None and not isinstance(v, str)]
        parts = []
        if strings:
            text_sql, text_params = f.text()
            marks = ", ".join("?" for _ in strings)
            parts.append(_and(f.is_string(), (f"coalesce({text_sql} IN ({marks}), FALSE)", [*text_params, *strings])))
        if numbers:
            number_sql, number_params = f.number()
            marks = ", ".join("?" for _ in numbers)
            parts.append(_and(f.is_number(), (f"coalesce({number_sql} IN ({marks}), FALSE)",
                                              [*number_params, *numbers])))
        part = _join(parts, " OR ") if parts else ("FALSE", [])
        return part if op == "$in" else _not(part)
    if op == "$contains":
        return contains(value)
    if op in ("$any", "$all"):
        values = list(dict.fromkeys(value))
        if not values:
            return ("FALSE", []) if op == "$any" else _not(missing())
        return _join([contains(v) for v in values], " OR " if op == "$any" else " AND ")
    if op in ("$text_match", "$text_match_insensitive"):
        if _nul(value):
            return ("FALSE", [])
        text_sql, text_params = f.text()
        if op == "$text_match":
            test = (f"coalesce(strpos({text_sql}, ?) > 0, FALSE)", [*text_params, value])
        else:
            test = (f"coalesce(strpos(casefold({text_sql}), casefold(CAST(? AS text))) > 0, FALSE)",
                    [*text_params, value])
        return _and(f.is_string(), test)
    if op == "$is_empty":
        part = is_empty()
        return part if value else _not(part)
    if op == "$exists":
        if f.json is None:
            part = (f"({f.column} IS NOT NULL)", [])
        else:
            sql, params = f.json
            part = (f"(({sql}) IS NOT NULL)", list(params))
        return part if value else _not(part)
    raise FilterError(f"unknown filter operator {op!r}")  # pragma: no cover - checked in Condition


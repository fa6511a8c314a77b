"""The filter language every search takes (rendered as SQL by :mod:`.filter_sql`).

Filters are written as dicts, in the Mongo-like style LangChain users know::

    {"project": "atlas"}                                  # equality
    {"priority": {"$gte": 2, "$lt": 5}}                   # several operators: all must hold
    {"$or": [{"team": "infra"}, {"@tags": {"$any": ["deploy"]}}]}
    {"$not": {"status": {"$in": ["done", "dropped"]}}}

or built from :class:`Condition`, :class:`And`, :class:`Or`, :class:`Not`. Field names
address metadata (``"a.b"`` reaches into nested objects); a leading ``@`` addresses a
built-in field (``@kind``, ``@tags``, ``@category``, ``@created_at``, ...). A
:class:`Condition` may also name its field as a tuple of keys, ``("a.b",)``: each key is
taken literally (dots, ``@`` and ``$`` included), which is how adapters address
arbitrary metadata keys.

Operators: ``$eq $ne $gt $gte $lt $lte $in $nin $contains $any $all $text_match
$text_match_insensitive $is_empty $exists $between``. Every condition evaluates to true
or false, never to SQL NULL, so ``$not`` is an exact complement; a missing field is
"not equal" to anything and "not in" any list. Values are always bound parameters.

``$contains`` asks whether an array holds the value, or a string holds it as a
substring; ``$any`` and ``$all`` are "contains any/all of" in that same sense. As in
Python, JSON ``true``/``false`` compare equal to 1/0 with numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import FilterError, TooLargeError
from ..validation import LIMITS

__all__ = [
    "Condition",
    "And",
    "Or",
    "Not",
    "Filter",
    "OPERATORS",
    "BUILTIN_FIELDS",
    "parse_filter",
]

OPERATORS = (
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$any", "$all",
    "$text_match", "$text_match_insensitive", "$is_empty", "$exists", "$between",
)

# built-in field -> (column, kind): "scalar" columns hold SQL values, "json" columns hold JSON text
BUILTIN_FIELDS: dict[str, tuple[str, str]] = {
    "@id": ("id", "scalar"),
    "@text": ("text", "scalar"),
    "@kind": ("kind", "scalar"),
    "@source": ("source", "scalar"),
    "@category": ("category", "scalar"),
    "@tags": ("tags", "json"),
    "@owner_id": ("owner_id", "scalar"),
    "@session_id": ("session_id", "scalar"),
    "@task_id": ("task_id", "scalar"),
    "@importance": ("importance", "scalar"),
    "@confidence": ("confidence", "scalar"),
    "@pinned": ("pinned", "scalar"),
    "@score": ("score", "scalar"),
    "@access_count": ("access_count", "scalar"),
    "@created_at": ("created_at", "scalar"),
    "@updated_at": ("updated_at", "scalar"),
    "@last_hit_at": ("last_hit_at", "scalar"),
    "@last_access_at": ("last_access_at", "scalar"),
    "@expires_at": ("expires_at", "scalar"),
    "@valid_from": ("valid_from", "scalar"),
    "@valid_to": ("valid_to", "scalar"),
}


@dataclass(frozen=True)
class Condition:
    """``field op value``; ``op`` is one of :data:`OPERATORS` (with or without the ``$``)."""

    field: str | tuple[str, ...]
    op: str
    value: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.op, str):
            raise FilterError(f"a filter operator must be a string such as '$eq', got {self.op!r}")
        op = self.op if self.op.startswith("$") else "$" + self.op
        if op not in OPERATORS:
            raise FilterError(
                f"unknown filter operator {self.op!r} on field {self.field!r}; use one of {', '.join(OPERATORS)}"
            )
        object.__setattr__(self, "op", op)
        if isinstance(self.field, (tuple, list)):
            if not self.field or not all(isinstance(part, str) for part in self.field):
                raise FilterError(f"a metadata key path must be a non-empty tuple of strings, got {self.field!r}")
            object.__setattr__(self, "field", tuple(self.field))
        elif not isinstance(self.field, str) or not self.field or self.field in ("@", "."):
            raise FilterError(f"a filter field must be a non-empty string, got {self.field!r}")
        elif self.field.startswith("@") and self.field not in BUILTIN_FIELDS:
            raise FilterError(
                f"unknown built-in field {self.field!r}; built-in fields are {', '.join(BUILTIN_FIELDS)}"
            )
        _check_value(self.field, op, self.value)


@dataclass(frozen=True)
class And:
    filters: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    filters: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    filter: Filter


Filter = Condition | And | Or | Not

_SCALAR = (str, int, float, bool)


def _check_value(field: str | tuple[str, ...], op: str, value: Any) -> None:
    where = f"filter on {field!r} with {op}"
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**63:
            raise FilterError(f"{where}: {item} does not fit in a 64-bit integer; compare as a string or float")
    if op in ("$in", "$nin", "$any", "$all"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise FilterError(f"{where} needs a list of values, got {value!r}")
        for item in value:
            if (item is None and op in ("$any", "$all")) or (item is not None and not isinstance(item, _SCALAR)):
                raise FilterError(f"{where}: list items must be strings, numbers or booleans, got {item!r}")
    elif op in ("$gt", "$gte", "$lt", "$lte"):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise FilterError(f"{where} needs a number or a string (e.g. an ISO date), got {value!r}")
    elif op == "$between":
        if (
            isinstance(value, (str, bytes))
            or not isinstance(value, Sequence)
            or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, float, str)) for v in value)
        ):
            raise FilterError(f"{where} needs [low, high] (numbers or strings), got {value!r}")
    elif op in ("$text_match", "$text_match_insensitive"):
        if not isinstance(value, str):
            raise FilterError(f"{where} needs a string, got {value!r}")
    elif op in ("$is_empty", "$exists"):
        if not isinstance(value, bool):
            raise FilterError(f"{where} needs true or false, got {value!r}")
    elif op == "$contains":
        if value is None or not isinstance(value, _SCALAR):
            raise FilterError(f"{where} needs a string, number or boolean, got {value!r}")
    elif op in ("$eq", "$ne"):
        if not (value is None or isinstance(value, (*_SCALAR, list, dict))):
            raise FilterError(f"{where} needs a JSON value, got {value!r}")


_MAX_LIST = 1000


class FilterTooLargeError(FilterError, TooLargeError):
    """A filter past the size limits of :func:`parse_filter`."""


def parse_filter(spec: Mapping[str, Any] | Filter | None) -> Filter | None:
    """Turn the dict form (or an already-built filter) into a filter tree; ``None``/``{}`` is no filter.

    A dict filter may nest at most 32 levels and hold at most 256 conditions (``$in`` lists at
    most 1,000 values): past that it is a :class:`~shared_core.errors.TooLargeError` (a
    ``FilterError``), never a stack overflow or a statement SQLite refuses.
    """
    if isinstance(spec, Mapping):
        _check_size(spec)
    return _parse(spec)


def _check_size(spec: Mapping[str, Any]) -> None:
    """The limits of :func:`parse_filter`, checked without recursion."""
    conditions = 0
    stack: list[tuple[Any, int]] = [(spec, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > LIMITS.filter_depth:
            raise FilterTooLargeError(f"the filter is nested more than {LIMITS.filter_depth} levels deep; flatten it")
        if isinstance(item, Mapping):
            for key, value in item.items():
                if isinstance(key, str):
                    if len(key) > LIMITS.name_chars:
                        raise FilterTooLargeError(f"filter key {key[:40]!r}... is longer than {LIMITS.name_chars} "
                                                  "characters; it cannot name a field")
                    _text(key, "filter key")
                    if key not in ("$and", "$or", "$not"):
                        conditions += 1
                stack.append((value, depth + 1))
        elif isinstance(item, (list, tuple)):
            if len(item) > _MAX_LIST:
                raise FilterTooLargeError(f"a filter list has {len(item):,} values; the limit is {_MAX_LIST:,}")
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            _text(item, "a filter value")
        elif isinstance(item, float) and not math.isfinite(item):
            raise FilterError(f"a filter value is {item!r}; numbers in a filter must be finite")
        if conditions > LIMITS.filter_conditions:
            raise FilterTooLargeError(f"the filter has more than {LIMITS.filter_conditions} conditions; "
                                 "narrow it with namespace, kind or tags, or split the search")


def _text(value: str, what: str) -> None:
    if "\x00" in value and what == "filter key":
        raise FilterError(f"{what} {value!r} holds a NUL character; remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise FilterError(f"{what} {value!r} holds a character that cannot be stored (a lone surrogate); "
                          "remove it") from None


def _parse(spec: Mapping[str, Any] | Filter | None) -> Filter | None:
    if spec is None:
        return None
    if isinstance(spec, (Condition, And, Or, Not)):
        return spec
    if not isinstance(spec, Mapping):
        raise FilterError(f"a filter must be a dict such as {{'project': 'atlas'}}, got {spec!r}")
    parts: list[Filter] = []
    for key, value in spec.items():
        if not isinstance(key, str):
            raise FilterError(f"filter keys must be strings, got {key!r}")
        if key in ("$and", "$or"):
            if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
                raise FilterError(f"{key} takes a list of filters, got {value!r}")
            children = tuple(c for c in (_parse(v) for v in value) if c is not None)
            if not children:
                raise FilterError(f"{key} needs at least one filter")
            parts.append(And(children) if key == "$and" else Or(children))
        elif key == "$not":
            child = _parse(value)
            if child is None:
                raise FilterError("$not needs a filter to negate")
            parts.append(Not(child))
        elif key.startswith("$"):
            raise FilterError(
                f"{key!r} cannot stand at the top of a filter; use $and, $or, $not, or a field name"
            )
        elif isinstance(value, Mapping) and value and all(isinstance(k, str) and k.startswith("$") for k in value):
            for op, operand in value.items():
                parts.append(Condition(key, op, operand))
        else:
            parts.append(Condition(key, "$eq", value))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))

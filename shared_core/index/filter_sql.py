"""A filter tree as one SQL condition over the chunk table, in the backend's flavour."""

from __future__ import annotations

from typing import Any

from ..db.backend import SqlFlavour
from ..errors import FilterError
from .filters import And, Condition, Filter, Not, Or
from .filters_pg import pg_condition
from .filters_sqlite import sqlite_condition

__all__ = ["compile_filter", "literal"]


def literal(value: bool, flavour: SqlFlavour = "sqlite") -> str:
    """A constant condition in ``flavour``: SQLite's 1/0, PostgreSQL's TRUE/FALSE."""
    if flavour == "postgresql":
        return "TRUE" if value else "FALSE"
    return "1" if value else "0"


def compile_filter(node: Filter | None, alias: str = "c", flavour: SqlFlavour = "sqlite") -> tuple[str, list[Any]]:
    """SQL boolean expression over the chunk table ``alias`` and its parameters (true for no filter).

    ``flavour`` is the backend's (``db.capabilities.sql_flavour``): ``"sqlite"`` (JSON1 functions)
    or ``"postgresql"`` (jsonb; see :mod:`.filters_pg`). Both give the same answers.
    """
    if node is None:
        return literal(True, flavour), []
    if isinstance(node, And):
        parts = [compile_filter(child, alias, flavour) for child in node.filters]
        return "(" + " AND ".join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
    if isinstance(node, Or):
        parts = [compile_filter(child, alias, flavour) for child in node.filters]
        return "(" + " OR ".join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
    if isinstance(node, Not):
        sql, params = compile_filter(node.filter, alias, flavour)
        return f"(NOT {sql})", params
    if isinstance(node, Condition):
        return pg_condition(node, alias) if flavour == "postgresql" else sqlite_condition(node, alias)
    raise FilterError(f"not a filter: {node!r}")

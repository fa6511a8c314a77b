"""LlamaIndex ``MetadataFilters`` in openkoi-memory's filter language.

Every ``FilterOperator`` maps onto one operator of ``shared_core.index.filters`` with the
semantics of LlamaIndex's own ``SimpleVectorStore`` (``build_metadata_filter_fn``):

========================  ======================================================
EQ, NE                    ``==`` / ``!=``; a missing key is "not equal"
GT, GTE, LT, LTE          numbers with numbers, strings with strings
IN, NIN                   the value is (not) one of a list; missing is "not in"
CONTAINS                  a list holds the value, or a string holds it as a substring
ANY, ALL                  CONTAINS for any / all of a list of values
TEXT_MATCH(_INSENSITIVE)  substring of a string value (casefolded)
IS_EMPTY                  missing, ``None``, ``""`` or ``[]`` (and ``{}``)
========================  ======================================================

``FilterCondition`` AND, OR and NOT (none of the filters holds) nest to any depth. Keys
are taken literally, dots included. Where ``SimpleVectorStore`` raises ``TypeError``
(comparing a number with a string, say) the condition is simply false here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from shared_core.errors import FilterError
from shared_core.index.filters import And, Condition, Filter, Not, Or, parse_filter

__all__ = ["to_openkoi_filter", "OPERATOR_MAP"]

OPERATOR_MAP: dict[FilterOperator, str] = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.ANY: "$any",
    FilterOperator.ALL: "$all",
    FilterOperator.TEXT_MATCH: "$text_match",
    FilterOperator.TEXT_MATCH_INSENSITIVE: "$text_match_insensitive",
    FilterOperator.CONTAINS: "$contains",
    FilterOperator.IS_EMPTY: "$is_empty",
}


def to_openkoi_filter(filters: MetadataFilters | MetadataFilter | Mapping[str, Any] | Filter | None) -> Filter | None:
    """Translate LlamaIndex filters (or pass through openkoi's own) into a core filter tree.

    ``None`` and an empty ``MetadataFilters`` mean no filter. An operator or condition this
    module does not know raises :class:`~shared_core.errors.FilterError`.
    """
    if filters is None:
        return None
    if isinstance(filters, MetadataFilters):
        return _filters(filters)
    if isinstance(filters, MetadataFilter):
        return _condition(filters)
    return parse_filter(filters)  # openkoi's own dict form or an already-built tree


def _filters(filters: MetadataFilters) -> Filter | None:
    children = [c for c in (_child(f) for f in filters.filters) if c is not None]
    if not children:
        return None
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return children[0] if len(children) == 1 else And(tuple(children))
    if condition == FilterCondition.OR:
        return children[0] if len(children) == 1 else Or(tuple(children))
    if condition == FilterCondition.NOT:  # LlamaIndex: true when none of the filters holds
        return Not(children[0] if len(children) == 1 else Or(tuple(children)))
    raise FilterError(f"unknown filter condition {condition!r}; use FilterCondition.AND, OR or NOT")


def _child(item: Any) -> Filter | None:
    if isinstance(item, MetadataFilters):
        return _filters(item)
    if isinstance(item, MetadataFilter):
        return _condition(item)
    raise FilterError(f"MetadataFilters.filters holds MetadataFilter or MetadataFilters objects, not {item!r}")


def _condition(item: MetadataFilter) -> Condition:
    operator = item.operator
    op = OPERATOR_MAP.get(operator)
    name = getattr(operator, "name", repr(operator))
    if op is None:
        supported = ", ".join(o.name for o in OPERATOR_MAP)
        raise FilterError(f"filter operator {operator!r} on key {item.key!r} is not supported; use one of {supported}")
    if op == "$is_empty":
        return Condition((item.key,), op, True)
    if item.value is None:
        raise FilterError(
            f"filter on key {item.key!r} with {name} has no value; to match a missing or empty "
            "value use FilterOperator.IS_EMPTY (inside a NOT condition for the opposite)"
        )
    try:
        return Condition((item.key,), op, item.value)
    except FilterError as exc:
        raise FilterError(f"MetadataFilter(key={item.key!r}, operator={name}): {exc}") from None

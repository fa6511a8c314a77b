"""Checking what callers give the memories domain: kinds, metadata, optional names, expiry,
and the filters that ``search``, ``list`` and ``count`` share (:func:`scope_for`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..clock import to_iso
from ..index.filters import And, Condition, Filter, parse_filter
from ..index.scope import Scope
from ..namespaces import check_namespace
from ..validation import check_json, check_name, check_seconds, check_tags, time_or_none
from .records import DEFAULT_NAMESPACE, KINDS

__all__ = ["check_kind", "metadata_json", "optional_name", "expiry", "scope_for"]

_KIND = re.compile(r"^[a-z][a-z0-9_\-]{0,63}$")
_KNOWN_KINDS = frozenset(KINDS)


def check_kind(value: Any) -> str:
    """A memory kind: a short lowercase name (``fact``, ``note``, a domain's own)."""
    if isinstance(value, str) and value in _KNOWN_KINDS:
        return value
    if not isinstance(value, str) or not _KIND.match(value):
        raise ValueError(
            f"kind must be a short lowercase name such as 'fact' (known kinds: {', '.join(KINDS)}), got {value!r}"
        )
    return value


def metadata_json(value: Any) -> str:
    """Metadata as the JSON text stored (``{}`` for None), checked."""
    if value is None:
        return "{}"
    if not isinstance(value, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(value).__name__}")
    return check_json(dict(value), "metadata")  # the caller's key order kept: metadata round-trips as given


def optional_name(value: Any, what: str) -> str | None:
    """An optional short text (a category, a source, an id), checked."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    return check_name(value, what) if value else value


def expiry(expires_at: Any, ttl: Any, now: datetime) -> datetime | None:
    """When a memory expires: ``expires_at``, or ``ttl`` (seconds or a timedelta) from ``now``; None: never."""
    if expires_at is not None and ttl is not None:
        raise ValueError("give either expires_at or ttl, not both")
    if ttl is not None:
        return check_seconds(ttl, "ttl", now)
    return time_or_none(expires_at, "expires_at")


def scope_for(
    *,
    namespace: str | Sequence[str] | None,
    namespace_prefix: str | None,
    kind: str | Sequence[str] | None,
    ids: Sequence[str] | None,
    where: Mapping[str, Any] | Filter | None,
    tags: str | Sequence[str] | None,
    category: str | Sequence[str] | None,
    source: str | Sequence[str] | None,
    since: datetime | str | None,
    until: datetime | str | None,
    live_at: str | None,
    current_only: bool,
) -> Scope:
    """Build a Scope from the keyword arguments that ``search``, ``list`` and ``count`` share."""
    namespaces: tuple[str, ...] | None
    if namespace_prefix is not None:
        if namespace not in (None, DEFAULT_NAMESPACE):
            raise ValueError("give namespace or namespace_prefix, not both")
        if not isinstance(namespace_prefix, str):
            raise TypeError("namespace_prefix must be a string ('' for every namespace)")
        namespaces = None
    elif namespace is None:
        namespaces = (DEFAULT_NAMESPACE,)
    elif isinstance(namespace, str):
        namespaces = (check_namespace(namespace),)
    else:
        namespaces = tuple(check_namespace(n) for n in namespace)
        if not namespaces:
            raise ValueError("namespace list is empty")
    kinds = None
    if kind is not None:
        kinds = (check_kind(kind),) if isinstance(kind, str) else tuple(check_kind(k) for k in kind)
    if ids is not None:
        if isinstance(ids, str):
            ids = [ids]
        ids = tuple(ids)
    conditions: list[Filter] = []
    parsed = parse_filter(where) if where is not None else None
    if parsed is not None:
        conditions.append(parsed)
    if tags is not None:
        conditions.append(Condition("@tags", "$any", check_tags(tags)))
    if category is not None:
        conditions.append(Condition("@category", "$in", [category] if isinstance(category, str) else list(category)))
    if source is not None:
        conditions.append(Condition("@source", "$in", [source] if isinstance(source, str) else list(source)))
    combined: Filter | None
    if not conditions:
        combined = None
    elif len(conditions) == 1:
        combined = conditions[0]
    else:
        combined = And(tuple(conditions))
    return Scope(
        namespaces=namespaces,
        namespace_prefix=namespace_prefix,
        kinds=kinds,
        ids=ids,
        where=combined,
        live_at=live_at,
        current_only=current_only,
        created_from=to_iso(time_or_none(since, "since")),
        created_before=to_iso(time_or_none(until, "until")),
    )

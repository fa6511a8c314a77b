"""The checks at the core's boundary: every door (Python, REST, MCP, CLI, adapters) passes through them.

Each check raises :class:`~shared_core.errors.InputError` (a ``ValueError``) naming the argument
and what it accepts, or :class:`~shared_core.errors.TooLargeError` naming the limit, before
anything is written, so a refused call changes nothing and the next call works as usual.

=================== ===================================================================
what                limit (:data:`LIMITS`)
=================== ===================================================================
text                a string with some visible character, no NUL, no lone surrogate
                    (it must be encodable as UTF-8), at most 1,000,000 characters
query               at most 10,000 characters
namespace, id       at most 512 characters, same characters as text
tags                at most 256, each at most 256 characters
metadata            JSON-serialisable, at most 32 levels deep and 1,000,000 bytes
filters             at most 32 levels deep and 256 conditions
numbers             finite (no NaN or infinity); feedback weights within +-1,000
times               years 1000 to 9999
limit               1 to 10,000 results
=================== ===================================================================
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .clock import from_iso, to_iso
from .errors import InputError, TooLargeError

__all__ = [
    "LIMITS",
    "Limits",
    "unit_or_none",
    "time_or_none",
    "check_text",
    "check_query",
    "check_name",
    "check_tags",
    "check_json",
    "check_finite",
    "check_limit",
    "check_seconds",
    "check_storable",
]

_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")  # JSON's escape of NUL, not an escaped backslash before "u0000"


@dataclass(frozen=True)
class Limits:
    """The sizes the core accepts (see the module docstring)."""

    text_chars: int = 1_000_000
    query_chars: int = 10_000
    name_chars: int = 512
    tags: int = 256
    tag_chars: int = 256
    json_depth: int = 32
    json_bytes: int = 1_000_000
    filter_depth: int = 32
    filter_conditions: int = 256
    weight: float = 1000.0
    results: int = 10_000
    years: tuple[int, int] = (1000, 9999)


LIMITS = Limits()


def check_text(value: Any, what: str = "text", *, max_chars: int | None = None) -> str:
    """A text to store: a string with something visible in it, storable as UTF-8, within the size limit."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    limit = LIMITS.text_chars if max_chars is None else max_chars
    if len(value) > limit:
        raise TooLargeError(f"{what} has {len(value):,} characters; the limit is {limit:,}: split it into parts")
    _storable(value, what)
    # a text of only whitespace and format characters (zero-width spaces and joiners, BOMs) shows nothing
    if not value.strip() or all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in value):
        raise InputError(f"{what} is empty (or only invisible characters); a memory needs some text to remember")
    return value


def check_query(value: Any, what: str = "query") -> str:
    """A search query: a string within :attr:`Limits.query_chars`, encodable as UTF-8 (may be blank)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > LIMITS.query_chars:
        raise TooLargeError(f"{what} has {len(value):,} characters; the limit is {LIMITS.query_chars:,}: "
                            "search with the key words instead of the whole text")
    _storable(value, what, nul=True)  # a query is not stored: its NULs are spaces to the sanitiser
    return value


def check_name(value: Any, what: str) -> str:
    """A short identifier (an id, a namespace, a key): a non-empty string within :attr:`Limits.name_chars`."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a non-empty string, got {value!r}")
    if len(value) > LIMITS.name_chars:
        raise TooLargeError(f"{what} has {len(value):,} characters; the limit is {LIMITS.name_chars}")
    _storable(value, what)
    return value


def check_tags(value: Any, what: str = "tags") -> list[str]:
    """Tags as a list of distinct stripped strings (a comma-separated string is split), within the limits."""
    if value is None:
        return []
    if isinstance(value, str):
        if len(value) > LIMITS.tags * (LIMITS.tag_chars + 1):
            raise TooLargeError(f"{what} is {len(value):,} characters long; the limit is {LIMITS.tags} tags "
                                f"of at most {LIMITS.tag_chars} characters")
        value = value.split(",")
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise TypeError(f"{what} must be a list of strings, got {type(value).__name__}")
    if len(value) > LIMITS.tags:
        raise TooLargeError(f"{what} has {len(value):,} entries; the limit is {LIMITS.tags}")
    out: list[str] = []
    for tag in value:
        if not isinstance(tag, str):
            raise TypeError(f"{what} must be strings, got {tag!r}")
        tag = tag.strip()
        if len(tag) > LIMITS.tag_chars:
            raise TooLargeError(f"a tag has {len(tag):,} characters; the limit is {LIMITS.tag_chars}")
        _storable(tag, "a tag")
        if tag and tag not in out:
            out.append(tag)
    return out


def check_json(value: Any, what: str, *, max_bytes: int | None = None) -> str:
    """``value`` as JSON text (the caller's key order kept), within the depth and size limits,
    without NaN, infinity, NUL or lone surrogates."""
    _depth(value, what, LIMITS.json_depth)
    try:
        dumped = json.dumps(value, ensure_ascii=False, allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be JSON-serialisable without NaN or infinity: {exc}") from None
    limit = LIMITS.json_bytes if max_bytes is None else max_bytes
    if len(dumped) > limit:
        raise TooLargeError(f"{what} is {len(dumped):,} characters as JSON; the limit is {limit:,}")
    if "\\u0000" in dumped and _NUL_ESCAPE.search(dumped):  # PostgreSQL's jsonb cannot hold one
        raise InputError(f"{what} contains a NUL character (in a key or a string); remove it")
    _storable(dumped, what)
    return dumped


def check_finite(value: Any, what: str, *, bound: float | None = None) -> float:
    """A finite number (not a bool), within ``-bound..bound`` when given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{what} must be a number, got {value!r}")
    number = float(value) if not isinstance(value, int) or abs(value) < 2**63 else math.inf
    if not math.isfinite(number):
        raise InputError(f"{what} must be a finite number, got {value!r}")
    if bound is not None and abs(number) > bound:
        raise InputError(f"{what} must be between {-bound:g} and {bound:g}, got {value!r}")
    return number


def check_limit(value: Any, what: str = "limit", *, minimum: int = 1) -> int:
    """A result count: an int from ``minimum`` to :attr:`Limits.results`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be a whole number, got {value!r}")
    if value < minimum:
        raise InputError(f"{what} must be at least {minimum}, got {value}")
    if value > LIMITS.results:
        raise TooLargeError(f"{what} is {value:,}; the limit is {LIMITS.results:,} (page with offset for more)")
    return value


def check_seconds(value: Any, what: str, now: datetime) -> datetime:
    """``now`` plus ``value`` seconds (a number or a timedelta), which must be positive and end
    within the supported years."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = check_finite(value, what)
    else:
        raise TypeError(f"{what} must be seconds or a timedelta, got {value!r}")
    if not seconds > 0:
        raise InputError(f"{what} must be a positive number of seconds, got {value!r}")
    latest = datetime(LIMITS.years[1], 12, 31, 23, 59, 59, tzinfo=now.tzinfo)
    if seconds > (latest - now).total_seconds():
        raise InputError(f"{what} of {value!r} seconds ends after the year {LIMITS.years[1]}; give a shorter one")
    return now + timedelta(seconds=seconds)


def unit_or_none(value: Any, what: str) -> float | None:
    """``None``, or a number between 0 and 1 (importance, confidence, ...) as a float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise InputError(f"{what} must be a number between 0 and 1, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InputError(f"{what} must be between 0 and 1, got {value}")
    return float(value)


def time_or_none(value: Any, what: str) -> datetime | None:
    """``None``, or an aware UTC datetime from a datetime or an ISO-8601 string, in the supported years."""
    if value is None:
        return None
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str):
        if len(value) > 64:
            raise InputError(f"{what} must be an ISO-8601 time such as 2026-01-31T12:00:00Z, got {value[:64]!r}...")
        try:
            when = from_iso(value) if value.strip() else None  # type: ignore[assignment]
            if when is None:
                raise ValueError(value)
        except (ValueError, OverflowError):
            raise InputError(f"{what} must be an ISO-8601 time such as 2026-01-31T12:00:00Z, got {value!r}") from None
    else:
        raise TypeError(f"{what} must be a datetime or an ISO-8601 string, got {type(value).__name__}")
    first, last = LIMITS.years
    if not first <= when.year <= last:
        raise InputError(f"{what} must fall in the years {first} to {last}, got {value!r}")
    try:
        return from_iso(to_iso(when))
    except (ValueError, OverflowError):  # a year at the edge that UTC pushes out of range
        raise InputError(f"{what} must fall in the years {first} to {last}, got {value!r}") from None


# -- helpers ------------------------------------------------------------------------------------


def check_storable(value: str, what: str, *, nul: bool = False) -> str:
    """``value`` if it can be stored as text: encodable as UTF-8 (no lone surrogate) and, unless
    ``nul``, without NUL characters."""
    _storable(value, what, nul=nul)
    return value


def _storable(value: str, what: str, *, nul: bool = False) -> None:
    if not nul and "\x00" in value:
        raise InputError(f"{what} contains a NUL character; remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{what} contains a character that cannot be stored ({value[exc.start]!r} at position {exc.start}, "
            "a lone surrogate); decode the text properly or remove it"
        ) from None


def _depth(value: Any, what: str, limit: int) -> None:
    """Refuse nesting deeper than ``limit`` without recursing (a 5,000-deep dict must not blow the stack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            for key in item:
                if isinstance(key, str) and len(key) > LIMITS.name_chars:
                    raise TooLargeError(f"{what} has a key of {len(key):,} characters; the limit is {LIMITS.name_chars}")
            children: Sequence[Any] | Any = item.values()
        elif isinstance(item, (list, tuple, set, frozenset)):
            children = item
        else:
            continue
        if depth > limit:
            raise TooLargeError(f"{what} is nested more than {limit} levels deep; flatten it")
        stack.extend((child, depth + 1) for child in children)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return to_iso(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        np = None  # type: ignore[assignment]
    if np is not None and isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")

"""Injectable time, so tests can move it (decay tables, tier transitions, recency).

All timestamps are timezone-aware UTC. They are stored as fixed-width ISO-8601 text
(``2026-11-21T09:02:00.000000Z``), which sorts correctly as text.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta, timezone
from typing import Protocol, overload, runtime_checkable

__all__ = ["Clock", "SystemClock", "ManualClock", "to_iso", "from_iso", "days_between"]

_UNPADDED_YEAR = re.compile(r"^\d{1,3}-\d\d-\d\d")
_ISO_PRINTF = "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ"


@runtime_checkable
class Clock(Protocol):
    """Anything with a ``now()`` that returns an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that only moves when told to; thread-safe.

    >>> clock = ManualClock("2026-01-01")
    >>> clock.advance(weeks=4).isoformat()
    '2026-01-29T00:00:00+00:00'
    """

    def __init__(self, start: datetime | str | None = None) -> None:
        if start is None:
            start = datetime.now(timezone.utc)
        self._now = _coerce(start)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, when: datetime | str) -> datetime:
        with self._lock:
            self._now = _coerce(when)
            return self._now

    def advance(self, delta: timedelta | None = None, **units: float) -> datetime:
        """Move forward (or backward, with negative units) by ``delta`` or ``days=``, ``weeks=``..."""
        step = delta if delta is not None else timedelta(**units)
        with self._lock:
            self._now = self._now + step
            return self._now

    def __repr__(self) -> str:
        return f"ManualClock({self._now.isoformat()!r})"


def _coerce(value: datetime | str) -> datetime:
    if isinstance(value, str):
        if _UNPADDED_YEAR.match(value):  # written by a version whose strftime dropped the zeros
            value = value.zfill(len(value) + 4 - value.index("-"))
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


@overload
def to_iso(when: datetime) -> str: ...


@overload
def to_iso(when: None) -> None: ...


@overload
def to_iso(when: datetime | None) -> str | None: ...


def to_iso(when: datetime | None) -> str | None:
    """Format an aware datetime the way the database stores it."""
    if when is None:
        return None
    if not (type(when) is datetime and when.tzinfo is timezone.utc):
        when = _coerce(when)
    # printf, not strftime: a third of the time (3 us, a few in every add), and strftime writes years
    # before 1000 without their leading zeros, text that no longer sorts with the rest
    return _ISO_PRINTF % (when.year, when.month, when.day, when.hour, when.minute, when.second, when.microsecond)


def from_iso(text: str | None) -> datetime | None:
    """Parse a stored timestamp (also accepts any ISO-8601 form Python understands)."""
    if text is None or text == "":
        return None
    if isinstance(text, datetime):
        return _coerce(text)
    return _coerce(text)


def days_between(earlier: datetime | None, later: datetime) -> float:
    """Days from ``earlier`` to ``later``; never negative (a clock that went back counts as 0)."""
    if earlier is None:
        return 0.0
    return max(0.0, (later - earlier).total_seconds() / 86400.0)

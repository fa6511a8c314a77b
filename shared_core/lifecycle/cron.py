"""A small evaluator for 5-field cron expressions (seed 002's ``pruneSchedule: "0 4 * * *"``).

Fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or jan-dec), day of
week (0-7 or sun-sat; 0 and 7 are Sunday). Each field is ``*``, a number, a range ``a-b``,
a step ``*/n``, ``a-b/n`` or ``a/n`` (from a to the field's maximum), or a comma list of
those. As in Vixie cron, when both day fields are restricted a day matches if either
does (a field starting with ``*``, such as ``*/2``, counts as unrestricted). Macros ``@hourly``, ``@daily``/``@midnight``, ``@weekly``, ``@monthly``,
``@yearly``/``@annually`` are accepted.

Times are read on the wall clock of a time zone (``resolve_timezone``). No PyPI package is
used: the croniter family has changed hands and maintenance status more than once, and the
~150 lines here are all the scheduler needs (the previous and next fire time).

>>> s = CronSchedule.parse("0 4 * * *")
>>> from datetime import datetime, timezone
>>> s.next_after(datetime(2026, 1, 1, 5, 0, tzinfo=timezone.utc), timezone.utc).isoformat()
'2026-01-02T04:00:00+00:00'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo

__all__ = ["CronSchedule", "resolve_timezone", "is_due"]

_MONTHS = {name: i for i, name in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
_DAYS = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
# (name, low, high, names) per field
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}), ("month", 1, 12, _MONTHS),
           ("day of week", 0, 7, _DAYS))
_SEARCH_DAYS = 366 * 28 + 7  # the longest gap any valid expression can have (Feb 29 on a given weekday)


@dataclass(frozen=True)
class CronSchedule:
    """A parsed cron expression: the allowed values of each field."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday .. 6 = Saturday
    days_restricted: bool
    weekdays_restricted: bool

    @classmethod
    def parse(cls, expression: str) -> CronSchedule:
        """Parse ``expression``; a ValueError says which field is wrong and what is allowed."""
        if not isinstance(expression, str) or not expression.strip():
            raise ValueError("a cron schedule is five fields, e.g. '0 4 * * *' (minute hour day month weekday)")
        text = _MACROS.get(expression.strip().lower(), expression)
        parts = text.split()
        if len(parts) != 5:
            raise ValueError(
                f"cron schedule {expression!r} has {len(parts)} fields; it needs five: "
                "minute hour day-of-month month day-of-week, e.g. '0 4 * * *'"
            )
        sets = [_parse_field(part, spec, expression) for part, spec in zip(parts, _FIELDS, strict=True)]
        weekdays = frozenset(d % 7 for d in sets[4])
        schedule = cls(
            expression=expression.strip(), minutes=sets[0], hours=sets[1], days=sets[2], months=sets[3],
            weekdays=weekdays, days_restricted=not parts[2].startswith("*"),
            weekdays_restricted=not parts[4].startswith("*"),
        )
        if not any(_month_can_have(schedule, m) for m in schedule.months):
            raise ValueError(f"cron schedule {expression!r} can never fire (no month has such a day)")
        return schedule

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_month or in_week
        return in_month and in_week

    def matches(self, when: datetime, tz: tzinfo = timezone.utc) -> bool:
        """Whether ``when`` (to the minute) is a fire time on the wall clock of ``tz``."""
        local = when.astimezone(tz)
        return local.minute in self.minutes and local.hour in self.hours and self.matches_day(local.date())

    def previous(self, when: datetime, tz: tzinfo = timezone.utc) -> datetime | None:
        """The latest fire time at or before ``when`` (aware, in ``tz``), or None if there is none."""
        local = when.astimezone(tz)
        day = local.date()
        limit: tuple[int, int] | None = (local.hour, local.minute)
        for _ in range(_SEARCH_DAYS):
            if self.matches_day(day):
                for hour in sorted(self.hours, reverse=True):
                    if limit is not None and hour > limit[0]:
                        continue
                    minutes = [m for m in self.minutes if limit is None or hour < limit[0] or m <= limit[1]]
                    if minutes:
                        fire = _at(day, hour, max(minutes), tz)
                        if fire <= when:
                            return fire
            day -= timedelta(days=1)
            limit = None
        return None

    def next_after(self, when: datetime, tz: tzinfo = timezone.utc) -> datetime | None:
        """The first fire time strictly after ``when`` (aware, in ``tz``)."""
        local = when.astimezone(tz)
        day = local.date()
        limit: tuple[int, int] | None = (local.hour, local.minute)
        for _ in range(_SEARCH_DAYS):
            if self.matches_day(day):
                for hour in sorted(self.hours):
                    if limit is not None and hour < limit[0]:
                        continue
                    minutes = [m for m in self.minutes if limit is None or hour > limit[0] or m > limit[1]]
                    if minutes:
                        fire = _at(day, hour, min(minutes), tz)
                        if fire > when:
                            return fire
            day += timedelta(days=1)
            limit = None
        return None  # pragma: no cover - parse() rejects expressions that never fire

    def __str__(self) -> str:
        return self.expression


def is_due(schedule: CronSchedule, last_run: datetime | None, now: datetime, tz: tzinfo = timezone.utc) -> bool:
    """A job is due when a fire time has passed since its last run (``last_run=None``: any fire time)."""
    fire = schedule.previous(now, tz)
    if fire is None:
        return False
    return last_run is None or fire > last_run


def resolve_timezone(name: str) -> tzinfo:
    """``"local"`` (this machine's zone), ``"UTC"``, or an IANA name such as ``"Europe/Berlin"``."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("schedule_timezone must be 'local', 'UTC' or an IANA zone name such as 'Europe/Berlin'")
    key = name.strip()
    if key.lower() == "local":
        return _LocalZone()
    if key.upper() in ("UTC", "Z"):
        return timezone.utc
    try:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    except ImportError:  # pragma: no cover - Python < 3.9 is not supported anyway
        raise ValueError("IANA time zones need Python's zoneinfo; use 'local' or 'UTC'") from None
    try:
        return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}; use 'local', 'UTC' or an IANA name such as 'Europe/Berlin' "
            "(on Windows: pip install tzdata)"
        ) from None


class _LocalZone(tzinfo):
    """This machine's zone, looked up per instant (so daylight saving time is right on both sides)."""

    def _offset(self, dt: datetime | None) -> timedelta:
        if dt is None:
            return timedelta(0)
        stamp = datetime(dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, fold=dt.fold)
        return stamp.astimezone().utcoffset() or timedelta(0)

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return self._offset(dt)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "local"

    def fromutc(self, dt: datetime) -> datetime:
        naive = dt.replace(tzinfo=None)
        local = naive.replace(tzinfo=timezone.utc).astimezone()  # the system's zone
        return local.replace(tzinfo=self)

    def __repr__(self) -> str:
        return "local"


def _at(day: date, hour: int, minute: int, tz: tzinfo) -> datetime:
    return datetime.combine(day, time(hour, minute), tzinfo=tz)


def _parse_field(text: str, spec: tuple[str, int, int, dict[str, int]], expression: str) -> frozenset[int]:
    name, low, high, names = spec
    values: set[int] = set()
    for item in text.split(","):
        values |= _parse_item(item, name, low, high, names, expression)
    return frozenset(values)


def _parse_item(item: str, name: str, low: int, high: int, names: dict[str, int], expression: str) -> set[int]:
    def fail(why: str) -> ValueError:
        return ValueError(f"cron schedule {expression!r}: {name} field {item!r} {why} (allowed {low}-{high})")

    def number(token: str) -> int:
        token = token.strip().lower()
        if token in names:
            return names[token]
        if not token.isdigit():
            raise fail("is not a number" + (" or a name" if names else ""))
        value = int(token)
        if not low <= value <= high:
            raise fail("is out of range")
        return value

    if not item:
        raise fail("is empty")
    base, _, step_text = item.partition("/")
    step = 1
    if step_text:
        if not step_text.isdigit() or int(step_text) < 1:
            raise fail("has a step that is not a positive number")
        step = int(step_text)
    if base == "*":
        start, end = low, high
    elif "-" in base:
        first, _, last = base.partition("-")
        start, end = number(first), number(last)
        if start > end:
            raise fail("is a range that runs backwards")
    else:
        start = number(base)
        end = high if step_text else start
    return set(range(start, end + 1, step))


def _month_can_have(schedule: CronSchedule, month: int) -> bool:
    if schedule.weekdays_restricted:
        return True  # every month has every weekday
    longest = {2: 29, 4: 30, 6: 30, 9: 30, 11: 30}.get(month, 31)
    return any(d <= longest for d in schedule.days)

"""Times in a question: "what did I say last Tuesday", "in March", "two weeks ago", "before the trip".

:func:`find_time` reads the first time phrase of an English question and turns it into a
:class:`TimeWindow` relative to a reference time (the store's clock, or the time the caller
says the question was asked): a start and an end (end exclusive, either may be open), the words
that said it, and, for "before/after <something>", the thing to find first (``anchor``), whose
time search resolves from the memories themselves.

>>> from datetime import datetime, timezone
>>> now = datetime(2024, 5, 16, 15, 0, tzinfo=timezone.utc)          # a Thursday
>>> w = find_time("what did I say last Tuesday?", now)
>>> (w.start.date().isoformat(), w.end.date().isoformat(), w.phrase)
('2024-05-14', '2024-05-15', 'last Tuesday')
>>> find_time("before the trip, what did we plan?", now).anchor
'the trip'
>>> find_time("what is the capital of France?", now) is None
True
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

__all__ = ["TimeWindow", "find_time", "without_phrase"]

_WEEKDAYS = {name: i for i, name in enumerate(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_WEEKDAYS.update({name[:3]: i for name, i in list(_WEEKDAYS.items())})
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
            "several": 3}
_UNITS = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}

_NUM = r"(?P<n>\d{1,3}|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?P<unit>day|week|fortnight|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")\.?"
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"

#: (pattern, kind), tried in order; the earliest match in the text wins, then the longest
_PATTERNS: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.IGNORECASE), kind) for p, kind in [
    (r"\b(?:on\s+)?(?P<iso>\d{4}-\d{2}-\d{2})\b", "iso"),
    (rf"\b(?:on\s+)?{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", "date"),
    (rf"\b(?:on\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", "date"),
    (rf"\b(?:on\s+)?{_MONTH}\s+{_DAY}\b(?!\s*(?:am|pm|:))", "date"),
    (rf"\b(?:on\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\b", "date"),
    (rf"\b{_NUM}\s+{_UNIT}\s+ago\b", "ago"),
    (rf"\b(?:in\s+the\s+)?(?P<which>last|past)\s+{_NUM}\s+{_UNIT}\b", "past_span"),
    (rf"\b(?P<which>last|this|next|past)\s+{_WEEKDAY}\b", "weekday"),
    (rf"\b(?:on\s+)?{_WEEKDAY}\b", "bare_weekday"),
    (r"\b(?P<which>last|this|next|past)\s+(?P<unit>week|weekend|month|year)\b", "this_unit"),
    (rf"\b(?:in\s+|during\s+|of\s+)?(?:(?P<which>last|this|next)\s+)?{_MONTH}(?:\s+(?:of\s+)?{_YEAR})?\b", "month"),
    (rf"\b(?:in|during)\s+{_YEAR}\b", "year"),
    (r"\b(?P<word>today|tonight|this morning|this afternoon|this evening|yesterday|the day before yesterday)\b",
     "day_word"),
    (r"\b(?P<word>recently|lately|the other day)\b", "recent"),
    (r"\b(?P<relation>before|after|since|prior to)\s+(?P<anchor>(?:the|my|our|his|her|their)\s+[a-z][\w'-]*(?:\s+[a-z][\w'-]*)?)",
     "anchor"),
]]
#: "before"/"after"/"since" in front of a time phrase turns its window into an open one
_RELATION = re.compile(r"\b(before|after|since|prior to|until|till)\s+$", re.IGNORECASE)


@dataclass(frozen=True)
class TimeWindow:
    """When a question is about: ``start`` <= time < ``end`` (``None``: open on that side).

    ``phrase``: the words that said it, as written. ``anchor``: for "before the trip", the thing
    whose time bounds the window (``start``/``end`` are then both None until search finds it);
    ``relation``: ``within``, ``before`` or ``after``.
    """

    start: datetime | None
    end: datetime | None
    phrase: str
    relation: str = "within"
    anchor: str | None = None

    def contains(self, when: datetime) -> bool:
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)

    def around(self, when: datetime) -> TimeWindow:
        """The window of an anchor found at ``when``: before it, or from it on."""
        if self.relation == "before":
            return TimeWindow(None, when, self.phrase, self.relation, self.anchor)
        return TimeWindow(when, None, self.phrase, self.relation, self.anchor)


def find_time(text: str, reference: datetime) -> TimeWindow | None:
    """The first time phrase of ``text`` as a window relative to ``reference`` (aware); None if none."""
    if reference.tzinfo is None:
        raise ValueError("the reference time must be timezone-aware (e.g. datetime.now(timezone.utc))")
    best: tuple[int, int, re.Match[str], str] | None = None
    for pattern, kind in _PATTERNS:
        for match in pattern.finditer(text):
            if kind in ("month", "date") and not _is_month_use(match, text):
                continue
            key = (match.start(), -(match.end() - match.start()))
            if best is None or key < (best[0], best[1]):
                best = (key[0], key[1], match, kind)
            break
    if best is None:
        return None
    match, kind = best[2], best[3]
    window = _window(match, kind, reference)
    if window is None:
        return None
    relation = _RELATION.search(text[: match.start()])
    if relation is not None and kind != "anchor":
        word = relation.group(1).lower()
        phrase = text[relation.start() : match.end()].strip()
        if word in ("before", "prior to", "until", "till"):
            end = window.start if word in ("before", "prior to") else window.end
            return TimeWindow(None, end, phrase, "before")
        return TimeWindow(window.end if word == "after" else window.start, None, phrase, "after")
    return window


def without_phrase(text: str, window: TimeWindow) -> str:
    """``text`` with the time phrase taken out (what keyword search should still look for)."""
    cleaned = text.replace(window.phrase, " ", 1) if window.anchor is None else text
    return re.sub(r"\s{2,}", " ", cleaned).strip(" ,")


# -- reading a match --------------------------------------------------------------------------------


def _is_month_use(match: re.Match[str], text: str) -> bool:
    """"may" and "march" are words too: a month name counts when it is capitalised, has a day or a
    year beside it, or follows in/during/of/last/this/next."""
    name = match.group("month")
    if name.lower() not in ("may", "march", "mar", "jan", "june", "august", "aug"):
        return True
    phrase = match.group(0).lower()
    if name[0].isupper() and (name.lower() != "may" or match.start() > 0):
        return True
    return any(phrase.startswith(w) for w in ("in ", "during ", "of ", "last ", "this ", "next ")) or \
        bool(re.search(r"\d", phrase))


def _window(match: re.Match[str], kind: str, reference: datetime) -> TimeWindow | None:
    tz = reference.tzinfo
    assert tz is not None
    today = reference.astimezone(tz).date()
    phrase = match.group(0).strip()
    groups = match.groupdict()

    def days(first: date, count: int = 1) -> TimeWindow:
        return TimeWindow(_start_of(first, tz), _start_of(first + timedelta(days=count), tz), phrase)

    if kind == "iso":
        try:
            return days(date.fromisoformat(groups["iso"]))
        except ValueError:
            return None
    if kind == "date":
        year = int(groups["year"]) if groups.get("year") else None
        month, day = _MONTHS[groups["month"].lower().rstrip(".")], int(groups["day"])
        try:
            when = date(year or today.year, month, day)
        except ValueError:
            return None
        if year is None and when > today:
            when = when.replace(year=today.year - 1)
        return days(when)
    if kind == "ago":
        count = _number(groups["n"]) * _UNITS[groups["unit"].lower()]
        center = today - timedelta(days=count)
        slack = max(1, count // 7)  # "two weeks ago" is about then, give or take a couple of days
        return days(center - timedelta(days=slack), 2 * slack + 1)
    if kind == "past_span":
        count = _number(groups["n"]) * _UNITS[groups["unit"].lower()]
        return TimeWindow(_start_of(today - timedelta(days=count), tz), None, phrase)
    if kind in ("weekday", "bare_weekday"):
        weekday = _WEEKDAYS[groups["weekday"].lower().rstrip(".")]
        which = (groups.get("which") or "").lower()
        back = (today.weekday() - weekday) % 7
        if which == "next":
            return days(today + timedelta(days=(weekday - today.weekday()) % 7 or 7))
        if which == "this" and back == 0:
            return days(today)
        if which in ("last", "past"):
            back = back or 7  # the most recent one before today
        return days(today - timedelta(days=back))
    if kind == "this_unit":
        which, unit = groups["which"].lower(), groups["unit"].lower()
        step = {"last": -1, "past": -1, "this": 0, "next": 1}[which]
        if unit in ("week", "weekend"):
            monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
            if unit == "weekend":
                return days(monday + timedelta(days=5), 2)
            return days(monday, 7)
        if unit == "month":
            first = _add_months(today.replace(day=1), step)
            return days(first, calendar.monthrange(first.year, first.month)[1])
        first = date(today.year + step, 1, 1)
        return days(first, (date(first.year + 1, 1, 1) - first).days)
    if kind == "month":
        month = _MONTHS[groups["month"].lower().rstrip(".")]
        which = (groups.get("which") or "").lower()
        if groups.get("year"):
            year = int(groups["year"])
        elif which == "next":
            year = today.year if month > today.month else today.year + 1
        elif which == "this":
            year = today.year
        else:  # "in March": the last March that has begun ("last March" too)
            year = today.year if month <= today.month else today.year - 1
            if which == "last" and month == today.month:
                year -= 1
        first = date(year, month, 1)
        return days(first, calendar.monthrange(year, month)[1])
    if kind == "year":
        first = date(int(groups["year"]), 1, 1)
        return days(first, (date(first.year + 1, 1, 1) - first).days)
    if kind == "day_word":
        word = groups["word"].lower()
        back = {"yesterday": 1, "the day before yesterday": 2}.get(word, 0)
        return days(today - timedelta(days=back))
    if kind == "recent":
        return TimeWindow(_start_of(today - timedelta(days=30), tz), None, phrase)
    if kind == "anchor":
        relation = groups["relation"].lower()
        return TimeWindow(None, None, phrase, "before" if relation in ("before", "prior to") else "after",
                          anchor=groups["anchor"])
    raise AssertionError(kind)


def _number(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS[text]


def _start_of(day: date, tz: tzinfo) -> datetime:
    return datetime.combine(day, time.min, tzinfo=tz)


def _add_months(first: date, step: int) -> date:
    month = first.month - 1 + step
    return date(first.year + month // 12, month % 12 + 1, 1)

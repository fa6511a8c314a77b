"""Rows of a table as text a search can match: ``Header: value; Header: value`` when there is a header.

Spreadsheets, CSV files and tables inside Word and PowerPoint files all go through here,
so a row reads the same whichever format it came from.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = ["format_value", "looks_like_header", "TableRenderer", "render_table"]

_NUMBER = re.compile(r"^\s*[-+]?(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?\s*%?\s*$")


def format_value(value: Any) -> str:
    """A cell as text: dates in ISO form, whole floats without ``.0``, ``None`` as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return " ".join(str(value).split())


def looks_like_header(row: Sequence[str]) -> bool:
    """A header row: at least one cell, every filled cell text that is not a number, no repeats."""
    filled = [cell for cell in row if cell]
    if not filled:
        return False
    if any(_NUMBER.match(cell) for cell in filled):
        return False
    return len({cell.casefold() for cell in filled}) == len(filled)


class TableRenderer:
    """Renders rows one at a time; the first non-empty row becomes the header if it looks like one."""

    def __init__(self) -> None:
        self.header: list[str] | None = None
        self.decided = False
        self.rows = 0

    def render(self, cells: Iterable[Any]) -> str | None:
        """The row as one line, or ``None`` for an empty row or the header itself."""
        values = [format_value(v) for v in cells]
        while values and not values[-1]:
            values.pop()
        if not any(values):
            return None
        if not self.decided:
            self.decided = True
            if looks_like_header(values):
                self.header = values
                return None
        self.rows += 1
        if self.header is None:
            return " | ".join(values)
        parts = []
        for i, value in enumerate(values):
            if not value:
                continue
            name = self.header[i] if i < len(self.header) and self.header[i] else f"Column {i + 1}"
            parts.append(f"{name}: {value}")
        return "; ".join(parts)

    def header_line(self) -> str | None:
        return " | ".join(self.header) if self.header else None


def render_table(rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """All rows of a small table (Word, PowerPoint) as lines, the header first when there is one."""
    renderer = TableRenderer()
    lines = [line for line in (renderer.render(row) for row in rows) if line is not None]
    header = renderer.header_line()
    if header and not lines:
        yield header
    yield from lines

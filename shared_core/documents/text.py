"""Plain text, Markdown (headings as metadata) and CSV/TSV (dialect sniffing, header-aware rows)."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from .errors import DocumentError
from .records import Section, TextBuilder, check_length, clean_text
from .safety import Budget, decode_text
from .tables import TableRenderer

__all__ = ["load_txt", "load_markdown", "load_csv"]

Extracted = tuple[str, list[Section], dict[str, Any]]

_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)")  # the rest of the line is trimmed in Python (linear)
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")
_SNIFF_BYTES = 8 * 1024  # csv.Sniffer is quadratic in its sample: 64 KiB of '",' took 20 s, 8 KiB 0.3 s


def _decoded(data: bytes, budget: Budget) -> tuple[str, str]:
    text, encoding = decode_text(data)
    text = clean_text(text)
    check_length(len(text), budget.limits.max_characters)
    budget.check()
    return text, encoding


def load_txt(data: bytes, budget: Budget) -> Extracted:
    """The whole text as one section; the encoding found goes into the metadata."""
    text, encoding = _decoded(data, budget)
    return text, [Section(0, len(text), {})] if text.strip() else [], {"encoding": encoding}


# -- Markdown ------------------------------------------------------------------------------------


def load_markdown(data: bytes, budget: Budget) -> Extracted:
    """The text as written; a section per heading (``{"heading": "Guide > Install"}``).

    Metadata: ``title`` (front matter ``title:``, else the first level-1 heading),
    ``headings`` (every heading in order), and other simple ``key: value`` front-matter lines.
    """
    text, encoding = _decoded(data, budget)
    metadata: dict[str, Any] = {"encoding": encoding}
    body_start = 0
    front = _front_matter(text)
    if front is not None:
        fields, body_start = front
        metadata.update({k: v for k, v in fields.items() if k not in metadata})
    headings = _headings(text, body_start)
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    position = body_start
    current: dict[str, Any] = {}
    for offset, level, title in headings:
        if offset > position and text[position:offset].strip():
            sections.append(_trimmed(text, position, offset, current))
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        current = {"heading": " > ".join(t for _, t in path)}
        position = offset
    if text[position:].strip():
        sections.append(_trimmed(text, position, len(text), current))
    if body_start and text[:body_start].strip():
        sections.insert(0, _trimmed(text, 0, body_start, {"front_matter": True}))
    if "title" not in metadata:
        first = next((title for _, level, title in headings if level == 1), None)
        if first:
            metadata["title"] = first
    if headings:
        metadata["headings"] = [title for _, _, title in headings][:200]
    return text, sections, metadata


def _trimmed(text: str, start: int, end: int, metadata: dict[str, Any]) -> Section:
    return Section(start, start + len(text[start:end].rstrip()), dict(metadata))


def _front_matter(text: str) -> tuple[dict[str, str], int] | None:
    """A leading ``---`` ... ``---`` block of ``key: value`` lines (YAML front matter, simple keys only)."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---", 4)
    if end < 0:
        return None
    after = text.find("\n", end + 4)
    body_start = len(text) if after < 0 else after + 1
    fields: dict[str, str] = {}
    for line in text[4:end].split("\n"):
        match = _FRONT_KEY.match(line)
        if match and match.group(2).strip():
            value = match.group(2).strip().strip("\"'")
            fields[match.group(1).lower()] = value
    return fields, body_start


def _headings(text: str, start: int) -> list[tuple[int, int, str]]:
    """(offset of the heading line, level, title) for ATX and setext headings outside code fences."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    offset = start
    previous: tuple[int, str] | None = None  # offset and text of the previous paragraph line
    for line in text[start:].split("\n"):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
        elif fence_match:
            fence = fence_match.group(1)
            previous = None
        else:
            atx = _atx_heading(line)
            setext = _SETEXT.match(line)
            if atx:
                level, title = atx
                if title:
                    found.append((offset, level, title))
                previous = None
            elif setext and previous is not None:
                found.append((previous[0], 1 if setext.group(1)[0] == "=" else 2, previous[1]))
                previous = None
            elif line.strip() and not line.startswith(("    ", "\t")):
                previous = (offset, line.strip()) if previous is None else None
            else:
                previous = None
        offset += len(line) + 1
    return found


def _atx_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line (``## Setup ##``), else None.

    Not one regular expression: ``(.*?)`` before an optional closing ``#`` sequence and
    trailing blanks backtracks, quadratic in a run of spaces (20,000 spaces took 4 s).
    """
    opening = _ATX_OPEN.match(line)
    if opening is None:
        return None
    title = line[opening.end():].rstrip(" \t")
    unclosed = title.rstrip("#")
    if unclosed != title and (not unclosed or unclosed[-1] in " \t"):  # a closing sequence follows a blank
        title = unclosed
    return len(opening.group(1)), title.strip()


# -- CSV -----------------------------------------------------------------------------------------


def load_csv(data: bytes, budget: Budget, *, delimiter: str | None = None) -> Extracted:
    """Rows as header-aware lines (``Name: Ada; Role: engineer``), a section per row (``{"row": n}``).

    The dialect is sniffed from the first 8 KiB (``delimiter`` forces one, e.g. tab for .tsv);
    the encoding falls back from UTF-8 to Windows-1252 to Latin-1.
    """
    limits = budget.limits
    text, encoding = decode_text(data)
    check_length(len(text), limits.max_characters)
    sample = text[:_SNIFF_BYTES]
    dialect: Any = csv.excel
    if delimiter is None:
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            pass  # one column, or too irregular to tell: the comma default
    found = delimiter or dialect.delimiter
    builder = TextBuilder(limits.max_characters)
    renderer = TableRenderer()
    width = 0
    try:
        for number, row in enumerate(csv.reader(io.StringIO(text, newline=""), dialect, delimiter=found), 1):
            budget.count_cells(max(1, len(row)))
            width = max(width, len(row))
            line = renderer.render(row)
            if line is not None:
                builder.add(line, separator="\n", row=number)
    except csv.Error as exc:
        raise DocumentError("corrupt", f"is not a readable CSV file ({exc}); check its quoting") from None
    if renderer.rows == 0 and renderer.header_line():
        builder.add(renderer.header_line() or "", row=1)
    metadata: dict[str, Any] = {
        "encoding": encoding,
        "delimiter": found,
        "rows": renderer.rows,
        "columns": width,
        "header": renderer.header is not None,
    }
    if renderer.header:
        metadata["column_names"] = renderer.header
    return builder.text(), builder.sections, metadata


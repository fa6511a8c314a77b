"""What a loader returns: the text of one file, its parts (pages, sheets, slides, headings) and metadata."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .safety import limit_error

__all__ = ["LoadedDocument", "Section", "TextBuilder"]


@dataclass(frozen=True)
class Section:
    """A part of a document's text, ``text[start:end]``, with what locates it (``{"page": 3}``)."""

    start: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoadedDocument:
    """One file as text.

    ``metadata`` holds what the format records about itself (``title``, ``author``,
    ``created``, ``page_count``, ...; only the keys the file has). ``sections`` cover the
    text in order; chunks take their page, sheet, slide, row or heading from them.
    """

    source: Path
    file_name: str
    mime_type: str
    size_bytes: int
    format: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)

    @property
    def title(self) -> str | None:
        return self.metadata.get("title")

    @property
    def author(self) -> str | None:
        return self.metadata.get("author")

    def section_texts(self) -> list[tuple[dict[str, Any], str]]:
        """Each section's metadata and text, in order."""
        return [(s.metadata, self.text[s.start : s.end]) for s in self.sections]

    def locate(self, start: int, end: int) -> dict[str, Any]:
        """Where ``text[start:end]`` lies: the metadata of the section it starts in, plus
        ``<key>_end`` for each value that differs in the section it ends in (``page_end``)."""
        if not self.sections:
            return {}
        starts = self._starts()
        first = max(0, bisect.bisect_right(starts, start) - 1)
        last = max(first, bisect.bisect_left(starts, max(end, start + 1)) - 1)
        out = dict(self.sections[first].metadata)
        for key, value in self.sections[last].metadata.items():
            if out.get(key) != value:
                out[f"{key}_end"] = value
        return out

    def _starts(self) -> list[int]:
        cached = self.__dict__.get("_section_starts")
        if cached is None or len(cached) != len(self.sections):
            cached = [s.start for s in self.sections]
            self.__dict__["_section_starts"] = cached
        return cached


class TextBuilder:
    """Joins section texts, records their offsets, and enforces the character limit as it goes."""

    def __init__(self, max_characters: int) -> None:
        self.max_characters = max_characters
        self.parts: list[str] = []
        self.sections: list[Section] = []
        self.length = 0

    def add(self, text: str, *, separator: str = "\n\n", **metadata: Any) -> None:
        """Append one section after ``separator``; blank sections are skipped (an empty page adds nothing)."""
        text = clean_text(text)
        if not text.strip():
            return
        if self.parts:
            self.parts.append(separator)
            self.length += len(separator)
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        check_length(self.length, self.max_characters)
        self.sections.append(Section(start, self.length, metadata))

    def text(self) -> str:
        return "".join(self.parts)


def check_length(length: int, limit: int) -> None:
    """Refuse text grown past ``knowledge_base.max_characters``."""
    if length > limit:
        raise limit_error("max_characters", limit, f"its text grows past {limit:,} characters")


def clean_text(text: str) -> str:
    """Normalise line ends, drop NULs and trailing spaces on lines (PDF extraction leaves many)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")

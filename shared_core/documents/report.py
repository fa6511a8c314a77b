"""What an ingest did: documents added, updated, unchanged, and the files that failed, with why."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from .repository import Document

__all__ = ["IngestFailure", "IngestReport"]


@dataclass(frozen=True)
class IngestFailure:
    """A file that was not ingested: ``reason`` is a :data:`~shared_core.documents.errors.REASONS` code."""

    path: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.reason}]"


@dataclass
class IngestReport:
    """The outcome of :meth:`KnowledgeBase.ingest`. Failed files left nothing behind."""

    added: list[Document] = field(default_factory=list)
    updated: list[Document] = field(default_factory=list)
    unchanged: list[Document] = field(default_factory=list)
    failed: list[IngestFailure] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why) for files a folder walk passed over
    chunks: int = 0  # chunks written
    pages: int = 0  # PDF pages (and iWork preview pages) read
    characters: int = 0  # characters of text extracted
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no file failed."""
        return not self.failed

    @property
    def documents(self) -> list[Document]:
        """The documents written by this ingest (added and updated)."""
        return [*self.added, *self.updated]

    def summary(self) -> str:
        parts = [f"{len(self.added)} added", f"{len(self.updated)} updated", f"{len(self.unchanged)} unchanged",
                 f"{len(self.failed)} failed"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        return f"{', '.join(parts)} ({self.chunks} chunks, {self.seconds:.1f} s)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": [d.to_dict() for d in self.added],
            "updated": [d.to_dict() for d in self.updated],
            "unchanged": [d.to_dict() for d in self.unchanged],
            "failed": [f.__dict__ for f in self.failed],
            "skipped": [list(s) for s in self.skipped],
            "chunks": self.chunks, "pages": self.pages, "characters": self.characters, "seconds": self.seconds,
        }

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f"  failed  {failure}" for failure in self.failed]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [(d.file_name, "added", f"{d.total_chunks} chunks") for d in self.added]
        rows += [(d.file_name, "updated", f"{d.total_chunks} chunks") for d in self.updated]
        rows += [(d.file_name, "unchanged", "") for d in self.unchanged]
        rows += [(f.path, f"failed: {f.reason}", f.message) for f in self.failed]
        body = "".join(f"<tr><td style='text-align:left'>{html.escape(a)}</td><td>{html.escape(b)}</td>"
                       f"<td style='text-align:left'>{html.escape(c)}</td></tr>" for a, b, c in rows)
        return f"<table><caption>{html.escape(self.summary())}</caption>{body}</table>"

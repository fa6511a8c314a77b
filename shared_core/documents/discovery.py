"""Which files an ingest reads: explicit files, folders walked (recursively by default), glob filters.

Patterns match the path relative to the folder given (``reports/*.pdf``) or the file name
(``*.md``), case-insensitively; ``*`` also crosses folders, and a leading ``**/`` may match
nothing. Hidden files and folders (``.git``, ``.DS_Store``) are passed over, as are files
of types no loader reads; iWork folder bundles (``Report.pages/``) count as files.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .loaders import IWORK_EXTENSIONS, SUPPORTED_EXTENSIONS

__all__ = ["Discovery", "discover", "matches"]


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    missing: list[str] = field(default_factory=list)


def _patterns(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"glob patterns must be non-empty strings such as '*.pdf', got {item!r}")
    return [item.strip().replace("\\", "/") for item in items]


def matches(relative: str, patterns: Iterable[str]) -> bool:
    """True when the relative path or its file name matches one of the patterns."""
    rel = relative.replace("\\", "/").lower()
    name = rel.rsplit("/", 1)[-1]
    for pattern in patterns:
        pat = pattern.lower()
        candidates = [pat, pat[3:]] if pat.startswith("**/") else [pat]
        if any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(name, p) for p in candidates):
            return True
    return False


def discover(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    recursive: bool = True,
    include: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
) -> Discovery:
    """The files to ingest, in a stable order (each folder sorted), without duplicates.

    A file named explicitly is taken whatever its type (so an unsupported one is reported),
    unless a pattern filters it out; a folder contributes only the files loaders can read.
    """
    includes, excludes = _patterns(include), _patterns(exclude)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found = Discovery()
    seen: set[Path] = set()

    def take(path: Path, relative: str, explicit: bool) -> None:
        try:
            str(path).encode("utf-8")
        except UnicodeEncodeError:  # undecodable bytes in the name cannot be stored as text
            found.skipped.append((str(path).encode("utf-8", "replace").decode(), "file name is not valid UTF-8; rename it"))
            return
        if includes and not matches(relative, includes):
            found.skipped.append((str(path), "not matched by --include"))
            return
        if excludes and matches(relative, excludes):
            found.skipped.append((str(path), "matched by --exclude"))
            return
        if not explicit and path.suffix.lower() not in SUPPORTED_EXTENSIONS:
            found.skipped.append((str(path), "unsupported type"))
            return
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            found.files.append(key)

    for raw in paths:
        root = Path(raw).expanduser()
        if not root.exists():
            found.missing.append(str(root))
        elif root.is_dir() and root.suffix.lower() not in IWORK_EXTENSIONS:
            for path, relative in _walk(root, recursive):
                take(path, relative, explicit=False)
        else:
            take(root, root.name, explicit=True)
    return found


def _walk(root: Path, recursive: bool) -> Iterable[tuple[Path, str]]:
    for folder, dirnames, filenames in os.walk(root):
        base = Path(folder)
        bundles = sorted(d for d in dirnames if Path(d).suffix.lower() in IWORK_EXTENSIONS and not d.startswith("."))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in bundles) if recursive else []
        for name in sorted([*filenames, *bundles]):
            if name.startswith("."):
                continue
            path = base / name
            yield path, path.relative_to(root).as_posix()


class DocumentWalk:
    """Every readable document under ``paths``, loaded file by file the way ``ingest`` finds them.

    Iterate it for :class:`~shared_core.documents.LoadedDocument` objects. A file that cannot be
    read (and a path that does not exist) is logged and recorded in :attr:`failed` as an
    :class:`~shared_core.documents.IngestFailure` while the walk goes on, unless
    ``raise_on_error`` (then its :class:`~shared_core.documents.DocumentError` is raised); files a
    folder walk passed over are in :attr:`skipped`. The framework readers and loaders wrap this.
    """

    def __init__(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        recursive: bool = True,
        include: str | Sequence[str] | None = None,
        exclude: str | Sequence[str] | None = None,
        limits: Any = None,
        raise_on_error: bool = False,
    ) -> None:
        self.paths = paths
        self.recursive = recursive
        self.include = include
        self.exclude = exclude
        self.limits = limits
        self.raise_on_error = raise_on_error
        self.failed: list[Any] = []
        self.skipped: list[tuple[str, str]] = []

    def __iter__(self) -> Iterator[Any]:
        from .errors import DocumentError
        from .loaders import load_document
        from .report import IngestFailure  # imported here: report.py imports this module

        found = discover(self.paths, recursive=self.recursive, include=self.include, exclude=self.exclude)
        self.skipped.extend(found.skipped)

        def fail(error: DocumentError) -> None:
            if self.raise_on_error:
                raise error
            failure = IngestFailure(str(error.path), error.reason, error.message)
            logging.getLogger("openkoi.documents").warning("skipped %s", failure)
            self.failed.append(failure)

        for missing in found.missing:
            fail(DocumentError("unreadable", "does not exist", path=missing))
        for path in found.files:
            try:
                loaded = load_document(path, limits=self.limits)
            except DocumentError as exc:
                fail(exc)
                continue
            yield loaded

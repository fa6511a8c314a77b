"""Which loader reads which file, and the checks every file passes first.

>>> from shared_core.documents import load_document
>>> doc = load_document("handbook.pdf")            # doctest: +SKIP
>>> doc.metadata["page_count"], doc.sections[0].metadata   # doctest: +SKIP
(12, {'page': 1})
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import DocumentError
from .iwork import load_iwork
from .office import load_docx, load_pptx, load_xlsx
from .pdf import load_pdf
from .records import LoadedDocument, Section
from .safety import Budget, Limits, check_zip, describe_kind, limit_error, sniff
from .text import load_csv, load_markdown, load_txt

__all__ = ["Format", "FORMATS", "SUPPORTED_EXTENSIONS", "format_for", "load_document", "read_source"]

Extracted = tuple[str, list[Section], dict[str, Any]]


@dataclass(frozen=True)
class Format:
    """A file format: its extensions, MIME type, what its bytes look like, and its loader."""

    name: str
    extensions: tuple[str, ...]
    mime_type: str
    container: str  # what sniff() must find: pdf, zip or text
    load: Callable[[bytes, Budget], Extracted]
    zip_marker: str | None = None  # an OOXML part only this format has


def _tsv(data: bytes, budget: Budget) -> Extracted:
    return load_csv(data, budget, delimiter="\t")


def _iwork(extension: str) -> Callable[[bytes, Budget], Extracted]:
    return lambda data, budget: load_iwork(data, budget, extension)


FORMATS: tuple[Format, ...] = (
    Format("pdf", (".pdf",), "application/pdf", "pdf", load_pdf),
    Format("docx", (".docx",), "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "zip",
           load_docx, "word/document.xml"),
    Format("xlsx", (".xlsx", ".xlsm"), "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "zip",
           load_xlsx, "xl/workbook.xml"),
    Format("pptx", (".pptx",), "application/vnd.openxmlformats-officedocument.presentationml.presentation", "zip",
           load_pptx, "ppt/presentation.xml"),
    Format("csv", (".csv",), "text/csv", "text", load_csv),
    Format("tsv", (".tsv",), "text/tab-separated-values", "text", _tsv),
    Format("txt", (".txt", ".text"), "text/plain", "text", load_txt),
    Format("markdown", (".md", ".markdown"), "text/markdown", "text", load_markdown),
    Format("pages", (".pages",), "application/vnd.apple.pages", "zip", _iwork("pages")),
    Format("numbers", (".numbers",), "application/vnd.apple.numbers", "zip", _iwork("numbers")),
    Format("keynote", (".key",), "application/vnd.apple.keynote", "zip", _iwork("key")),
)
_BY_EXTENSION = {ext: fmt for fmt in FORMATS for ext in fmt.extensions}
_IWORK = ("pages", "numbers", "keynote")
IWORK_EXTENSIONS = frozenset((".pages", ".numbers", ".key"))
SUPPORTED_EXTENSIONS = frozenset(_BY_EXTENSION)
_OTHERS = {
    ".doc": "an old binary Word file; open it and save it as .docx (or PDF)",
    ".xls": "an old binary Excel file; open it and save it as .xlsx (or CSV)",
    ".ppt": "an old binary PowerPoint file; open it and save it as .pptx (or PDF)",
    ".odt": "an OpenDocument text; save it as .docx or PDF",
    ".ods": "an OpenDocument spreadsheet; save it as .xlsx or CSV",
    ".odp": "an OpenDocument presentation; save it as .pptx or PDF",
    ".rtf": "rich text; save it as .docx, PDF or plain text",
}
_EMPTY_HINTS = {
    "pdf": "it is probably scanned images; run OCR on it (for example with ocrmypdf) and ingest the result",
    "xlsx": "no cell holds a value (formula cells count only once the file was saved by a spreadsheet app)",
    "csv": "no row holds a value",
    "tsv": "no row holds a value",
}
_EMPTY_HINTS.update(dict.fromkeys(("pages", "numbers", "keynote"), "its preview PDF has no text"))


def format_for(path: str | os.PathLike[str]) -> Format | None:
    """The format an extension names (case-insensitive), or ``None``."""
    return _BY_EXTENSION.get(Path(path).suffix.lower())


def load_document(
    path: str | os.PathLike[str], *, limits: Limits | None = None, data: bytes | None = None,
    budget: Budget | None = None,
) -> LoadedDocument:
    """Read one file into text, sections and metadata; raise :class:`DocumentError` with a reason.

    Before a parser runs: the extension must be supported, the file non-empty and within
    ``limits``, its first bytes must match its extension, and zip-based files must pass the
    zip-bomb checks. Anything a parser then raises becomes a ``corrupt`` DocumentError.
    While it runs, pages, paragraphs, cells and time are counted; past a limit it stops with a
    :class:`~shared_core.documents.errors.LimitExceeded` (see :class:`Limits`).
    ``data``: the file's bytes, when the caller has already read them (see :func:`read_source`).
    ``budget``: the running counts and deadline to use (it carries its own limits; made from
    ``limits`` when not given).
    """
    budget = budget if budget is not None else Budget(limits)
    source = Path(path)
    try:
        return _load(source, budget, data)
    except DocumentError as exc:
        exc.path = str(source)
        raise


def read_source(path: str | os.PathLike[str], limits: Limits | None = None) -> bytes:
    """A file's bytes, after the checks that need no parsing: supported, readable, not empty, not too big.

    An iWork folder bundle reads as its files' paths and bytes (enough to tell when it changed).
    """
    limits = limits or Limits()
    source = Path(path)
    try:
        _format_of(source)
        return _read(source, limits)
    except DocumentError as exc:
        exc.path = str(source)
        raise


def _format_of(source: Path) -> Format:
    fmt = format_for(source)
    if fmt is not None:
        return fmt
    extension = source.suffix.lower()
    if extension in _OTHERS:
        raise DocumentError("unsupported", f"is {_OTHERS[extension]}")
    supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
    raise DocumentError("unsupported", f"has an unsupported type ({extension or 'no extension'}); supported: {supported}")


def _read(source: Path, limits: Limits) -> bytes:
    try:
        if source.is_dir():
            if _format_of(source).name not in _IWORK:
                raise DocumentError("unsupported", "is a folder; give its files, or ingest the folder itself")
            files = sorted(p for p in source.rglob("*") if p.is_file())
            total = sum(p.stat().st_size for p in files)
            if total > limits.max_file_bytes:
                raise limit_error("max_file_bytes", limits.max_file_bytes, f"is {total:,} bytes")
            return b"".join(p.relative_to(source).as_posix().encode() + b"\0" + p.read_bytes() for p in files)
        size = source.stat().st_size
        if size == 0:
            raise DocumentError("empty", "is empty (0 bytes); there is nothing to ingest")
        if size > limits.max_file_bytes:
            raise limit_error("max_file_bytes", limits.max_file_bytes, f"is {size:,} bytes")
        return source.read_bytes()
    except FileNotFoundError:
        raise DocumentError("unreadable", "does not exist") from None
    except PermissionError:
        raise DocumentError("unreadable", "cannot be read by this user; check its permissions") from None
    except OSError as exc:
        raise DocumentError("unreadable", f"cannot be read ({exc.strerror or exc})") from None


def _load(source: Path, budget: Budget, data: bytes | None) -> LoadedDocument:
    fmt = _format_of(source)
    extension = source.suffix.lower()
    limits = budget.limits
    if source.is_dir():
        data = data if data is not None else _read(source, limits)
        text, sections, metadata = _guarded(lambda: load_iwork(source, budget, extension.lstrip(".")), fmt)
        size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    else:
        data = data if data is not None else _read(source, limits)
        if not data:
            raise DocumentError("empty", "is empty (0 bytes); there is nothing to ingest")
        size = len(data)
        _check_content(data, fmt, limits)
        text, sections, metadata = _guarded(lambda: fmt.load(data, budget), fmt)
    if not text.strip():
        hint = _EMPTY_HINTS.get(fmt.name, "it holds no text")
        raise DocumentError("empty", f"has no extractable text: {hint}")
    return LoadedDocument(
        source=source.absolute(), file_name=source.name, mime_type=fmt.mime_type, size_bytes=size,
        format=fmt.name, text=text, metadata=metadata, sections=sections,
    )


def _guarded(run: Callable[[], Extracted], fmt: Format) -> Extracted:
    """Parser errors of any kind become ``corrupt``; a missing optional package, ``missing-dependency``."""
    try:
        return run()
    except (DocumentError, MemoryError):
        raise
    except ImportError as exc:
        raise DocumentError("missing-dependency", f"reading {fmt.name} needs a package that is missing ({exc})") from None
    except Exception as exc:  # parsers of untrusted files raise anything (zlib, lxml, struct, KeyError, ...)
        raise DocumentError(
            "corrupt", f"is not a readable {fmt.name.upper()} file ({type(exc).__name__}: {exc}); re-save or repair it"
        ) from None


def _check_content(data: bytes, fmt: Format, limits: Limits) -> None:
    """The bytes must be what the extension says; an OLE file under .docx is usually password-protected."""
    kind = sniff(data[:8192])
    extension = fmt.extensions[0]
    if kind == "ole" and fmt.container == "zip" and fmt.zip_marker:
        if "EncryptedPackage".encode("utf-16-le") in data[: 4 * 2**20]:
            raise DocumentError(
                "encrypted",
                "is a password-protected Office file; open it, remove the password, save it, and ingest that copy",
            )
        raise DocumentError(
            "wrong-extension", f"is an old binary Office file, not {extension}; open it and save it as {extension}"
        )
    if kind != fmt.container:
        raise DocumentError(
            "wrong-extension",
            f"has the extension {extension} but holds {describe_kind(kind)}; rename it to match its content "
            "or export it again",
        )
    if fmt.zip_marker:
        with check_zip(io.BytesIO(data), limits, f"{extension} file") as archive:
            names = set(archive.namelist())
        if fmt.zip_marker not in names:
            actual = next((f for f in FORMATS if f.zip_marker and f.zip_marker in names), None)
            holds = f"a {actual.extensions[0]} file" if actual else "a zip archive that is not an Office document"
            raise DocumentError(
                "wrong-extension", f"has the extension {extension} but is {holds}; rename it to match its content"
            )

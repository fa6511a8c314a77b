"""PDF: text per page with pypdf, page numbers on the sections, document info as metadata.

Bounded before and while reading: the objects the file declares (pypdf reads its whole
cross-reference table), its page count, each page's content size (pypdf parses a page's
content whole, in Python, at about a megabyte a second), and the time, checked between pages
and between the operators of a page's content.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from .errors import DocumentError
from .records import Section, TextBuilder
from .safety import Budget, limit_error

__all__ = ["load_pdf"]

_EOF_WINDOW = 8192  # %%EOF must appear this close to the end (a few writers add trailing bytes)
_SIZE = re.compile(rb"/Size\s*(\d{1,15})")  # a trailer's (or cross-reference stream's) object count
_MIB = 2**20


def load_pdf(data: bytes, budget: Budget) -> tuple[str, list[Section], dict[str, Any]]:
    """Text, one section per non-empty page (``{"page": n}``, 1-based), and the document info."""
    try:
        import pypdf  # noqa: F401
    except ImportError:
        raise DocumentError(
            "missing-dependency", "reading PDF needs pypdf: pip install pypdf"
        ) from None
    if b"%%EOF" not in data[-_EOF_WINDOW:]:
        raise DocumentError(
            "corrupt", "is truncated (the PDF has no %%EOF marker at its end); download or export it again"
        )
    limits = budget.limits
    declared = max((int(m.group(1)) for m in _SIZE.finditer(data)), default=0)
    if declared > limits.max_pdf_objects:
        raise _too_many_objects(declared, limits.max_pdf_objects)
    with _quiet_pypdf():
        reader = _open(data)
        objects = sum(len(section) for section in reader.xref.values()) + len(reader.xref_objStm)
        if objects > limits.max_pdf_objects:  # the trailer's /Size may lie; what pypdf read does not
            raise _too_many_objects(objects, limits.max_pdf_objects)
        budget.check()
        count = len(reader.pages)
        if count > limits.max_pages:
            raise limit_error("max_pages", limits.max_pages, f"has {count:,} pages")
        builder = TextBuilder(limits.max_characters)

        def on_operator(*_: Any) -> None:
            budget.check()

        for number in range(1, count + 1):
            budget.count_pages()
            try:
                page = reader.pages[number - 1]
                size = _content_bytes(page)
                if size > limits.max_pdf_page_bytes:
                    raise limit_error("max_pdf_page_bytes", limits.max_pdf_page_bytes,
                                      f"page {number} holds {size / _MIB:,.1f} MiB of drawing instructions",
                                      shown=f"{limits.max_pdf_page_bytes / _MIB:,.0f} MiB",
                                      advice="leave that page out (print the others to PDF)")
                text = page.extract_text(visitor_operand_before=on_operator) or ""
            except DocumentError:
                raise
            except Exception as exc:  # pypdf raises many kinds of errors on broken content streams
                raise DocumentError(
                    "corrupt", f"page {number} cannot be read ({type(exc).__name__}: {exc}); re-export or repair it"
                ) from None
            builder.add(text, page=number)
        metadata = _info(reader)
    metadata["page_count"] = count
    return builder.text(), builder.sections, metadata


def _too_many_objects(count: int, limit: int) -> DocumentError:
    return limit_error("max_pdf_objects", limit, f"declares {count:,} objects")


def _content_bytes(page: Any) -> int:
    """The size of a page's content once decompressed (pypdf keeps the result for the extraction)."""
    from pypdf.generic import ArrayObject

    contents = page.get("/Contents")
    if contents is None:
        return 0
    resolved = contents.get_object()
    total = 0
    for item in resolved if isinstance(resolved, ArrayObject) else [resolved]:
        stream = item.get_object() if item is not None else None
        if stream is not None and hasattr(stream, "get_data"):
            total += len(stream.get_data())
    return total


def _open(data: bytes) -> Any:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # owner-password-only files open with an empty user password
            except DependencyError:
                raise DocumentError(
                    "encrypted",
                    "is encrypted with AES, and reading it needs the cryptography package "
                    "(pip install cryptography); or save an unprotected copy and ingest that",
                ) from None
            if not opened:
                raise DocumentError(
                    "encrypted", "is password-protected; open it, save or print an unprotected copy, and ingest that"
                )
        len(reader.pages)  # reads the page tree: a broken one fails here, with the other parse errors
    except DocumentError:
        raise
    except FileNotDecryptedError:
        raise DocumentError("encrypted", "is password-protected; save an unprotected copy and ingest that") from None
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise DocumentError("corrupt", f"is not a readable PDF ({exc}); re-export or repair it") from None
    return reader


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs a warning for every syntax slip it recovers from; they would flood the CLI."""
    logger = logging.getLogger("pypdf")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _info(reader: Any) -> dict[str, Any]:
    """Title, author, subject, keywords, creator, producer, created, modified: whichever the file has."""
    out: dict[str, Any] = {}
    try:
        info = reader.metadata
    except Exception:  # a broken info dictionary should not lose the text
        return out
    if not info:
        return out
    for key, name in (("/Title", "title"), ("/Author", "author"), ("/Subject", "subject"),
                      ("/Keywords", "keywords"), ("/Creator", "creator"), ("/Producer", "producer")):
        try:
            value = info.get(key)
        except Exception:
            continue
        if value is not None and str(value).strip():
            out[name] = str(value).strip()
    for attr, name in (("creation_date", "created"), ("modification_date", "modified")):
        try:
            when = getattr(info, attr)
        except Exception:  # malformed dates are common
            continue
        if isinstance(when, datetime):
            out[name] = when.isoformat()
    return out

"""PDF: text per page with pypdf, page numbers on the sections, document info as metadata."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from .errors import DocumentError
from .records import Section, TextBuilder
from .safety import Limits

__all__ = ["load_pdf"]

_EOF_WINDOW = 8192  # %%EOF must appear this close to the end (a few writers add trailing bytes)


def load_pdf(data: bytes, limits: Limits) -> tuple[str, list[Section], dict[str, Any]]:
    """Text, one section per non-empty page (``{"page": n}``, 1-based), and the document info."""
    try:
        import pypdf  # noqa: F401
    except ImportError:
        raise DocumentError(
            "missing-dependency", "reading PDF needs pypdf: pip install 'openkoi-memory[documents]'"
        ) from None
    if b"%%EOF" not in data[-_EOF_WINDOW:]:
        raise DocumentError(
            "corrupt", "is truncated (the PDF has no %%EOF marker at its end); download or export it again"
        )
    with _quiet_pypdf():
        reader = _open(data)
        count = len(reader.pages)
        if count > limits.max_pages:
            raise DocumentError(
                "too-large",
                f"has {count:,} pages (limit {limits.max_pages:,}); split it, or raise knowledge_base.max_pages",
            )
        builder = TextBuilder(limits.max_characters)
        for number in range(1, count + 1):
            try:
                text = reader.pages[number - 1].extract_text() or ""
            except Exception as exc:  # pypdf raises many kinds of errors on broken content streams
                raise DocumentError(
                    "corrupt", f"page {number} cannot be read ({type(exc).__name__}: {exc}); re-export or repair it"
                ) from None
            builder.add(text, page=number)
        metadata = _info(reader)
    metadata["page_count"] = count
    return builder.text(), builder.sections, metadata


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

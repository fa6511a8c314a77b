"""Apple Pages, Numbers and Keynote: the preview PDF that iWork can embed, else a clear refusal.

An iWork document is a zip file (or, from older versions, a folder bundle). Its own format
(protobuf ``.iwa`` streams) has no public specification; but when it was saved with a
preview, ``QuickLook/Preview.pdf`` holds the document rendered as PDF, and that is read.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from .errors import DocumentError
from .pdf import load_pdf
from .records import Section
from .safety import Budget, Limits, check_zip, limit_error

__all__ = ["load_iwork", "PREVIEW_NAMES"]

PREVIEW_NAMES = ("quicklook/preview.pdf", "preview.pdf")
_APPS = {"pages": ("Pages", "PDF or Word"), "numbers": ("Numbers", "PDF, Excel or CSV"),
         "key": ("Keynote", "PDF or PowerPoint")}


def load_iwork(source: Path | bytes, budget: Budget, extension: str) -> tuple[str, list[Section], dict[str, Any]]:
    """The embedded preview PDF's pages (``metadata["from_preview"] = True``), read with the PDF limits."""
    app, exports = _APPS[extension]
    limits = budget.limits
    preview = _bundle_preview(source, limits) if isinstance(source, Path) else _zip_preview(source, limits)
    if preview is None:
        raise DocumentError(
            "unsupported",
            f"is an Apple {app} file without an embedded preview PDF, and the {app} format itself cannot be "
            f"read; open it in {app}, choose File > Export To > {exports}, and ingest the exported file",
        )
    budget.check()
    text, sections, metadata = load_pdf(preview, budget)
    metadata["from_preview"] = True
    return text, sections, metadata


def _zip_preview(data: bytes, limits: Limits) -> bytes | None:
    with check_zip(io.BytesIO(data), limits, "iWork file") as archive:
        for info in archive.infolist():
            if info.filename.lower() in PREVIEW_NAMES:
                if info.file_size > limits.max_file_bytes:
                    raise _preview_too_large(info.file_size, limits)
                return archive.read(info)
    return None


def _bundle_preview(folder: Path, limits: Limits) -> bytes | None:
    for name in ("QuickLook/Preview.pdf", "preview.pdf"):
        candidate = folder / name
        if candidate.is_file():
            size = candidate.stat().st_size
            if size > limits.max_file_bytes:
                raise _preview_too_large(size, limits)
            return candidate.read_bytes()
    return None


def _preview_too_large(size: int, limits: Limits) -> DocumentError:
    return limit_error("max_file_bytes", limits.max_file_bytes, f"has a {size:,}-byte preview PDF",
                       advice="export the document to PDF in parts")

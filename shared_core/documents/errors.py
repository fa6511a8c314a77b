"""Why a file could not be turned into knowledge-base text."""

from __future__ import annotations

from ..errors import OpenKoiError

__all__ = ["DocumentError", "REASONS"]

REASONS = (
    "empty",  # a zero-byte file, or a document without any extractable text
    "too-large",  # over a size, page or character limit
    "zip-bomb",  # an OOXML/iWork zip whose directory declares too much uncompressed data
    "encrypted",  # password-protected
    "corrupt",  # truncated or malformed
    "wrong-extension",  # the content is of another type than the extension says
    "unsupported",  # a format (or variant) no loader reads
    "missing-dependency",  # the loader's optional package is not installed
    "unreadable",  # the operating system refused to read it
)


class DocumentError(OpenKoiError, ValueError):
    """A file could not be loaded; ``reason`` is one of :data:`REASONS`, the message says what to do."""

    def __init__(self, reason: str, message: str, *, path: str | None = None) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown document error reason {reason!r}")
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

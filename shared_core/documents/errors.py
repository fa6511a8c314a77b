"""Why a file could not be turned into knowledge-base text."""

from __future__ import annotations

from ..errors import OpenKoiError

__all__ = ["DocumentError", "LimitExceeded", "REASONS"]

REASONS = (
    "empty",  # a zero-byte file, or a document without any extractable text
    "too-large",  # over a size, page, paragraph, cell, character or time limit
    "zip-bomb",  # an OOXML/iWork zip that declares or expands to too much data
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


class LimitExceeded(DocumentError):
    """A file went past one of the ``knowledge_base`` limits, and reading it stopped there.

    ``setting`` is the limit's config name (``"knowledge_base.max_paragraphs"``) and ``limit``
    its value; the message says what was found, the limit, and the setting to raise.
    """

    def __init__(self, reason: str, message: str, *, setting: str, limit: float, path: str | None = None) -> None:
        super().__init__(reason, message, path=path)
        self.setting = setting
        self.limit = limit

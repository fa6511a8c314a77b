"""``OpenKoiReader``: the core's document loaders as a LlamaIndex reader.

The files are found and read exactly as ``store.documents.ingest`` finds and reads them
(``shared_core.documents``: the same folder walk and globs, the same loaders for PDF, Word,
Excel, PowerPoint, CSV, text, Markdown and iWork previews, the same safety checks), but
instead of chunking them into the knowledge base the reader returns LlamaIndex
``Document``s, for a ``VectorStoreIndex`` or an ``IngestionPipeline``.

Each ``Document`` has the file's text and the metadata the knowledge base records for it
(``format`` and what the loader found: title, author, page count, ...), plus LlamaIndex's
usual ``file_path``, ``file_name``, ``file_type`` (MIME) and ``file_size``. Its id is the
file's absolute path (``<path>_part_<n>`` with ``split_sections=True``), so an ingestion
pipeline's document store recognises a file it has seen before.

A file that cannot be read is reported like ``ingest`` reports it: an
:class:`~shared_core.documents.IngestFailure` (path, reason, message) in ``reader.failed``,
logged, and the other files are read; with ``raise_on_error=True`` the reader raises the
:class:`~shared_core.documents.DocumentError` instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document

from shared_core.documents import (
    IngestFailure,
    Limits,
    LoadedDocument,
)
from shared_core.documents.discovery import DocumentWalk

__all__ = ["OpenKoiReader"]


# shown to the LLM and the embedder; the rest of the metadata (paths, sizes, counts) is bookkeeping
_VISIBLE = frozenset({"title", "author", "page", "page_end", "slide", "slide_end", "sheet", "heading", "heading_end"})

Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


class OpenKoiReader(BaseReader):
    """Read files and folders with openkoi's loaders into LlamaIndex ``Document``s.

    ``recursive``, ``include`` and ``exclude`` choose files in folders as
    ``store.documents.ingest`` does (globs on the relative path or the file name).
    ``split_sections``: one ``Document`` per page, slide, sheet row or Markdown section
    (with its location in the metadata) instead of one per file. ``limits``: a
    :class:`~shared_core.documents.Limits`, or a store's ``config.knowledge_base``.
    ``raise_on_error``: raise on the first file that cannot be read instead of reporting it
    in :attr:`failed`.
    """

    def __init__(
        self,
        *,
        recursive: bool = True,
        include: str | Sequence[str] | None = None,
        exclude: str | Sequence[str] | None = None,
        split_sections: bool = False,
        raise_on_error: bool = False,
        limits: Limits | Any | None = None,
    ) -> None:
        self.recursive = recursive
        self.include = include
        self.exclude = exclude
        self.split_sections = split_sections
        self.raise_on_error = raise_on_error
        self.limits = limits if limits is None or isinstance(limits, Limits) else Limits.from_config(limits)
        self.failed: list[IngestFailure] = []
        self.skipped: list[tuple[str, str]] = []

    def lazy_load_data(self, paths: Paths, extra_info: Mapping[str, Any] | None = None) -> Iterator[Document]:
        """Yield the documents of ``paths`` (files and folders), file by file.

        ``extra_info`` is added to every document's metadata. :attr:`failed` and
        :attr:`skipped` describe the latest run (files a folder walk passed over are skipped,
        as in ``ingest``).
        """
        walk = DocumentWalk(paths, recursive=self.recursive, include=self.include, exclude=self.exclude,
                            limits=self.limits, raise_on_error=self.raise_on_error)
        self.failed, self.skipped = walk.failed, walk.skipped
        for loaded in walk:
            yield from self._documents(loaded, dict(extra_info or {}))

    def _documents(self, loaded: LoadedDocument, extra: dict[str, Any]) -> Iterator[Document]:
        base = {
            "file_path": str(loaded.source), "file_name": loaded.file_name, "file_type": loaded.mime_type,
            "file_size": loaded.size_bytes, "format": loaded.format, **loaded.metadata,
        }
        if not self.split_sections or not loaded.sections:
            yield _document(str(loaded.source), loaded.text, base, extra)
            return
        for number, (where, text) in enumerate(loaded.section_texts()):
            yield _document(f"{loaded.source}_part_{number}", text, {**base, **where}, extra)


def _document(doc_id: str, text: str, metadata: dict[str, Any], extra: dict[str, Any]) -> Document:
    hidden = [key for key in metadata if key not in _VISIBLE and key not in extra]
    return Document(id_=doc_id, text=text, metadata={**metadata, **extra},
                    excluded_embed_metadata_keys=hidden, excluded_llm_metadata_keys=list(hidden))

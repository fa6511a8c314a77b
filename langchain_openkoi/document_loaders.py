"""``OpenKoiDocumentLoader``: the core's document loaders as a LangChain ``BaseLoader``.

Files are found and read exactly as ``store.documents.ingest`` finds and reads them
(``shared_core.documents``: the same folder walk and globs, the same loaders for PDF, Word,
Excel, PowerPoint, CSV, text, Markdown and iWork previews, the same safety checks), and come
out as LangChain ``Document``s, file by file (``lazy_load``), for any vector store or splitter.

``mode``:

* ``"file"`` (default): one ``Document`` per file, its whole text;
* ``"sections"``: one per page, slide, spreadsheet row or Markdown section, with its location
  (``page``, ``slide``, ``sheet``/``row``, ``heading``);
* ``"chunks"``: the knowledge base's own chunks (OpenLoomi's: 1000 characters, 200 overlap, or
  the ``knowledge_base`` settings given), with the metadata ingest gives each chunk
  (``file_name``, ``chunk_index``, ``start``/``end`` offsets, location, ``title``).

Every ``Document`` carries ``source`` (the absolute path, what ingest records as the document's
``blob_path``), ``file_name``, ``content_type`` (MIME), ``size_bytes`` and the document metadata
ingest records (``format`` and what the loader found: title, author, page count, ...). Its
``id`` is the path (``<path>:<n>`` for sections and chunks), so loading a file again upserts.

A file that cannot be read is reported as ingest reports it: an
:class:`~shared_core.documents.IngestFailure` (path, reason, message) in ``loader.failed``,
logged, and the other files are loaded; ``raise_on_error=True`` raises the
:class:`~shared_core.documents.DocumentError` instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from shared_core.config import KnowledgeBaseConfig
from shared_core.documents import (
    Chunker,
    IngestFailure,
    Limits,
    LoadedDocument,
)
from shared_core.documents.discovery import DocumentWalk
from shared_core.documents.knowledge_base import chunk_metadata, document_metadata

__all__ = ["OpenKoiDocumentLoader", "MODES"]


MODES = ("file", "sections", "chunks")
Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


class OpenKoiDocumentLoader(BaseLoader):
    """Load files and folders with openkoi's loaders into LangChain ``Document``s (see the module docs).

    ``paths``: files and folders. ``recursive``, ``include`` and ``exclude`` choose files in
    folders as ``store.documents.ingest`` does (globs on the relative path or the file name).
    ``knowledge_base``: the settings for limits and chunking (a store's
    ``store.config.knowledge_base``; default the seed's). ``raise_on_error``: raise on the first
    file that cannot be read instead of reporting it in :attr:`failed`.
    """

    def __init__(
        self,
        paths: Paths,
        *,
        mode: str = "file",
        recursive: bool = True,
        include: str | Sequence[str] | None = None,
        exclude: str | Sequence[str] | None = None,
        knowledge_base: KnowledgeBaseConfig | None = None,
        raise_on_error: bool = False,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.paths = list(paths)
        if not self.paths:
            raise ValueError("give at least one file or folder to load")
        self.mode = mode
        self.recursive = recursive
        self.include = include
        self.exclude = exclude
        settings = knowledge_base if knowledge_base is not None else KnowledgeBaseConfig()
        self.limits = Limits.from_config(settings)
        self.chunker = Chunker.from_config(settings) if mode == "chunks" else None
        self.raise_on_error = raise_on_error
        self.failed: list[IngestFailure] = []
        self.skipped: list[tuple[str, str]] = []

    def lazy_load(self) -> Iterator[Document]:
        """Yield the documents, file by file. :attr:`failed` and :attr:`skipped` describe the latest run."""
        walk = DocumentWalk(self.paths, recursive=self.recursive, include=self.include, exclude=self.exclude,
                            limits=self.limits, raise_on_error=self.raise_on_error)
        self.failed, self.skipped = walk.failed, walk.skipped
        for loaded in walk:
            yield from self._documents(loaded)

    def _documents(self, loaded: LoadedDocument) -> Iterator[Document]:
        source = str(loaded.source)
        base: dict[str, Any] = {"source": source, "file_name": loaded.file_name, "content_type": loaded.mime_type,
                                "size_bytes": loaded.size_bytes, **document_metadata(loaded)}
        if self.mode == "file" or (self.mode == "sections" and not loaded.sections):
            yield Document(loaded.text, metadata=base, id=source)
        elif self.mode == "sections":
            for number, (where, text) in enumerate(loaded.section_texts()):
                yield Document(text, metadata={**base, **where}, id=f"{source}:{number}")
        else:
            assert self.chunker is not None
            for chunk in self.chunker.chunk(loaded):
                meta = chunk_metadata(chunk, file_name=loaded.file_name, title=loaded.title)
                yield Document(chunk.text, metadata={**base, **meta}, id=f"{source}:{chunk.index}")

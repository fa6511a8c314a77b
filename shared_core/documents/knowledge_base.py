"""The knowledge base (seed 003): files in, searchable chunks out.

>>> from shared_core import MemoryStore
>>> store = MemoryStore.open(":memory:")                  # doctest: +SKIP
>>> report = store.documents.ingest("~/handbook")         # doctest: +SKIP
>>> print(report.summary())                               # doctest: +SKIP
12 added, 0 updated, 0 unchanged, 1 failed (340 chunks, 2.3 s)
>>> store.documents.search_knowledge_base("parental leave")[0].file_name   # doctest: +SKIP
'benefits.pdf'

Each file is read by its loader, split by the :class:`Chunker`, embedded, and written:
the ``rag_documents`` row, its ``rag_chunks`` rows and the chunks' index entries (kind
``document``, ``owner_id`` = document id) in one transaction, with several documents to a
transaction up to ``knowledge_base.batch_size`` (1000) chunks. A document with more chunks
than that gets a transaction of its own: a document is never half written.

Reading, extracting, chunking and embedding hold no lock: only the writes take the store's
lock, in those short transactions, so one tenant's upload never makes another's search, add
or upload wait for it. Each file's reading is bounded by the ``knowledge_base`` limits
(:class:`~shared_core.documents.safety.Limits`); a file past one is reported in
``report.failed`` and the others go on.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embed import profile_of
from ..errors import NotFoundError
from ..files import record_upload_root, upload_folder, upload_roots
from ..index.filters import Condition
from ..index.sanitize import query_terms
from ..memories import DEFAULT_NAMESPACE, NewMemory, check_namespace, new_id
from ..memories.service import MemoryService
from ..search import Hit
from .chunking import Chunk, Chunker
from .discovery import discover
from .errors import DocumentError
from .loaders import load_document, read_source
from .records import LoadedDocument, Section
from .report import IngestFailure, IngestReport
from .repository import Document, DocumentChunk, DocumentRepository
from .safety import Budget, Limits

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["KnowledgeBase", "KnowledgeHit", "Progress", "document_metadata", "chunk_metadata"]

Progress = Callable[[int, int, str], None]  # (files done, files in total, the file just done)

_PAGED = ("pdf", "pages", "numbers", "keynote")


@dataclass(frozen=True)
class KnowledgeHit:
    """One chunk found by :meth:`KnowledgeBase.search_knowledge_base`.

    ``similarity``: cosine similarity to the query (``None`` if the vector side did not run);
    ``keyword``: the share of the query's keyword weight (idf) the chunk contains, 0..1.
    ``metadata`` locates the chunk (``page``, ``sheet``/``row``, ``slide``, ``heading``, offsets).
    """

    id: str
    document_id: str
    file_name: str
    chunk_index: int
    text: str
    score: float
    similarity: float | None
    keyword: float
    metadata: dict[str, Any] = field(default_factory=dict)
    hit: Hit | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "hit"}
        out["metadata"] = dict(self.metadata)
        return out


@dataclass
class _Pending:
    """A file read and chunked, waiting for its batch to be embedded and written."""

    blob_path: str
    loaded: LoadedDocument
    chunks: list[Chunk]
    content_hash: str
    force: bool


class KnowledgeBase:
    """``store.documents``: ingest files, search their chunks, read, list and delete documents."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        #: seconds for the per-file time budget (``knowledge_base.max_seconds_per_file``); tests replace it
        self.timer: Callable[[], float] = time.monotonic
        self._repo = DocumentRepository(kernel.backend)
        self._chunker: Chunker | None = None
        self._chunker_settings: tuple[Any, ...] = ()

    # -- settings ------------------------------------------------------------------------------

    @property
    def config(self) -> Any:
        return self.kernel.config.knowledge_base

    @property
    def chunker(self) -> Chunker:
        """The chunker the ``knowledge_base`` settings describe (rebuilt if they change)."""
        cfg = self.config
        wanted = (cfg.chunk_size, cfg.chunk_overlap, cfg.chunk_unit, cfg.token_encoding)
        if self._chunker is None or self._chunker_settings != wanted:
            self._chunker = Chunker.from_config(cfg)
            self._chunker_settings = wanted
        return self._chunker

    @property
    def limits(self) -> Limits:
        return Limits.from_config(self.config)

    @property
    def similarity_threshold(self) -> float:
        """The vector-side threshold: ``knowledge_base.similarity_threshold``, else the embedder's
        ``profile.kb_threshold`` (0.7 for sentence models, seed 003; see docs/knowledge-base.md)."""
        configured = self.config.similarity_threshold
        return configured if configured >= 0 else profile_of(self.kernel.embedder).kb_threshold

    # -- ingest --------------------------------------------------------------------------------

    def ingest(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        recursive: bool = True,
        include: str | Sequence[str] | None = None,
        exclude: str | Sequence[str] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        progress: Progress | None = None,
        force: bool = False,
    ) -> IngestReport:
        """Ingest files and folders; return what happened to each file.

        Folders are walked (``recursive``) for the types loaders read; ``include``/``exclude``
        globs filter by relative path or file name. A file already ingested from the same path
        into ``namespace`` with the same content (SHA-256) and chunking is left alone, unless
        ``force``; a changed one replaces its chunks in one transaction, keeping its id. A file
        that cannot be read is reported in ``report.failed`` with its reason, and the others go
        on. ``progress(done, total, path)`` is called after each file (nothing prints otherwise).
        """
        check_namespace(namespace)
        started = time.perf_counter()
        chunker = self.chunker  # fails early if langchain-text-splitters is missing
        found = discover(paths, recursive=recursive, include=include, exclude=exclude)
        report = IngestReport(skipped=found.skipped)
        report.failed.extend(IngestFailure(p, "unreadable", "does not exist") for p in found.missing)
        batch: list[_Pending] = []
        rows = 0
        total = len(found.files)
        for done, path in enumerate(found.files, 1):
            item = self._prepare(path, namespace, chunker, force, report)
            if item is not None:
                batch.append(item)
                rows += len(item.chunks)
                if rows >= self.config.batch_size:
                    self._write(batch, namespace, chunker, report)
                    batch, rows = [], 0
            if progress is not None:
                progress(done, total, str(path))
        self._write(batch, namespace, chunker, report)
        report.seconds = time.perf_counter() - started
        return report

    def ingest_text(
        self, text: str, *, name: str, namespace: str = DEFAULT_NAMESPACE, metadata: dict[str, Any] | None = None
    ) -> Document:
        """Add (or replace) a document made from text rather than a file, e.g. seed 003's ``memory.txt``
        of personal settings. ``name`` identifies it: the same name replaces the earlier text."""
        check_namespace(namespace)
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text is empty; a knowledge-base document needs some text")
        if not isinstance(name, str) or not name.strip():
            raise ValueError("name must be a non-empty string such as 'memory.txt'")
        limit = self.config.max_characters
        if len(text) > limit:
            raise ValueError(f"text has {len(text):,} characters (limit {limit:,}); split it or raise "
                             "knowledge_base.max_characters")
        clean = text.replace("\r\n", "\n").replace("\x00", "")
        loaded = LoadedDocument(
            source=Path(name), file_name=name, mime_type="text/plain", size_bytes=len(clean.encode("utf-8")),
            format="text", text=clean, metadata=dict(metadata or {}), sections=[Section(0, len(clean), {})],
        )
        chunker = self.chunker
        report = IngestReport()
        digest = hashlib.sha256(clean.encode("utf-8")).hexdigest()
        blob = f"text:{name}"
        self._write([_Pending(blob, loaded, chunker.chunk(loaded), digest, False)], namespace, chunker, report)
        written = report.documents or report.unchanged
        return written[0]

    def _prepare(self, path: Path, namespace: str, chunker: Chunker, force: bool,
                 report: IngestReport) -> _Pending | None:
        """Read, extract and chunk one file: the slow part, done holding no lock (only the lookup of
        the earlier version takes the store's lock, for a moment)."""
        limits = self.limits
        budget = Budget(limits, timer=self.timer)
        blob = str(path)
        try:
            data = read_source(path, limits)
            digest = hashlib.sha256(data).hexdigest()
            if not force:
                with self.kernel.session():
                    existing = self._repo.find(namespace, blob)
                if existing is not None and existing.content_hash == digest and existing.chunker == chunker.signature:
                    report.unchanged.append(existing)
                    return None
            loaded = load_document(path, data=data, budget=budget)
        except DocumentError as exc:
            report.failed.append(IngestFailure(str(path), exc.reason, exc.message))
            return None
        return _Pending(blob, loaded, chunker.chunk(loaded), digest, force)

    def _write(self, batch: list[_Pending], namespace: str, chunker: Chunker, report: IngestReport) -> None:
        """Embed the batch's chunks (outside any transaction), then write it in one transaction."""
        if not batch:
            return
        texts = [chunk.text for item in batch for chunk in item.chunks]
        step = self.config.batch_size
        vectors = [row for start in range(0, len(texts), step) for row in self.kernel.embed(texts[start : start + step])]
        added: list[Document] = []
        updated: list[Document] = []
        unchanged: list[Document] = []
        memories: list[NewMemory] = []
        characters = 0
        offset = 0
        with self.kernel.session(write=True):
            now = self.kernel.clock.now()
            for item in batch:
                item_vectors = vectors[offset : offset + len(item.chunks)]
                offset += len(item.chunks)
                existing = self._repo.find(namespace, item.blob_path)  # fresh: another process may have written it
                if (existing is not None and not item.force and existing.content_hash == item.content_hash
                        and existing.chunker == chunker.signature):
                    unchanged.append(existing)
                    continue
                loaded = item.loaded
                document = Document(
                    id=existing.id if existing else new_id(), namespace=namespace, file_name=loaded.file_name,
                    content_type=loaded.mime_type, size_bytes=loaded.size_bytes, total_chunks=len(item.chunks),
                    blob_path=item.blob_path, uploaded_at=existing.uploaded_at if existing else now, updated_at=now,
                    metadata=document_metadata(loaded), content_hash=item.content_hash,
                    chunker=chunker.signature,
                )
                if existing is not None:
                    self.kernel.service(MemoryService).delete(self._repo.chunk_ids(existing.id), missing_ok=True)
                    self._repo.delete_chunks(existing.id)
                    self._repo.replace(document, loaded.text)
                    updated.append(document)
                else:
                    self._repo.insert(document, loaded.text)
                    added.append(document)
                rows = []
                for chunk, vector in zip(item.chunks, item_vectors, strict=True):
                    chunk_id = f"{document.id}:{chunk.index}"
                    rows.append((chunk_id, document.id, namespace, chunk.index, chunk.start, chunk.end, chunk.metadata))
                    memories.append(NewMemory(
                        text=chunk.text, id=chunk_id, kind="document", namespace=namespace, source=loaded.file_name,
                        metadata=_chunk_metadata(document, chunk), owner_id=document.id, vector=vector,
                    ))
                self._repo.insert_chunks(rows)
                characters += len(loaded.text)
            if memories:
                self.kernel.service(MemoryService).add_many(memories, batch_size=len(memories))
        report.added.extend(added)
        report.updated.extend(updated)
        report.unchanged.extend(unchanged)
        for document in (*added, *updated):
            report.chunks += document.total_chunks
            if document.metadata.get("format") in _PAGED:
                report.pages += int(document.metadata.get("page_count", 0))
        report.characters += characters

    # -- query ---------------------------------------------------------------------------------

    def search_knowledge_base(
        self,
        query: str,
        limit: int | None = None,
        document_ids: Sequence[str] | str | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[KnowledgeHit]:
        """Seed 003's ``searchKnowledgeBase``: the best chunks for ``query`` (5 by default).

        Hybrid: the core search (BM25 + vectors, ranked by feedback and recency) over document
        chunks, within ``document_ids`` when given. The seed's cosine threshold applies to the
        vector side only: a chunk stays if its similarity reaches the threshold, or if it
        contains terms carrying at least ``knowledge_base.keyword_strength`` of the query's
        keyword weight (idf), so a strong keyword match is kept whatever its vector says.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query is empty; search the knowledge base with some words")
        limit = self.config.default_limit if limit is None else limit
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a whole number >= 0, got {limit!r}")
        where = None
        if document_ids is not None:
            ids = [document_ids] if isinstance(document_ids, str) else list(document_ids)
            if not ids or limit == 0:
                return []
            where = Condition("@owner_id", "$in", ids)
        if limit == 0:
            return []
        with self.kernel.session() as db:
            hits = self.kernel.service(MemoryService).search(query, namespace=namespace, kind="document", where=where,
                                                             limit=max(4 * limit, 20), track_access=False)
            coverage = self._coverage(query, [h for h in hits if (h.parts.bm25 or 0.0) > 0])
            threshold = self.similarity_threshold
            strength = self.config.keyword_strength
            kept: list[KnowledgeHit] = []
            for hit in hits:
                similarity = hit.parts.similarity
                share = coverage.get(hit.memory.rowid, 0.0)
                if (similarity is not None and similarity >= threshold) or (share > 0 and share >= strength):
                    kept.append(_knowledge_hit(hit, share))
                    if len(kept) == limit:
                        break
            if kept and self.kernel.config.search.track_access and not db.read_only:
                self.kernel.memories.note_access(h.hit.memory.rowid for h in kept if h.hit is not None)
            return kept

    search = search_knowledge_base

    def _coverage(self, query: str, hits: list[Hit]) -> dict[int, float]:
        """Per keyword-matched hit: the idf-weighted share of the query's terms it contains."""
        if not hits:
            return {}
        rowids = [h.memory.rowid for h in hits]
        weights = self._repo.term_weights(query_terms(query), rowids)
        total = sum(weight for weight, _ in weights)
        if total <= 0:
            return {}
        return {rowid: sum(w for w, rows in weights if rowid in rows) / total for rowid in rowids}

    def get_document(self, document_id: str, *, namespace: str | None = None) -> Document:
        """A document's record (no text); :class:`NotFoundError` if there is none."""
        with self.kernel.session():
            document = self._repo.get(document_id)
        if document is None or (namespace is not None and document.namespace != namespace):
            where = f" in namespace {namespace!r}" if namespace is not None else ""
            raise NotFoundError(f"no knowledge-base document with id {document_id!r}{where}; "
                                "list them with store.documents.list_documents()")
        return document

    def get_full_document(self, document_id: str, *, namespace: str | None = None) -> str:
        """Seed 003's ``getFullDocumentContent``: the document's whole extracted text."""
        self.get_document(document_id, namespace=namespace)
        with self.kernel.session():
            return self._repo.content(document_id) or ""

    def get_chunks(self, document_id: str, *, namespace: str | None = None) -> list[DocumentChunk]:
        """The document's chunks in order, with their text, offsets and metadata."""
        self.get_document(document_id, namespace=namespace)
        with self.kernel.session():
            return self._repo.chunks(document_id)

    def list_documents(self, limit: int | None = 20, *, namespace: str | None = DEFAULT_NAMESPACE,
                       offset: int = 0) -> list[Document]:
        """Seed 003's ``listKnowledgeBaseDocuments``: the most recently uploaded first
        (``namespace=None``: every namespace; ``limit=None``: all)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be a whole number >= 0 or None, got {limit!r}")
        with self.kernel.session():
            return self._repo.page(namespace, limit, offset)

    def count_documents(self, *, namespace: str | None = DEFAULT_NAMESPACE) -> int:
        with self.kernel.session():
            return self._repo.count(namespace)

    def delete_document(self, document_id: str, *, namespace: str | None = None, missing_ok: bool = False) -> bool:
        """Remove a document, its chunks and their index entries in one transaction; True if it existed."""
        try:
            document = self.get_document(document_id, namespace=namespace)
        except NotFoundError:
            if missing_ok:
                return False
            raise
        with self.kernel.session(write=True) as db:
            self.kernel.service(MemoryService).delete(self._repo.chunk_ids(document.id), missing_ok=True)
            self._repo.delete(document.id)
            uploaded = self._uploaded_copy(document.blob_path)
            if uploaded is not None:  # the server's copy of an uploaded file goes with its document
                db.after_commit(lambda: uploaded.unlink(missing_ok=True))
        return True

    def record_upload_root(self, root: Path) -> None:
        """Remember ``root`` as a folder this memory's uploads go to (a server's ``upload_dir``), before the
        first file lands there, so that erasing a namespace from any process finds its uploads there too."""
        with self.kernel.session():
            record_upload_root(self.kernel.data_dir, self.kernel.backend, root)

    def _uploaded_copy(self, blob_path: str) -> Path | None:
        """The file, if ``blob_path`` is a copy the REST API keeps in an upload folder (not a user's own file)."""
        if blob_path.startswith("text:"):
            return None
        path = Path(blob_path).resolve()
        return path if any(path.is_relative_to(root) for root in upload_roots(self.kernel.data_dir, self.kernel.backend)) else None

    def erase(self, namespace: str) -> None:
        """``erase_namespace``: the rows, and once the erase commits, the namespace's upload folders."""
        folders = [upload_folder(root, namespace) for root in upload_roots(self.kernel.data_dir, self.kernel.backend)]
        self._repo.erase_namespace(namespace)

        def remove() -> None:
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)  # what could not go, verify_erase() reports

        self.kernel.backend.after_commit(remove)


def document_metadata(loaded: LoadedDocument) -> dict[str, Any]:
    """What a document's record keeps as its metadata: the format, then what the loader found."""
    return {"format": loaded.format, **loaded.metadata}


def chunk_metadata(chunk: Chunk, *, file_name: str, title: str | None = None,
                   document_id: str | None = None) -> dict[str, Any]:
    """A chunk's index metadata: its document and file, index, offsets and location, the title.

    The same for the knowledge base and for loaders that hand chunks to a framework
    (``document_id`` is left out when the chunk is not stored as part of a document).
    """
    out: dict[str, Any] = {"document_id": document_id} if document_id is not None else {}
    out.update({"file_name": file_name, **chunk.metadata})
    if title:
        out["title"] = title
    return out


def _chunk_metadata(document: Document, chunk: Chunk) -> dict[str, Any]:
    return chunk_metadata(chunk, file_name=document.file_name, title=document.metadata.get("title"),
                          document_id=document.id)


def _knowledge_hit(hit: Hit, share: float) -> KnowledgeHit:
    memory = hit.memory
    meta = memory.metadata
    return KnowledgeHit(
        id=memory.id, document_id=memory.owner_id or str(meta.get("document_id", "")),
        file_name=str(meta.get("file_name", memory.source)), chunk_index=int(meta.get("chunk_index", 0)),
        text=memory.text, score=hit.score, similarity=hit.parts.similarity, keyword=min(1.0, share),
        metadata=meta, hit=hit,
    )

"""The knowledge base: search, and documents (upload, text, ingest from the server's documents roots,
read, remove). Uploads are kept under the server's upload folder, one folder per namespace."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from ...documents.discovery import discover
from ...documents.loaders import SUPPORTED_EXTENSIONS
from ...files import upload_folder
from ..schemas import (
    DocumentContentOut,
    DocumentOut,
    IngestFailureOut,
    IngestIn,
    IngestOut,
    KnowledgeHitOut,
    KnowledgeSearchIn,
    TextDocumentIn,
)
from .access import Namespace

if TYPE_CHECKING:
    from ...store import MemoryStore

__all__ = ["knowledge_routes", "UPLOAD_PATH", "KeyedLocks"]

UPLOAD_PATH = "/api/kb/documents"


def knowledge_routes(app: FastAPI, store: MemoryStore, uploads: Path, roots: list[Path]) -> None:
    tags: list[str | Enum] = ["knowledge-base"]
    upload_locks = KeyedLocks()

    @app.post("/api/kb/search", tags=tags, response_model=list[KnowledgeHitOut],
              summary="searchKnowledgeBase (seed 003)")
    def search_kb(body: KnowledgeSearchIn, ns: Namespace) -> list[KnowledgeHitOut]:
        hits = store.documents.search_knowledge_base(body.query, body.limit, body.document_ids, namespace=ns)
        return [KnowledgeHitOut(**h.to_dict()) for h in hits]

    @app.get("/api/kb/documents", tags=tags, response_model=list[DocumentOut],
             summary="listKnowledgeBaseDocuments (seed 003): most recent first")
    def list_documents(
        ns: Namespace,
        limit: Annotated[int, Query(ge=1, le=1000)] = 20,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> list[DocumentOut]:
        return [DocumentOut.model_validate(d) for d in store.documents.list_documents(limit, namespace=ns,
                                                                                       offset=offset)]

    @app.post(UPLOAD_PATH, tags=tags, status_code=201, response_model=DocumentOut, summary="Upload a document",
              openapi_extra={"requestBody": {"required": True, "content": {
                  "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}})
    async def upload_document(
        request: Request,
        ns: Namespace,
        name: Annotated[str, Query(min_length=1, max_length=255,
                                   description="The file name, e.g. 'contract.pdf' (no folders).")],
    ) -> DocumentOut:
        file_name = _safe_file_name(name)
        data = await request.body()
        if not data:
            raise HTTPException(400, "the request body is empty; send the file's bytes")
        limit = store.config.knowledge_base.max_file_bytes
        if len(data) > limit:
            raise HTTPException(413, f"the file is larger than knowledge_base.max_file_bytes ({limit:,} bytes)")
        # a folder of its own is recorded before the first file lands there, so an erase from any process finds it
        await run_in_threadpool(store.documents.record_upload_root, uploads)
        folder = upload_folder(uploads, ns)
        return await run_in_threadpool(_store_upload, store, folder, file_name, data, ns, upload_locks)

    @app.post("/api/kb/documents/text", tags=tags, status_code=201, response_model=DocumentOut,
              summary="Keep text as a document (the same name replaces it)")
    def text_document(body: TextDocumentIn, ns: Namespace) -> DocumentOut:
        document = store.documents.ingest_text(body.text, name=body.name, namespace=ns, metadata=body.metadata)
        return DocumentOut.model_validate(document)

    @app.post("/api/kb/ingest", tags=tags, response_model=IngestOut,
              summary="Ingest files and folders on the server (inside server.documents_roots only)")
    def ingest(body: IngestIn, ns: Namespace) -> IngestOut:
        if not roots:
            raise HTTPException(403, "ingesting server paths is off; set server.documents_roots to the folders "
                                "it may read, or upload with POST /api/kb/documents")
        requested = [Path(p) for p in body.paths]  # taken literally: a client's '~' is not the server's home
        for path in requested:
            if not path.is_absolute() or not _inside(path, roots):
                raise HTTPException(403, f"{str(path)!r} is outside the documents roots this server may read")
        found = discover(requested, recursive=body.recursive, include=body.include, exclude=body.exclude)
        files = [f for f in found.files if _inside(f, roots)]  # a symlink inside a root may point outside it
        outside = [f for f in found.files if f not in files]
        report = store.documents.ingest(files, recursive=False, namespace=ns, force=body.force) if files else None
        failed = [IngestFailureOut(path=f.name, reason="outside-roots",
                                   message="a link that leads outside the documents roots") for f in outside]
        failed += [IngestFailureOut(path=p, reason="unreadable", message="does not exist") for p in found.missing]
        if report is not None:
            failed += [IngestFailureOut(path=f.path, reason=f.reason, message=f.message) for f in report.failed]

        def docs(items: list[Any]) -> list[DocumentOut]:
            return [DocumentOut.model_validate(d) for d in items]

        return IngestOut(added=docs(report.added if report else []), updated=docs(report.updated if report else []),
                         unchanged=docs(report.unchanged if report else []), failed=failed,
                         chunks=report.chunks if report else 0)

    @app.get("/api/kb/documents/{document_id}", tags=tags, response_model=DocumentOut, summary="A document's record")
    def get_document(document_id: str, ns: Namespace) -> DocumentOut:
        return DocumentOut.model_validate(store.documents.get_document(document_id, namespace=ns))

    @app.get("/api/kb/documents/{document_id}/content", tags=tags, response_model=DocumentContentOut,
             summary="getFullDocumentContent (seed 003)")
    def document_content(document_id: str, ns: Namespace) -> DocumentContentOut:
        document = store.documents.get_document(document_id, namespace=ns)
        text = store.documents.get_full_document(document_id, namespace=ns)
        return DocumentContentOut(id=document.id, file_name=document.file_name, content=text)

    @app.delete("/api/kb/documents/{document_id}", tags=tags, status_code=204, summary="Remove a document")
    def delete_document(document_id: str, ns: Namespace) -> Response:
        store.documents.delete_document(document_id, namespace=ns)
        return Response(status_code=204)


def _safe_file_name(name: str) -> str:
    """A plain file name of a supported type; anything that could name another folder is refused."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise HTTPException(400, "the file name must be valid Unicode") from None
    if (not name.strip() or name != os.path.basename(name) or "/" in name or "\\" in name or name in (".", "..")
            or name.startswith(".") or "\x00" in name or any(ord(c) < 32 for c in name) or ":" in name):
        raise HTTPException(400, "name must be a plain file name such as 'contract.pdf': no folders, no '..', "
                            "no leading dot, no control characters")
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        raise HTTPException(400, f"files of type {suffix or '(none)'!r} cannot be read; supported: "
                            f"{', '.join(sorted(SUPPORTED_EXTENSIONS))}")
    return name


def _inside(path: Path, roots: list[Path]) -> bool:
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        return False
    return any(resolved == root or resolved.is_relative_to(root) for root in roots)


class KeyedLocks:
    """One lock per key, kept only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Any, tuple[threading.Lock, int]] = {}

    @contextlib.contextmanager
    def hold(self, key: Any) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)


def _store_upload(store: MemoryStore, folder: Path, name: str, data: bytes, namespace: str,
                  locks: KeyedLocks) -> DocumentOut:
    """Write the upload beside the earlier version (kept until the new one is ingested), then ingest it.

    Only uploads of the same file name into the same namespace wait for each other (they share the
    file and its backup); the file is read and parsed outside the store's lock, so another tenant's
    upload, search or write goes on meanwhile, and only the write of the extracted chunks is a
    transaction.
    """
    with locks.hold((str(folder), name)):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = folder / name
        backup = folder / f".{name}.previous"
        had_previous = target.exists()
        if had_previous:
            os.replace(target, backup)
        try:
            with open(target, "wb") as handle:
                handle.write(data)
            report = store.documents.ingest([target], recursive=False, namespace=namespace)
        except BaseException:
            _restore(target, backup, had_previous)
            raise
        if report.failed:
            _restore(target, backup, had_previous)
            failure = report.failed[0]
            code = 413 if failure.reason in ("too-large", "zip-bomb") else 422
            raise HTTPException(code, f"{name}: {failure.message} [{failure.reason}]")
        backup.unlink(missing_ok=True)
        documents = report.added or report.updated or report.unchanged
        return DocumentOut.model_validate(documents[0])


def _restore(target: Path, backup: Path, had_previous: bool) -> None:
    target.unlink(missing_ok=True)
    if had_previous:
        os.replace(backup, target)

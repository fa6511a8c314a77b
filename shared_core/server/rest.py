"""The REST API (``openkoi-memory serve``): seed 003's local API at http://127.0.0.1:3415/api/.

Routes: memories (add, list, get, update, delete, search, feedback), namespaces (list, erase), the knowledge base
(search, documents: upload, text, ingest from the server's documents roots, read, delete),
insights (rank, upsert, search, view, favourite, weight, delete), usage analytics (events,
patterns, summary), maintenance (status, run) and health; the MCP endpoint at ``/mcp``; the
OpenAPI document at ``/openapi.json`` (``/docs`` renders it). Every request passes the browser guard
(its ``Host`` must name this server, writes from another site are refused) and needs a bearer token
(:mod:`.asgi`); a token limited to namespaces gets 403 for any other namespace, before anything
is looked up, so a 403 never tells whether something exists there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from ..documents.discovery import discover
from ..documents.loaders import SUPPORTED_EXTENSIONS
from ..errors import NotFoundError, OpenKoiError
from ..files import UPLOADS, record_upload_root, upload_folder
from ..items import STORE_ITEM_KINDS
from ..memories import DEFAULT_NAMESPACE, check_namespace
from ..registry import DOMAINS
from .asgi import PRINCIPAL_KEY, BearerAuth, BodyLimit, BrowserGuard, allowed_hosts_for
from .auth import Principal, TokenFile
from .errors import RETRY_AFTER_SECONDS, Scrubber, classify, scrubber_for
from .schemas import (
    AddOut,
    DocumentContentOut,
    DocumentOut,
    EraseOut,
    FavoriteIn,
    FeedbackIn,
    HealthOut,
    HitOut,
    IngestIn,
    IngestOut,
    InsightHitOut,
    InsightIn,
    InsightOut,
    InsightSearchIn,
    KnowledgeHitOut,
    KnowledgeSearchIn,
    MaintenanceOut,
    MemoryIn,
    MemoryOut,
    MemoryPatch,
    NamespaceOut,
    RankedInsightOut,
    SearchIn,
    SearchOut,
    TextDocumentIn,
    UsageEventIn,
    UsageEventOut,
    UsagePatternOut,
    UsageSummaryOut,
    WeightIn,
)

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .scheduler import MaintenanceScheduler

__all__ = ["create_app", "MANAGED_KINDS", "UPLOAD_PATH"]

logger = logging.getLogger("openkoi.server")

# kinds that belong to a domain (a document chunk, an insight, a LangGraph item...): read and search
# them here, but write them through their own endpoints or libraries. Plain memories (facts, notes)
# are the memories and facts domains'; the adapters own their items and nodes.
MANAGED_KINDS = frozenset((
    *(kind for domain in DOMAINS if domain.name not in ("memories", "facts") for kind in domain.kinds),
    *STORE_ITEM_KINDS, "node",
))
UPLOAD_PATH = "/api/kb/documents"
_NAMESPACE_HELP = ("Whose memory: a user, an agent, a project (e.g. 'user:alice'). Default: the token's only "
                   "namespace if it is limited to one, else 'default'.")


def create_app(
    store: MemoryStore,
    *,
    tokens: TokenFile | None,
    scheduler: MaintenanceScheduler | None = None,
    mcp: bool = True,
    host: str = "127.0.0.1",
    upload_dir: str | os.PathLike[str] | None = None,
    documents_roots: Sequence[str | os.PathLike[str]] | None = None,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    mcp_tools: str | Sequence[str] | None = None,
) -> FastAPI:
    """The REST API (and the MCP endpoint at ``/mcp``) on ``store``, behind bearer tokens.

    ``tokens=None`` serves without authentication (the CLI allows that on loopback addresses
    only). ``scheduler`` is started and stopped with the app. Uploaded documents are kept under
    ``upload_dir`` (default ``<data dir>/uploads``); ``POST /api/kb/ingest`` reads only inside
    ``documents_roots`` (default ``server.documents_roots``; none: refused). ``host`` is the address
    the server is bound to: requests must name it (or one of ``allowed_hosts``, default
    ``server.allowed_hosts``) in their ``Host`` header, and browsers may write only from this
    server's own origin or ``allowed_origins`` (default ``server.allowed_origins``); see
    :class:`~.asgi.BrowserGuard`. ``mcp_tools``: the tools ``/mcp`` offers (default: the small set,
    :data:`~shared_core.tools.MCP_DEFAULT_TOOL_NAMES`; ``"all"``, or names; see ``create_mcp_server``).
    """
    cfg = store.config.server
    roots = [Path(r).expanduser().resolve() for r in (cfg.documents_roots if documents_roots is None else documents_roots)]
    uploads = Path(upload_dir) if upload_dir is not None else Path(store.data_dir) / UPLOADS
    session_manager = None
    mcp_endpoint = None
    if mcp:
        from .mcp_server import create_mcp_server, http_endpoint

        mcp_endpoint, session_manager = http_endpoint(create_mcp_server(store, tools=mcp_tools))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if scheduler is not None:
            scheduler.start()
        try:
            if session_manager is not None:
                async with session_manager.run():
                    yield
            else:
                yield
        finally:
            if scheduler is not None:
                await run_in_threadpool(scheduler.stop)

    app = FastAPI(
        title="openkoi-memory",
        version=_version(),
        description="Local-first long-term memory for LLM agents (docs/server.md). Every request needs "
                    "`Authorization: Bearer <token>`.",
        lifespan=lifespan,
        openapi_tags=[{"name": n} for n in ("memories", "knowledge-base", "insights", "usage", "maintenance", "server")],
    )
    app.state.store = store
    app.state.scheduler = scheduler
    scrub = scrubber_for(store, uploads)
    _install_errors(app, scrub)
    if mcp_endpoint is not None:
        app.router.routes.append(Route("/mcp", endpoint=mcp_endpoint, methods=["GET", "POST", "DELETE"],
                                       include_in_schema=False))
    _memory_routes(app, store, scrub)
    _knowledge_routes(app, store, uploads, roots)
    _insight_routes(app, store)
    _usage_routes(app, store)
    _server_routes(app, store, scheduler)
    from .inspector_routes import add_inspector  # the inspector's page at / and its routes
    add_inspector(app, store)
    app.add_middleware(BodyLimit, default=cfg.max_body_bytes, limits={UPLOAD_PATH: cfg.max_upload_bytes})
    app.add_middleware(BearerAuth, tokens=tokens)
    app.add_middleware(  # outermost: a page's request is refused before the token or the body is looked at
        BrowserGuard, allowed_hosts=allowed_hosts_for(host, cfg.allowed_hosts if allowed_hosts is None else allowed_hosts),
        allowed_origins=cfg.allowed_origins if allowed_origins is None else allowed_origins, raw_paths=(UPLOAD_PATH,))
    return app


# -- who is asking, and for which namespace ------------------------------------------------------------

def principal_of(request: Request) -> Principal:
    principal = request.scope.get("state", {}).get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):  # only if the app runs without its auth middleware
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "no credentials")
    return principal


def resolve_namespace(
    request: Request,
    namespace: Annotated[str | None, Query(max_length=500, description=_NAMESPACE_HELP)] = None,
) -> str:
    principal = principal_of(request)
    chosen = namespace if namespace is not None else (principal.default_namespace or DEFAULT_NAMESPACE)
    try:
        check_namespace(chosen)
        chosen.encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "namespace must be a non-empty string such as "
                            "'user:alice' (no NUL characters)") from None
    if not principal.allows(chosen):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this token may not use that namespace")
    return chosen


def require_unrestricted(request: Request) -> Principal:
    principal = principal_of(request)
    if not principal.unrestricted:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this needs a token for every namespace ('*')")
    return principal


Namespace = Annotated[str, Depends(resolve_namespace)]


# -- errors: a bad request is 4xx with its message, a busy store 503, the rest 500; no path ever leaks ------

def _install_errors(app: FastAPI, scrub: Scrubber) -> None:
    async def library_error(request: Request, exc: Exception) -> JSONResponse:
        answer = classify(exc, scrub)
        if answer.log:
            logger.error("error on %s %s", request.method, request.url.path, exc_info=exc)
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if answer.retry else None
        return JSONResponse({"detail": answer.message}, status_code=answer.status, headers=headers)

    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": scrub(str(e.get("msg", ""))), "type": e.get("type", "")}
                  for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    async def http_error(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, StarletteHTTPException):  # registered for that class only
            return await library_error(request, exc)
        if isinstance(exc.__cause__, RecursionError):  # FastAPI could not parse a body nested thousands deep
            return JSONResponse({"detail": "the JSON body is nested too deeply (objects or lists inside each other); "
                                 "flatten it"}, status_code=400)
        if isinstance(exc.detail, str):  # an upload's failure names the server's copy of the file
            exc = StarletteHTTPException(exc.status_code, scrub(exc.detail), exc.headers)
        return await http_exception_handler(request, exc)

    for kind in (Exception, ValueError, TypeError, OpenKoiError, RecursionError, OverflowError, UnicodeError,
                 ValidationError):
        app.add_exception_handler(kind, library_error)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http_error)


def _not_found(what: str, ident: str, namespace: str) -> HTTPException:
    return HTTPException(status.HTTP_404_NOT_FOUND, f"no {what} with id {ident!r} in namespace {namespace!r}")


# -- memories --------------------------------------------------------------------------------------------

def _memory_routes(app: FastAPI, store: MemoryStore, scrub: Scrubber) -> None:
    tags = ["memories"]

    @app.post("/api/memories", tags=tags, status_code=201, response_model=AddOut, summary="Add a memory")
    def add_memory(body: MemoryIn, ns: Namespace) -> AddOut:
        if body.kind in MANAGED_KINDS:
            raise HTTPException(400, f"memories of kind {body.kind!r} are written by their own part of the API "
                                "or library (e.g. documents through /api/kb, insights through /api/insights)")
        result = store.add(
            body.text, kind=body.kind, namespace=ns, tags=body.tags, category=body.category, source=body.source,
            metadata=body.metadata, importance=body.importance, confidence=body.confidence, pinned=body.pinned,
            ttl=body.ttl_seconds, session_id=body.session_id, dedup=body.dedup,
        )
        memory = store.get(result, namespace=ns)
        return AddOut(id=memory.id, event=result.event, memory=MemoryOut.model_validate(memory))

    @app.get("/api/memories", tags=tags, response_model=list[MemoryOut], summary="List memories")
    def list_memories(
        ns: Namespace,
        kind: Annotated[list[str] | None, Query(max_length=50)] = None,
        tag: Annotated[list[str] | None, Query(max_length=100, description="Any of these tags.")] = None,
        category: Annotated[str | None, Query(max_length=200)] = None,
        order_by: Annotated[str, Query(pattern="^(created_at|updated_at|score|access_count|last_hit_at)$")] = "created_at",
        descending: bool = True,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> list[MemoryOut]:
        memories = store.list(namespace=ns, kind=kind or None, tags=tag or None, category=category,
                              order_by=order_by, descending=descending, limit=limit, offset=offset)
        return [MemoryOut.model_validate(m) for m in memories]

    @app.post("/api/memories/search", tags=tags, response_model=SearchOut, summary="Hybrid search")
    def search_memories(body: SearchIn, ns: Namespace) -> SearchOut:
        hits = store.search(
            body.query, namespace=ns, kind=body.kind or None, tags=body.tags or None,
            category=body.category or None, where=body.where, limit=body.limit, offset=body.offset,
            fusion=body.fusion, include_archive=body.include_archive, track_access=body.track_access,
        )
        return SearchOut(query=body.query, namespace=ns, hits=[
            HitOut(id=h.id, score=h.score, parts=h.parts.to_dict(), memory=MemoryOut.model_validate(h.memory))
            for h in hits])

    @app.get("/api/memories/{memory_id}", tags=tags, response_model=MemoryOut, summary="Get a memory")
    def get_memory(memory_id: str, ns: Namespace) -> MemoryOut:
        return MemoryOut.model_validate(store.get(memory_id, namespace=ns))

    @app.patch("/api/memories/{memory_id}", tags=tags, response_model=MemoryOut, summary="Update a memory in place")
    def update_memory(memory_id: str, body: MemoryPatch, ns: Namespace) -> MemoryOut:
        _writable(store, memory_id, ns)
        given = body.model_fields_set
        memory = store.update(
            memory_id, body.text, namespace=ns, tags=body.tags,
            metadata=body.metadata, category=body.category if "category" in given else ...,
            importance=body.importance if "importance" in given else ..., pinned=body.pinned,
        )
        return MemoryOut.model_validate(memory)

    @app.delete("/api/memories/{memory_id}", tags=tags, status_code=204, summary="Delete a memory for good")
    def delete_memory(memory_id: str, ns: Namespace) -> Response:
        _writable(store, memory_id, ns)
        store.delete(memory_id, namespace=ns)
        return Response(status_code=204)

    @app.post("/api/memories/{memory_id}/feedback", tags=tags, response_model=MemoryOut,
              summary="Reinforce (+3) or demote (-1) a memory")
    def feedback(memory_id: str, body: FeedbackIn, ns: Namespace) -> MemoryOut:
        act = store.reinforce if body.signal == "reinforce" else store.demote
        return MemoryOut.model_validate(act(memory_id, namespace=ns, weight=body.weight))

    @app.get("/api/namespaces", tags=tags, response_model=list[NamespaceOut], summary="Namespaces this token sees")
    def namespaces(request: Request) -> list[NamespaceOut]:
        principal = principal_of(request)
        return [NamespaceOut(namespace=n, memories=c) for n, c in store.namespaces().items() if principal.allows(n)]

    @app.delete("/api/namespaces/{namespace:path}", tags=tags, response_model=EraseOut,
                responses={202: {"model": EraseOut, "description": "Erased, but old pages remain until another "
                                 "connection's read ends (see remaining); it finishes by itself"}},
                summary="Erase a namespace: every row, file and stored byte of it")
    def erase_namespace(namespace: str, request: Request, response: Response) -> EraseOut:
        ns = resolve_namespace(request, namespace)
        report = store.erase_namespace(ns).to_dict()
        for key in ("files", "remaining", "notes"):
            report[key] = [scrub(text) for text in report[key]]
        response.status_code = 200 if report["complete"] else 202
        return EraseOut(**report)


def _writable(store: MemoryStore, memory_id: str, namespace: str) -> None:
    memory = store.get(memory_id, namespace=namespace)
    if memory.kind in MANAGED_KINDS:
        raise HTTPException(400, f"memory {memory_id!r} is a {memory.kind} entry kept by its own domain; change it "
                            "there (e.g. DELETE /api/kb/documents/{id} for a document, /api/insights for an insight)")


# -- knowledge base ---------------------------------------------------------------------------------------

def _knowledge_routes(app: FastAPI, store: MemoryStore, uploads: Path, roots: list[Path]) -> None:
    tags = ["knowledge-base"]
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
        await run_in_threadpool(record_upload_root, store.data_dir, store.db, uploads)
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
        failed = [{"path": f.name, "reason": "outside-roots", "message": "a link that leads outside the documents roots"}
                  for f in outside]
        failed += [{"path": p, "reason": "unreadable", "message": "does not exist"} for p in found.missing]
        if report is not None:
            failed += [{"path": f.path, "reason": f.reason, "message": f.message} for f in report.failed]

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

    @app.delete("/api/kb/documents/{document_id}", tags=tags, status_code=204, summary="Delete a document")
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


# -- insights ----------------------------------------------------------------------------------------------

def _insight_routes(app: FastAPI, store: MemoryStore) -> None:
    tags = ["insights"]

    def ranked_out(entry: Any) -> RankedInsightOut:
        return RankedInsightOut(insight=InsightOut.model_validate(entry.insight), rank=entry.rank, score=entry.score,
                                value=_plain(entry.value), weights=_plain(entry.weights))

    @app.get("/api/insights", tags=tags, response_model=list[RankedInsightOut],
             summary="Insights by value score x weight (seed 003)")
    def rank_insights(
        ns: Namespace,
        limit: Annotated[int, Query(ge=1, le=1000)] = 20,
        task_label: Annotated[str | None, Query(max_length=200)] = None,
        state: Annotated[str | None, Query(pattern="^(active|dormant)$")] = None,
    ) -> list[RankedInsightOut]:
        return [ranked_out(e) for e in store.insights.rank(namespace=ns, limit=limit, task_label=task_label,
                                                           state=state)]

    @app.post("/api/insights", tags=tags, response_model=InsightOut, summary="Create or update an insight")
    def upsert_insight(body: InsightIn, ns: Namespace) -> InsightOut:
        insight = store.insights.upsert(
            body.title, body.description, namespace=ns, bot_id=body.bot_id, importance=body.importance,
            urgency=body.urgency, details=body.details, timeline=body.timeline, task_label=body.task_label,
            dedupe_key=body.dedupe_key, platform=body.platform, channel=body.channel,
        )
        return InsightOut.model_validate(insight)

    @app.post("/api/insights/search", tags=tags, response_model=list[InsightHitOut], summary="Search insights")
    def search_insights(body: InsightSearchIn, ns: Namespace) -> list[InsightHitOut]:
        return [InsightHitOut(insight=InsightOut.model_validate(h.insight), score=h.score)
                for h in store.insights.search(body.query, namespace=ns, limit=body.limit)]

    @app.get("/api/insights/{insight_id}", tags=tags, response_model=RankedInsightOut,
             summary="An insight with its rank, value score and weights")
    def get_insight(insight_id: str, ns: Namespace) -> RankedInsightOut:
        return ranked_out(store.insights.ranked(insight_id, namespace=ns))

    @app.post("/api/insights/{insight_id}/view", tags=tags, response_model=InsightOut, summary="Record a view")
    def view_insight(insight_id: str, ns: Namespace) -> InsightOut:
        return InsightOut.model_validate(store.insights.view(insight_id, namespace=ns))

    @app.post("/api/insights/{insight_id}/favorite", tags=tags, response_model=InsightOut,
              summary="Favourite (x1.5 for 7 days) or unfavourite")
    def favorite_insight(insight_id: str, body: FavoriteIn, ns: Namespace) -> InsightOut:
        return InsightOut.model_validate(store.insights.favorite(insight_id, body.on, namespace=ns))

    @app.put("/api/insights/{insight_id}/weight", tags=tags, response_model=InsightOut,
             summary="Set the user's weight multiplier")
    def weight_insight(insight_id: str, body: WeightIn, ns: Namespace) -> InsightOut:
        return InsightOut.model_validate(store.insights.set_weight(insight_id, body.multiplier, namespace=ns))

    @app.delete("/api/insights/{insight_id}", tags=tags, status_code=204, summary="Delete an insight")
    def delete_insight(insight_id: str, ns: Namespace) -> Response:
        if not store.insights.delete(insight_id, namespace=ns):
            raise _not_found("insight", insight_id, ns)
        return Response(status_code=204)


def _plain(record: Any) -> dict[str, Any]:
    from dataclasses import asdict

    from ..clock import to_iso

    out = asdict(record)
    return {k: to_iso(v) if hasattr(v, "isoformat") else v for k, v in out.items()}


# -- usage analytics --------------------------------------------------------------------------------------

def _usage_routes(app: FastAPI, store: MemoryStore) -> None:
    tags = ["usage"]

    @app.get("/api/usage/summary", tags=tags, response_model=UsageSummaryOut,
             summary="Access frequency and feedback of memories, usage events (seed 003)")
    def usage_summary(ns: Namespace, top: Annotated[int, Query(ge=0, le=100)] = 10) -> UsageSummaryOut:
        summary = store.usage.summary(namespace=ns, top=top)
        data = {k: v for k, v in summary.__dict__.items() if k != "most_accessed"}
        return UsageSummaryOut(**data, most_accessed=[MemoryOut.model_validate(m) for m in summary.most_accessed])

    @app.post("/api/usage/events", tags=tags, status_code=201, response_model=UsageEventOut,
              summary="Record a usage event (seed 000)")
    def log_event(body: UsageEventIn, ns: Namespace) -> UsageEventOut:
        event_id = store.usage.log(body.event_type, description=body.description, category=body.category,
                                   channel=body.channel, skills=body.skills, score=body.score, namespace=ns)
        for event in reversed(store.usage.events(namespace=ns, event_type=body.event_type.strip())):
            if event.id == event_id:
                return UsageEventOut.model_validate(event)
        raise NotFoundError(f"usage event {event_id!r} was deleted before it could be read back")

    @app.get("/api/usage/events", tags=tags, response_model=list[UsageEventOut], summary="Usage events, oldest first")
    def list_events(
        ns: Namespace,
        event_type: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[UsageEventOut]:
        return [UsageEventOut.model_validate(e) for e in store.usage.events(namespace=ns, event_type=event_type,
                                                                            limit=limit)]

    @app.get("/api/usage/patterns", tags=tags, response_model=list[UsagePatternOut],
             summary="Mined usage patterns, most confident first")
    def list_patterns(
        ns: Namespace,
        pattern_status: Annotated[str | None, Query(alias="status",
                                                    pattern="^(detected|proposed|dismissed|lapsed)$")] = None,
    ) -> list[UsagePatternOut]:
        return [UsagePatternOut.model_validate(p) for p in store.usage.patterns(namespace=ns, status=pattern_status)]


# -- maintenance and health -----------------------------------------------------------------------------------

def _server_routes(app: FastAPI, store: MemoryStore, scheduler: MaintenanceScheduler | None) -> None:
    from .scheduler import MaintenanceScheduler

    status_source = scheduler or MaintenanceScheduler(store, enabled=False)

    @app.get("/api/maintenance", tags=["maintenance"], response_model=MaintenanceOut,
             summary="The maintenance schedule and its last runs")
    def maintenance_status(request: Request) -> MaintenanceOut:
        details = principal_of(request).unrestricted  # step summaries count rows of every namespace
        return MaintenanceOut(**status_source.status(details=details))

    @app.post("/api/maintenance/run", tags=["maintenance"], response_model=MaintenanceOut,
              summary="Run maintenance now (a token for every namespace only)")
    def run_maintenance(principal: Annotated[Principal, Depends(require_unrestricted)]) -> MaintenanceOut:
        status_source.check(force=True)
        return MaintenanceOut(**status_source.status())

    @app.get("/api/health", tags=["server"], response_model=HealthOut, summary="Is the server up; who am I")
    def health(request: Request) -> HealthOut:
        principal = principal_of(request)
        return HealthOut(status="ok", version=_version(), principal=principal.name,
                         namespaces=list(principal.namespaces))


def _version() -> str:
    from .. import __version__

    return __version__

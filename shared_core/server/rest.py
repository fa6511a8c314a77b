"""The REST API (``openkoi-memory serve``): seed 003's local API at http://127.0.0.1:3415/api/.

Routes: memories (add, list, get, update, delete, search, feedback), namespaces (list, erase), the knowledge base
(search, documents: upload, text, ingest from the server's documents roots, read, delete),
insights (rank, upsert, search, view, favourite, weight, delete), usage analytics (events,
patterns, summary), maintenance (status, run) and health, one module each in :mod:`.routes`; the
MCP endpoint at ``/mcp``; the OpenAPI document at ``/openapi.json`` (``/docs`` renders it). Every request passes the browser guard
(its ``Host`` must name this server, writes from another site are refused) and needs a bearer token
(:mod:`.asgi`); a token limited to namespaces gets 403 for any other namespace, before anything
is looked up, so a 403 never tells whether something exists there.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from ..errors import OpenKoiError
from ..files import UPLOADS
from .asgi import MCP_METHODS, BearerAuth, BodyLimit, BrowserGuard, allowed_hosts_for
from .auth import TokenFile
from .errors import RETRY_AFTER_SECONDS, Scrubber, classify, scrubber_for
from .routes.documents import UPLOAD_PATH, knowledge_routes
from .routes.insights import insight_routes
from .routes.inspector import inspector_routes
from .routes.memories import MANAGED_KINDS, memory_routes
from .routes.status import server_routes, server_version
from .routes.usage import usage_routes

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .scheduler import MaintenanceScheduler

__all__ = ["create_app", "MANAGED_KINDS", "UPLOAD_PATH"]

logger = logging.getLogger("openkoi.server")


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
        version=server_version(),
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
        app.router.routes.append(Route("/mcp", endpoint=mcp_endpoint, methods=MCP_METHODS, include_in_schema=False))
    memory_routes(app, store, scrub)
    knowledge_routes(app, store, uploads, roots)
    insight_routes(app, store)
    usage_routes(app, store)
    server_routes(app, store, scheduler)
    inspector_routes(app, store)  # the inspector's page at / and its routes
    app.add_middleware(BodyLimit, default=cfg.max_body_bytes, limits={UPLOAD_PATH: cfg.max_upload_bytes})
    app.add_middleware(BearerAuth, tokens=tokens)
    app.add_middleware(  # outermost: a page's request is refused before the token or the body is looked at
        BrowserGuard, allowed_hosts=allowed_hosts_for(host, cfg.allowed_hosts if allowed_hosts is None else allowed_hosts),
        allowed_origins=cfg.allowed_origins if allowed_origins is None else allowed_origins, raw_paths=(UPLOAD_PATH,))
    return app


# -- errors: a bad request is 4xx with its message, a busy store 503, the rest 500; no path ever leaks ------

def _install_errors(app: FastAPI, scrub: Scrubber) -> None:
    async def library_error(request: Request, exc: Exception) -> JSONResponse:
        answer = classify(exc, scrub)
        if answer.log:
            logger.error("error on %s %s", request.method, request.url.path, exc_info=exc)
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if answer.retry else None
        return JSONResponse({"detail": answer.message}, status_code=answer.status, headers=headers)

    async def validation(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, RequestValidationError):  # registered for that class only
            return await library_error(request, exc)
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

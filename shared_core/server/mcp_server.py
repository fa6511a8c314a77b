"""The MCP server (``openkoi-memory mcp``): the memory and knowledge-base tools over the official SDK.

The tools are :mod:`shared_core.tools` (one spec and one implementation each); this module lists
them with their JSON schemas and runs calls on a worker thread. By default a client sees four that do
not overlap (:data:`~shared_core.tools.MCP_DEFAULT_TOOL_NAMES`: ``memory_save``, ``memory_search``,
``listKnowledgeBaseDocuments``, ``getFullDocumentContent``); ``tools="all"`` (``--tools all``) or a
list of names offers others. The namespace is the server's
(``--namespace``) or, unless ``--fixed-namespace``, the call's optional ``namespace`` argument.
Over streamable HTTP the bearer token of the request limits which namespaces a call may use.

>>> from shared_core import MemoryStore
>>> server = create_mcp_server(MemoryStore.open(":memory:"), namespace="user:alice")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server

from ..memories import DEFAULT_NAMESPACE, Memory, check_namespace
from ..tools import TOOL_SPECS, MemoryTools, ToolParam, tool_names
from .asgi import MCP_METHODS, PRINCIPAL_KEY, BearerAuth, BodyLimit, BrowserGuard, allowed_hosts_for
from .auth import ANONYMOUS, Principal, TokenFile
from .errors import INTERNAL, classify, scrubber_for

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["create_mcp_server", "run_stdio", "http_endpoint", "mcp_http_app", "NAMESPACE_PARAM"]

logger = logging.getLogger("openkoi.server")

NAMESPACE_PARAM = ToolParam(
    "namespace", "string", "Whose memory to use (a user, an agent, a project), e.g. 'user:alice'; leave out "
    "for the server's namespace.", default=None, nullable=True)

# the server's instructions, a line per kind of tool, naming only the tools it offers
_GUIDE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Before answering, search memory with key nouns and synonyms: {}.",
     ("memory_search", "memory_query", "memory_recall")),
    ("After a result helped, call memory_reinforce with its [id:...].", ("memory_reinforce",)),
    ("Demote or update what is wrong: {}.", ("memory_demote", "memory_update")),
    ("Store new facts, decisions and preferences with {}; a new value of a stored fact replaces it.",
     ("memory_save", "memory_store")),
    ("The user's uploaded documents: {}.",
     ("listKnowledgeBaseDocuments", "searchKnowledgeBase", "getFullDocumentContent")),
)


def _instructions(chosen: Sequence[str]) -> str:
    lines = ["Long-term memory that survives sessions (openkoi-memory)."]
    for line, names in _GUIDE:
        offered = [name for name in names if name in chosen]
        if offered:
            lines.append(line.format(" or ".join(offered)))
    return "\n".join(lines)


def create_mcp_server(
    store: MemoryStore,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    namespace_argument: bool = True,
    tools: str | Sequence[str] | None = None,
    on_save: Callable[[Memory], None] | None = None,
    name: str = "openkoi-memory",
) -> Server:
    """An MCP server (the SDK's low-level ``Server``) offering ``tools``.

    ``tools``: ``None`` or ``"default"`` for :data:`~shared_core.tools.MCP_DEFAULT_TOOL_NAMES`,
    ``"all"`` for all eleven, or tool names (a list, or comma-separated). ``namespace``: the
    server's namespace. ``namespace_argument``: whether each tool also takes an optional
    ``namespace`` argument (per-call namespaces); when false, the schemas do not mention it.
    ``on_save(memory)``: the ``memory_save`` hook (a workspace's daily log).
    """
    check_namespace(namespace)
    chosen = tool_names(tools)
    bound = MemoryTools(store, namespace, on_save=on_save)
    extra = (NAMESPACE_PARAM,) if namespace_argument else ()
    listing = [
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema(extra),
            annotations=types.ToolAnnotations(
                read_only_hint=spec.read_only, destructive_hint=False, idempotent_hint=spec.read_only,
                open_world_hint=False),
        )
        for spec in (TOOL_SPECS[n] for n in chosen)
    ]
    schemas = {tool.name: tool.input_schema for tool in listing}
    scrub = scrubber_for(store)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in schemas:
            more = " (the server offers it when started with --tools all, or with it named)" \
                if params.name in TOOL_SPECS else ""
            return _error(f"there is no tool {params.name!r}{more}; the tools are {', '.join(schemas)}")
        arguments = dict(params.arguments or {})
        target = namespace
        if namespace_argument:
            given = arguments.pop("namespace", None)
            if given is not None:
                if not isinstance(given, str) or not given.strip():
                    return _error("namespace must be a non-empty string such as 'user:alice'")
                try:
                    check_namespace(given)
                    given.encode("utf-8")
                except (ValueError, UnicodeError):
                    return _error("namespace must be a non-empty string such as 'user:alice' (valid Unicode, "
                                  "no NUL characters)")
                target = given
        principal = _principal(ctx)
        if not principal.allows(target):
            return _error(f"this token may not use the namespace {target!r}")
        try:
            text = await anyio.to_thread.run_sync(bound.for_namespace(target).call, params.name, arguments)
        except Exception as exc:  # never a traceback or a server path to the client; the log has them
            answer = classify(exc, scrub)
            if answer.log:
                logger.error("MCP tool %s failed", params.name, exc_info=exc)
                known = "" if answer.message == INTERNAL else f" ({answer.message})"
                return _error(f"{params.name} failed on the server{known}; see its log")
            if answer.retry:
                return _error(f"the memory is busy, try again in a moment: {answer.message}")
            return _error(answer.message)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=False)

    return Server(
        name,
        version=_version(),
        instructions=_instructions(chosen),
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _principal(ctx: Any) -> Principal:
    """The request's token over HTTP; stdio is the local user's own process (every namespace)."""
    request = getattr(ctx, "request", None)
    if request is None:
        return ANONYMOUS
    principal = request.scope.get("state", {}).get(PRINCIPAL_KEY)
    return principal if isinstance(principal, Principal) else Principal("none", ())


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"Error: {message}")], is_error=True)


def _version() -> str:
    from .. import __version__

    return __version__


async def run_stdio(server: Server) -> None:
    """Serve over stdin/stdout until the client closes them (what Claude Desktop and IDEs launch)."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_endpoint(server: Server) -> tuple[Any, Any]:
    """``(asgi_app, session_manager)`` serving ``server`` over streamable HTTP (stateless, JSON responses).

    Run ``session_manager.run()`` in the application's lifespan, and put
    :class:`~.asgi.BrowserGuard` in front (``create_app`` and :func:`mcp_http_app` do): it checks
    ``Host`` and ``Origin`` for every route alike, so the SDK's own DNS-rebinding check is off here
    (it would refuse the names ``server.allowed_hosts`` adds).
    """
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True, security_settings=security)
    return StreamableHTTPASGIApp(manager), manager


def mcp_http_app(server: Server, *, tokens: TokenFile | None, host: str = "127.0.0.1",
                 max_body_bytes: int = 2**20, allowed_hosts: Sequence[str] = (),
                 allowed_origins: Sequence[str] = ()) -> Any:
    """An ASGI app with only the MCP endpoint (``/mcp``), behind the browser guard, bearer tokens and a body limit.

    ``host`` is the bound address; see :func:`~.asgi.allowed_hosts_for` for ``allowed_hosts``.
    """
    import contextlib

    from starlette.applications import Starlette
    from starlette.routing import Route

    endpoint, manager = http_endpoint(server)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with manager.run():
            yield

    app = Starlette(routes=[Route("/mcp", endpoint=endpoint, methods=MCP_METHODS)], lifespan=lifespan)
    return BrowserGuard(BearerAuth(BodyLimit(app, max_body_bytes), tokens),
                        allowed_hosts=allowed_hosts_for(host, allowed_hosts), allowed_origins=allowed_origins)

"""``openkoi-memory serve`` (REST API + MCP over HTTP), ``openkoi-memory mcp`` and ``openkoi-memory token``.

The server modules need the ``server`` extra (mcp, fastapi, uvicorn); they are imported only when
one of these commands runs, so the rest of the CLI works without it.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from ..errors import ConfigError
from ..memories import DEFAULT_NAMESPACE
from ..server.asgi import is_loopback
from .support import friendly_errors, open_store

__all__ = ["serve", "mcp", "token", "ui"]


def _need_server_extra() -> None:
    try:
        import fastapi  # noqa: F401
        import mcp  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(
            f"the server needs the 'server' extra ({exc.name} is missing): pip install mcp fastapi uvicorn (the 'server' extra: pip install '.[server]' in a clone)"
        ) from None


def _tokens(path: str | None, no_auth: bool, host: str) -> Any:
    """The token file (created with a first token if missing), or None for --no-auth on loopback."""
    from ..server.auth import TokenFile

    if no_auth:
        if not is_loopback(host):
            raise click.ClickException(
                f"refusing to serve {host} without tokens: anyone who can reach it could read and change every "
                "memory. Drop --no-auth (tokens are created on first run), or bind 127.0.0.1")
        click.echo("warning: serving without authentication (loopback only)", err=True)
        return None
    tokens, created = TokenFile.load_or_create(path or None)
    if created is not None:
        click.echo(f"created {tokens.path} (mode 600) with a token for every namespace:\n  {created}\n"
                   f"send it as: Authorization: Bearer {created}", err=True)
    if not tokens.entries:
        if not is_loopback(host):
            raise click.ClickException(f"{tokens.path} holds no tokens; refusing to serve {host} without one "
                                       "(add one: openkoi-memory token add NAME)")
        click.echo(f"warning: {tokens.path} holds no tokens, so every request will be refused", err=True)
    return tokens


def _checked_hosts(names: tuple[str, ...], tokens: Any) -> tuple[str, ...]:
    """The extra Host names; '*' (any name) is refused without tokens, where it would undo the guard."""
    if tokens is None and any(name.strip() == "*" for name in names):
        raise click.ClickException(
            "refusing to answer to any host name without tokens: a web page could then read every memory through "
            "a DNS name it controls (DNS rebinding). Name the hosts (--allow-host mybox.local) or drop --no-auth")
    return names


def _setup_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


_host = click.option("--host", default=None, help="Address to bind (default server.host: 127.0.0.1).")
_port = click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port (default server.port: 3415).")
_tokens_file = click.option("--tokens-file", type=click.Path(dir_okay=False), default=None, envvar="OPENKOI_TOKENS",
                            help="The tokens file (default ~/.openkoi/tokens.toml; env OPENKOI_TOKENS).")
_no_auth = click.option("--no-auth", is_flag=True, help="Serve without tokens (refused unless bound to loopback).")
_allow_host = click.option(
    "--allow-host", "allow_hosts", multiple=True, metavar="NAME",
    help="Also answer to this Host name (repeatable; added to server.allowed_hosts; '*' for any).")
_allow_origin = click.option(
    "--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
    help="A web app allowed to write through a browser, e.g. https://app.example (repeatable).")
def _tool_choice(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    """``--tools``: 'default', 'all' or comma-separated names, checked before the server starts."""
    from ..tools import tool_names

    if value is None:
        return None
    try:
        return tool_names(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


_TOOLS_HELP = ("The MCP tools offered: 'default' (memory_save, memory_search, listKnowledgeBaseDocuments, "
               "getFullDocumentContent), 'all' (all eleven), or comma-separated names.")
_log_level = click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info",
                          show_default=True)


@click.command()
@_host
@_port
@_tokens_file
@_no_auth
@click.option("--no-mcp", is_flag=True, help="Do not serve the MCP endpoint at /mcp.")
@click.option("--mcp-tools", default=None, metavar="TOOLS", callback=_tool_choice, help=_TOOLS_HELP)
@click.option("--no-maintenance", is_flag=True, help="Do not run maintenance on its schedule.")
@_allow_host
@_allow_origin
@_log_level
@click.pass_context
@friendly_errors
def serve(ctx: click.Context, host: str | None, port: int | None, tokens_file: str | None, no_auth: bool,
          no_mcp: bool, mcp_tools: tuple[str, ...] | None, no_maintenance: bool, allow_hosts: tuple[str, ...],
          allow_origins: tuple[str, ...], log_level: str) -> None:
    """Serve the REST API (OpenLoomi: http://127.0.0.1:3415/api/) and MCP at /mcp, with bearer tokens."""
    _need_server_extra()
    import uvicorn

    from ..server.rest import create_app
    from ..server.scheduler import MaintenanceScheduler
    from ..store import MemoryStore

    _setup_logging(log_level)
    store = open_store(ctx, one_shot=False)
    cfg = store.config.server
    host = host or cfg.host
    port = cfg.port if port is None else port
    tokens = _tokens(tokens_file or cfg.tokens_file, no_auth, host)
    scheduler = None
    if cfg.maintenance and not no_maintenance:
        # its own connection: a long run holds that one, and requests go on on the server's
        runner = store if store.path == ":memory:" else MemoryStore.open(store.path, config=store.config)
        if runner is not store:
            ctx.call_on_close(runner.close)
        scheduler = MaintenanceScheduler(runner)
    app = create_app(store, tokens=tokens, scheduler=scheduler, mcp=not no_mcp, mcp_tools=mcp_tools, host=host,
                     allowed_hosts=_checked_hosts(cfg.allowed_hosts + allow_hosts, tokens),
                     allowed_origins=cfg.allowed_origins + allow_origins)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"openkoi-memory serving {store.path} on http://{shown}:{port}/api/"
               + ("" if no_mcp else f" (MCP: http://{shown}:{port}/mcp)"), err=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, lifespan="on", server_header=False)


@click.command()
@click.option("-n", "--namespace", default=DEFAULT_NAMESPACE, show_default=True,
              help="The server's namespace (a user, an agent, a project).")
@click.option("--fixed-namespace", is_flag=True,
              help="Tools do not take a namespace argument: every call uses --namespace.")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio (what Claude Desktop and IDEs launch) or streamable HTTP at /mcp.")
@click.option("--tools", default=None, metavar="TOOLS", callback=_tool_choice, help=_TOOLS_HELP)
@_host
@_port
@_tokens_file
@_no_auth
@_allow_host
@_allow_origin
@_log_level
@click.pass_context
@friendly_errors
def mcp(ctx: click.Context, namespace: str, fixed_namespace: bool, transport: str, tools: tuple[str, ...] | None,
        host: str | None, port: int | None, tokens_file: str | None, no_auth: bool, allow_hosts: tuple[str, ...],
        allow_origins: tuple[str, ...], log_level: str) -> None:
    """Serve the memory and knowledge-base tools over MCP (stdio by default; --tools all for every tool)."""
    _need_server_extra()
    import anyio

    from ..server.mcp_server import create_mcp_server, mcp_http_app, run_stdio

    _setup_logging("warning" if transport == "stdio" and log_level == "info" else log_level)
    store = open_store(ctx, one_shot=False)
    server = create_mcp_server(store, namespace=namespace, namespace_argument=not fixed_namespace, tools=tools)
    if transport == "stdio":
        anyio.run(run_stdio, server)
        return
    import uvicorn

    cfg = store.config.server
    host = host or cfg.host
    port = cfg.port if port is None else port
    tokens = _tokens(tokens_file or cfg.tokens_file, no_auth, host)
    app = mcp_http_app(server, tokens=tokens, host=host, max_body_bytes=cfg.max_body_bytes,
                       allowed_hosts=_checked_hosts(cfg.allowed_hosts + allow_hosts, tokens),
                       allowed_origins=cfg.allowed_origins + allow_origins)
    click.echo(f"openkoi-memory MCP on http://{host}:{port}/mcp", err=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, lifespan="on", server_header=False)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but a loopback address lets other machines reach the page.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port (default: a free one).")
@click.option("-n", "--namespace", "namespaces", multiple=True, metavar="NAMESPACE",
              help="Limit the page's token to this namespace (repeatable; exact, or a prefix ending in '*'). "
                   "Default: every namespace.")
@_tokens_file
@click.option("--open", "open_browser", is_flag=True, help="Also open the page in the default browser.")
@_allow_host
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning",
              show_default=True)
@click.pass_context
@friendly_errors
def ui(ctx: click.Context, host: str, port: int, namespaces: tuple[str, ...], tokens_file: str | None,
       open_browser: bool, allow_hosts: tuple[str, ...], log_level: str) -> None:
    """Open the memory inspector: see, search and fix what the agent remembers, in a browser.

    Serves the page and the REST API on HOST:PORT and prints its URL, which carries a token made
    for this run (in the URL's fragment, so it reaches no log). The tokens file's tokens work too.
    """
    _need_server_extra()
    from ..server.ui import SessionTokens, bind, page_url, serve_ui

    _setup_logging(log_level)
    store = open_store(ctx, one_shot=False)
    try:
        tokens = SessionTokens.around(tokens_file, namespaces)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if not is_loopback(host):
        click.echo(f"warning: serving on {host}: other machines can reach the page, and the token travels "
                   "unencrypted over plain HTTP", err=True)
    sock = bind(host, port)
    first = next((n for n in namespaces if not n.endswith("*")), None)
    url = page_url(host, sock.getsockname()[1], tokens.session_token, first)
    click.echo(f"openkoi-memory inspector for {store.path} (Ctrl-C to stop); open:", err=True)
    click.echo(url)
    sys.stdout.flush()
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    serve_ui(store, sock, tokens, host=host, allowed_hosts=_checked_hosts(allow_hosts, tokens), log_level=log_level)


@click.group()
def token() -> None:
    """Manage the server's bearer tokens (the tokens file, mode 600)."""


def _token_file(path: str | None) -> Any:
    from ..server.auth import TokenFile

    return TokenFile.load_or_create(path or None)[0]


@token.command("add")
@click.argument("name")
@click.option("-n", "--namespace", "namespaces", multiple=True,
              help="A namespace it may use (repeatable): exact, or a prefix ending in '*'. Default: '*' (all).")
@_tokens_file
@friendly_errors
def token_add(name: str, namespaces: tuple[str, ...], tokens_file: str | None) -> None:
    """Issue a token named NAME and print it (only its SHA-256 is stored)."""
    tokens = _token_file(tokens_file)
    try:
        secret = tokens.add(name, namespaces or ("*",))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(secret)
    click.echo(f"added {name!r} to {tokens.path} for {', '.join(namespaces or ('*',))}; "
               "the token is shown only now", err=True)


@token.command("list")
@_tokens_file
@friendly_errors
def token_list(tokens_file: str | None) -> None:
    """The tokens' names and namespaces (never the tokens)."""
    tokens = _token_file(tokens_file)
    for entry in tokens.entries:
        click.echo(f"{entry.name}\t{', '.join(entry.namespaces)}")


@token.command("revoke")
@click.argument("name")
@_tokens_file
@friendly_errors
def token_revoke(name: str, tokens_file: str | None) -> None:
    """Remove the token named NAME (running servers notice at their next request)."""
    tokens = _token_file(tokens_file)
    if not tokens.revoke(name):
        raise click.ClickException(f"there is no token named {name!r} in {tokens.path}")
    click.echo(f"revoked {name!r}", err=True)

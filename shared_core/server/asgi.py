"""Plain ASGI middleware shared by the REST API and the MCP endpoint: browser guard, bearer tokens, body limits.

All answer with JSON ``{"detail": ...}`` before the application sees the request, so no route
(not even ``/openapi.json``) is reachable by a web page through a hostile DNS name or without a
token, and no handler ever buffers more than the limit.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Collection, Iterable, MutableMapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from .auth import ANONYMOUS, Principal, TokenFile

__all__ = ["BearerAuth", "BodyLimit", "BrowserGuard", "MCP_METHODS", "PRINCIPAL_KEY", "PUBLIC_PATHS_ATTRIBUTE",
           "allowed_hosts_for",
           "is_loopback", "send_json"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PRINCIPAL_KEY = "openkoi_principal"  # in scope["state"]: the request's Principal
# app.state.<this>: paths a GET or HEAD may fetch without a token (the inspector's page, which holds no data)
PUBLIC_PATHS_ATTRIBUTE = "public_paths"
# the HTTP methods of MCP's streamable transport at /mcp (the last one ends a session)
MCP_METHODS = tuple("GET POST DELETE".split())


async def send_json(send: Send, status: int, body: dict[str, Any],
                    headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode("utf-8")
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()), *headers]})
    await send({"type": "http.response.body", "body": payload})


class BearerAuth:
    """Every HTTP request needs ``Authorization: Bearer <token>`` from the tokens file, else 401.

    ``tokens=None`` lets every request through as :data:`ANONYMOUS` (``--no-auth``, loopback only).
    A GET or HEAD of a path in the application's ``state.public_paths`` needs no token (and has no
    principal): the inspector's page, whose data comes through the API with the user's token.
    """

    def __init__(self, app: App, tokens: TokenFile | None) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        principal: Principal | None
        if self.tokens is None:
            principal = ANONYMOUS
        elif _public(scope):
            await self.app(scope, receive, send)
            return
        else:
            principal = self.tokens.authenticate(_bearer(scope))
            if principal is None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await send_json(send, 401, {"detail": "a valid bearer token is required: send the header "
                                            "'Authorization: Bearer <token>' (see docs/server.md)"},
                                [(b"www-authenticate", b'Bearer realm="openkoi-memory"')])
                return
        scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)


def _public(scope: Scope) -> bool:
    """A GET or HEAD of a path the application lists in ``app.state.public_paths``."""
    if scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD"):
        return False
    state = getattr(scope.get("app"), "state", None)
    return scope.get("path") in getattr(state, PUBLIC_PATHS_ATTRIBUTE, ())


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


class BodyLimit:
    """Refuse request bodies over the limit with 413, before the application reads them.

    ``limits`` maps path prefixes to their own limit (document uploads are larger than JSON);
    the longest matching prefix wins, else ``default``. A declared ``Content-Length`` over the
    limit is refused at once; a body streamed without one is read up to the limit and then
    handed on whole.
    """

    def __init__(self, app: App, default: int, limits: dict[str, int] | None = None) -> None:
        self.app = app
        self.default = default
        self.limits = sorted((limits or {}).items(), key=lambda item: -len(item[0]))

    def limit_for(self, path: str) -> int:
        for prefix, limit in self.limits:
            if path.startswith(prefix):
                return limit
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope.get("path", ""))
        declared = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await send_json(send, 400, {"detail": "the Content-Length header is not a number"})
                    return
        if declared is not None and declared > limit:
            await _too_large(send, limit)
            return
        if declared is not None or scope.get("method") in _NO_BODY_METHODS:
            await self.app(scope, _counting(receive, limit), send)  # trust, but still count
            return
        chunks, size = [], 0
        while True:  # no length given: read it all (up to the limit) before the app starts
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await _too_large(send, limit)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


def _counting(receive: Receive, limit: int) -> Receive:
    """A body longer than its Content-Length said is cut at the limit (the server sees a truncated body)."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                return {"type": "http.disconnect"}
        return message

    return wrapped


async def _too_large(send: Send, limit: int) -> None:
    await send_json(send, 413, {"detail": f"the request body is larger than this server accepts ({limit:,} bytes); "
                                "send less (the limits are server.max_body_bytes and server.max_upload_bytes)"})


# -- the browser guard: what a web page could make a browser send to a local server -----------------------

LOOPBACK_NAMES = frozenset(("localhost", "127.0.0.1", "::1"))
_SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS", "TRACE"))
_NO_BODY_METHODS = frozenset("GET HEAD DELETE OPTIONS".split())  # requests that need not declare a length
# the body types a page may send to any site without the browser asking the server first (CORS "simple")
_SIMPLE_TYPES = frozenset(("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"))


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address (127.0.0.0/8, ::1)."""
    name = _name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _name(host: str) -> str:
    """A host name as compared here: lower case, no brackets, no final dot."""
    return host.strip().strip("[]").rstrip(".").lower()


def allowed_hosts_for(bind: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The names a request may address a server bound to ``bind`` by (its ``Host`` header); None: any.

    A loopback address answers to the loopback names (``localhost``, ``127.0.0.1``, ``::1``) and
    itself; another address to itself; a wildcard (``0.0.0.0``, ``::``) to any name, unless
    ``extra`` names some. ``extra`` (``server.allowed_hosts``, ``--allow-host``) adds names;
    ``"*"`` turns the check off.
    """
    names = {_name(h) for h in extra if h.strip()}
    if "*" in names:
        return None
    bound = _name(bind)
    if is_loopback(bound):
        names |= LOOPBACK_NAMES | {bound}
    elif bound in ("", "0.0.0.0", "::"):
        if not names:
            return None
        names |= LOOPBACK_NAMES  # the machine's own clients still reach it by its loopback names
    else:
        names.add(bound)
    return frozenset(names)


def _split_host(value: str) -> str:
    """The name part of a ``Host`` header (``[::1]:3415`` -> ``::1``, ``localhost:3415`` -> ``localhost``)."""
    value = value.strip()
    if value.startswith("["):
        return _name(value[: value.find("]") + 1] if "]" in value else value)
    if value.count(":") == 1:
        return _name(value.split(":", 1)[0])
    return _name(value)


class BrowserGuard:
    """Refuse what a web page could make the user's browser send to this server.

    * **Host** (every request): a name this server is not bound to, or not allowed by
      ``allowed_hosts``, is refused with 421, so a page cannot reach a local server through a DNS
      name it controls (DNS rebinding). ``allowed_hosts=None`` lets any name through.
    * **Origin** (every request but GET, HEAD, OPTIONS): an ``Origin`` other than this server's own
      (the request's ``Host``) or one in ``allowed_origins`` is refused with 403, as is
      ``Sec-Fetch-Site: cross-site``/``same-site`` without an ``Origin``; clients that are not
      browsers send neither, and pass.
    * **Content-Type** (those requests, with a body): JSON routes take ``application/json`` only;
      the paths in ``raw_paths`` (uploads) any type but the three a page may send cross-site
      without asking (``text/plain``, form data, multipart) and none at all; else 415.
    """

    def __init__(self, app: App, *, allowed_hosts: Collection[str] | None,
                 allowed_origins: Iterable[str] = (), raw_paths: Collection[str] = ()) -> None:
        self.app = app
        self.allowed_hosts = None if allowed_hosts is None else frozenset(_name(h) for h in allowed_hosts)
        self.allowed_origins = frozenset(o.strip().rstrip("/").lower() for o in allowed_origins)
        self.raw_paths = frozenset(raw_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send_json(send, *refusal)
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, dict[str, Any]] | None:
        """``(status, body)`` when the request must be refused, else None."""
        headers: dict[bytes, list[str]] = {}
        for name, value in scope.get("headers", ()):
            headers.setdefault(name.lower(), []).append(value.decode("latin-1"))
        for name in (b"host", b"origin", b"content-type"):
            if len(headers.get(name, ())) > 1:
                return 400, {"detail": f"more than one {name.decode()} header; send one"}
        host = headers.get(b"host", [""])[0]
        if self.allowed_hosts is not None and _split_host(host) not in self.allowed_hosts:
            shown = ", ".join(sorted(self.allowed_hosts))
            return 421, {"detail": f"this server does not answer to the host name {host[:100]!r} (it answers to: "
                                   f"{shown}); a name that reaches it otherwise goes in server.allowed_hosts or "
                                   "--allow-host (docs/server.md)"}
        if scope["type"] != "http" or scope.get("method", "GET") in _SAFE_METHODS:
            return None
        origin = headers.get(b"origin", [None])[0]
        if origin is not None:
            if not self._same_or_allowed(origin, host):
                return 403, {"detail": f"cross-site request refused: a page at {origin[:100]!r} may not change "
                                       "this memory; a web app that should goes in server.allowed_origins or "
                                       "--allow-origin (docs/server.md)"}
        elif headers.get(b"sec-fetch-site", [""])[0].strip().lower() in ("cross-site", "same-site"):
            return 403, {"detail": "cross-site request refused: a page on another site may not change this memory"}
        return self._content_type_refusal(scope, headers)

    def _same_or_allowed(self, origin: str, host: str) -> bool:
        origin = origin.strip()
        if origin.rstrip("/").lower() in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and bool(parts.netloc) and parts.netloc.lower() == host.strip().lower()

    def _content_type_refusal(self, scope: Scope, headers: dict[bytes, list[str]]) -> tuple[int, dict[str, Any]] | None:
        length = headers.get(b"content-length", ["0"])[0].strip()
        has_body = b"transfer-encoding" in headers or (length not in ("", "0"))
        if not has_body:
            return None
        media = headers.get(b"content-type", [""])[0].split(";", 1)[0].strip().lower()
        if scope.get("path", "") in self.raw_paths:
            if not media or media in _SIMPLE_TYPES:
                return 415, {"detail": f"an upload needs a Content-Type that is not {media or 'missing'}: send the "
                                       "file's bytes with 'Content-Type: application/octet-stream'"}
            return None
        if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
            return 415, {"detail": f"the body must be JSON sent with 'Content-Type: application/json', not "
                                   f"{media[:100] or 'no content type'}"}
        return None

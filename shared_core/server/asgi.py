"""Plain ASGI middleware shared by the REST API and the MCP endpoint: bearer tokens and body limits.

Both answer with JSON ``{"detail": ...}`` before the application sees the request, so no route
(not even ``/openapi.json``) is reachable without a token, and no handler ever buffers more
than the limit.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .auth import ANONYMOUS, TokenFile

__all__ = ["BearerAuth", "BodyLimit", "PRINCIPAL_KEY", "send_json"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PRINCIPAL_KEY = "openkoi_principal"  # in scope["state"]: the request's Principal


async def send_json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode("utf-8")
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()), *headers]})
    await send({"type": "http.response.body", "body": payload})


class BearerAuth:
    """Every HTTP request needs ``Authorization: Bearer <token>`` from the tokens file, else 401.

    ``tokens=None`` lets every request through as :data:`ANONYMOUS` (``--no-auth``, loopback only).
    """

    def __init__(self, app: App, tokens: TokenFile | None) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.tokens is None:
            principal = ANONYMOUS
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
        if declared is not None or scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS"):
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

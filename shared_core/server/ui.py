"""``openkoi-memory ui``: the REST API and the inspector's page on a local port, opened with a token of its own.

The token is made for this run only (never written anywhere) and travels in the URL's fragment,
which browsers do not send to the server, so it shows up in no log; the page moves it to the tab's
session storage and out of the address bar. The tokens file's tokens work too.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from .auth import Principal, TokenFile, new_token

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["SessionTokens", "page_url", "bind", "serve_ui"]


@dataclass
class SessionTokens(TokenFile):
    """The tokens of a file (if any) plus one made for this run, limited to ``namespaces``."""

    session_token: str = field(default_factory=new_token, repr=False)
    namespaces: tuple[str, ...] = ("*",)

    def authenticate(self, token: str | None) -> Principal | None:
        if token and token == self.session_token:
            return Principal("inspector", self.namespaces)
        return super().authenticate(token)

    @classmethod
    def around(cls, tokens_file: str | None, namespaces: Sequence[str]) -> SessionTokens:
        """The session token beside the tokens file's entries (none if the file does not exist)."""
        patterns = tuple(namespaces) or ("*",)
        from .auth import _check_pattern, default_tokens_path

        for pattern in patterns:
            _check_pattern(pattern)
        path = Path(tokens_file).expanduser() if tokens_file else default_tokens_path()
        if path.exists():
            loaded = TokenFile.load(path)
            return cls(loaded.path, loaded.entries, loaded._stamp, namespaces=patterns)
        return cls(path, [], None, namespaces=patterns)  # no file: only the session token


def page_url(host: str, port: int, token: str, namespace: str | None = None) -> str:
    """The page's address, with the token (and the namespace to show first) in the fragment."""
    shown = f"[{host}]" if ":" in host else host
    fragment = f"token={quote(token, safe='')}" + (f"&ns={quote(namespace, safe='')}" if namespace else "")
    return f"http://{shown}:{port}/#{fragment}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), so the URL can be printed before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve_ui(store: MemoryStore, sock: socket.socket, tokens: SessionTokens, *, host: str,
             allowed_hosts: Sequence[str] = (), log_level: str = "warning") -> None:
    """Serve the REST API and the page on ``sock`` until interrupted (no MCP, no maintenance schedule)."""
    import uvicorn

    from .rest import create_app

    app = create_app(store, tokens=tokens, mcp=False, host=host, allowed_hosts=allowed_hosts)
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])

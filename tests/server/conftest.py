"""Fixtures for the server tests: a file store, a tokens file with an all-namespaces token, an API client."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the server tests need the 'server' extra")
pytest.importorskip("mcp", reason="the server tests need the 'server' extra")

from starlette.testclient import TestClient  # noqa: E402

from shared_core import MemoryStore  # noqa: E402
from shared_core.server.auth import TokenFile  # noqa: E402
from shared_core.server.rest import create_app  # noqa: E402

BASE_URL = "http://127.0.0.1:3415"  # what a client of a server on its default address sends as Host


@pytest.fixture
def base_url() -> str:
    """The URL test clients use: its Host names the loopback address the app is built for."""
    return BASE_URL


@pytest.fixture
def server_store(tmp_path, clock, request):
    """The served memory; a test parametrizes it indirectly with a config to open it with."""
    with MemoryStore.open(tmp_path / "server.db", clock=clock, config=getattr(request, "param", None)) as store:
        yield store


@pytest.fixture
def tokens(tmp_path):
    """``(TokenFile, the default token)``: created the way the first ``serve`` creates it."""
    return TokenFile.load_or_create(tmp_path / "config" / "tokens.toml")


@pytest.fixture
def token(tokens):
    return tokens[1]


@pytest.fixture
def app(server_store, tokens, tmp_path):
    return create_app(server_store, tokens=tokens[0], mcp=False, upload_dir=tmp_path / "uploads")


@pytest.fixture
def client(app, token):
    with TestClient(app, base_url=BASE_URL, headers={"Authorization": f"Bearer {token}"}) as c:
        yield c


@pytest.fixture
def anonymous(app):
    with TestClient(app, base_url=BASE_URL) as c:
        yield c

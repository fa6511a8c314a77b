"""A local stand-in for the embedding services: one HTTP server in a thread that speaks the OpenAI
embeddings API (``POST /v1/embeddings``) and Ollama's (``POST /api/embed``).

Vectors are the hashing embedder's, cut to each model's dimensions, so they are deterministic and
texts sharing words are near. ``fail`` queues answers (a status, or ``"drop"`` to close the
connection) for the next requests; ``fail_from`` makes every request from the n-th on fail.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from shared_core.embed import HashingEmbedder

_HASHING = HashingEmbedder(dims=3072)
# a little meaning, so that the docs' examples find what they promise: each of these words also
# stands for its concept
_CONCEPTS = {"car": "vehicle", "tesla": "vehicle", "drives": "vehicle", "vegetarian": "diet", "diet": "diet",
             "daughter": "children", "children": "children", "mia": "children"}
_WORD = re.compile(r"\w+")


def _with_concepts(text: str) -> str:
    concepts = [_CONCEPTS[w] for w in _WORD.findall(text.lower()) if w in _CONCEPTS]
    return " ".join([text, *concepts * 3]) if concepts else text


@dataclass
class Request:
    path: str
    model: str
    inputs: list[str]
    authorization: str | None


@dataclass
class FakeEmbeddingServer:
    """The server's behaviour, and what it was asked."""

    dims: dict[str, int] = field(default_factory=lambda: {
        "text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "nomic-embed-text": 768, "all-minilm": 384})
    other_dims: int = 48  # any other model
    key: str | None = None  # when set, the OpenAI route wants "Bearer <key>"
    ollama_models: set[str] | None = None  # None: Ollama has every model
    fail: deque[Any] = field(default_factory=deque)  # per request: status int, (status, headers) or "drop"
    fail_from: int | None = None  # every request from this number on (1-based) answers 500
    requests: list[Request] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)  # set when a request comes in
    gate: threading.Event | None = None  # when set up, requests wait for it before they are answered
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def vectors(self, model: str, texts: list[str]) -> list[list[float]]:
        dims = self.dims.get(model.removesuffix(":latest"), self.other_dims)
        matrix = _HASHING.embed([_with_concepts(t) for t in texts])[:, :dims].astype(np.float64)
        return [[round(float(x), 6) for x in row] for row in matrix]

    @property
    def batch_sizes(self) -> list[int]:
        return [len(r.inputs) for r in self.requests]


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeEmbeddings/1"
    fake: FakeEmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        fake = self.fake
        with fake._lock:
            fake.requests.append(Request(self.path, body.get("model", ""), list(body.get("input", [])),
                                         self.headers.get("Authorization")))
            number = len(fake.requests)
            scripted = fake.fail.popleft() if fake.fail else None
        fake.arrived.set()
        if fake.gate is not None and not fake.gate.wait(timeout=120):
            return self._answer(504, {"error": "the test never opened the gate"})
        if scripted is None and fake.fail_from is not None and number >= fake.fail_from:
            scripted = 500
        if scripted == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if scripted is not None:
            status, headers = scripted if isinstance(scripted, tuple) else (scripted, {})
            return self._answer(status, {"error": {"message": f"scripted failure {status}"}}, headers)
        if self.path == "/v1/embeddings":
            return self._openai(body)
        if self.path == "/api/embed":
            return self._ollama(body)
        self._answer(404, {"error": "404 page not found"})

    def _openai(self, body: dict[str, Any]) -> None:
        fake = self.fake
        if fake.key is not None and self.headers.get("Authorization") != f"Bearer {fake.key}":
            return self._answer(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                                "code": "invalid_api_key"}})
        vectors = fake.vectors(body["model"], body["input"])
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        data.reverse()  # the index says where each belongs: clients must not rely on the order
        self._answer(200, {"object": "list", "data": data, "model": body["model"],
                           "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _ollama(self, body: dict[str, Any]) -> None:
        fake = self.fake
        model = body["model"]
        if fake.ollama_models is not None and model not in fake.ollama_models:
            return self._answer(404, {"error": f'model "{model}" not found, try pulling it first'})
        self._answer(200, {"model": model, "embeddings": fake.vectors(model, body["input"])})

    def _answer(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def start(fake: FakeEmbeddingServer) -> ThreadingHTTPServer:
    """Serve ``fake`` on a free port of 127.0.0.1 (``fake.url`` is its root) until ``shutdown()``."""
    handler = type("Handler", (_Handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, name="fake-embeddings", daemon=True).start()
    return server


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

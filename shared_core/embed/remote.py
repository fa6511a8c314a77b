"""Embedders over HTTP: the OpenAI embeddings API (and every server that speaks it) and Ollama.

``openai/<model>`` posts to ``<base URL>/embeddings``: OpenAI itself by default, or any
OpenAI-compatible server (Ollama's ``/v1``, LM Studio, vLLM, llama.cpp) when a base URL is set
(``[models] embedder_url`` or ``$OPENAI_BASE_URL``). ``ollama/<model>`` posts to Ollama's own
``/api/embed`` (``$OLLAMA_HOST``, default ``http://localhost:11434``).

Texts go in batches; a batch that meets a rate limit, a server error or a dropped connection is
retried with backoff (:mod:`.http`). :meth:`embed` returns only once every batch has its vectors,
so a failure part way through leaves the caller with an exception and nothing to write.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ..errors import ConfigError
from .base import EmbedderProfile, EmbeddingError, EmbeddingServiceError
from .http import HttpError, JsonClient, RetryPolicy

__all__ = ["OpenAIEmbedder", "OllamaEmbedder", "KNOWN_DIMS", "OPENAI_URL", "OLLAMA_URL"]

OPENAI_URL = "https://api.openai.com/v1"
OLLAMA_URL = "http://localhost:11434"
_PROBE = "openkoi dimension probe"

# dimensions of well-known models, so that opening a memory needs no request; others are learned
# from their first answer (and a memory records them when it is created)
KNOWN_DIMS: dict[str, int] = {
    "openai/text-embedding-3-small": 1536,
    "openai/text-embedding-3-large": 3072,
    "openai/text-embedding-ada-002": 1536,
    "ollama/nomic-embed-text": 768,
    "ollama/mxbai-embed-large": 1024,
    "ollama/all-minilm": 384,
    "ollama/bge-m3": 1024,
}


class _HttpEmbedder:
    """What both services share: batching, the dimensions (known, given or learned) and their check."""

    profile = EmbedderProfile()  # sentence-model defaults (see EmbedderProfile)
    provider = ""

    def __init__(self, model: str, *, url: str, dims: int | None, batch_size: int, max_batch_chars: int,
                 client: JsonClient) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"name the {self.provider} model to embed with, e.g. '{self.provider}/<model>'")
        if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
            raise ConfigError(f"dims must be a positive integer, got {dims!r}")
        if batch_size < 1 or max_batch_chars < 1:
            raise ConfigError(f"batch_size and max_batch_chars must be at least 1, got {batch_size} and "
                              f"{max_batch_chars}")
        self.model = model
        self.name = f"{self.provider}/{model}"
        self.url = url
        self.batch_size = batch_size
        self.max_batch_chars = max_batch_chars
        self.client = client
        # untagged Ollama names and ':latest' are the table's model; other tags are learned
        known = KNOWN_DIMS.get(self.name.removesuffix(":latest"))
        self._dims: int | None = dims if dims is not None else known
        self._dims_known = dims is None and known is not None  # from the table, not from a memory's record
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, url={self.url!r}, dims={self._dims})"

    @property
    def dims(self) -> int:
        """The vectors' length: given, from :data:`KNOWN_DIMS`, or learned by embedding one short text."""
        if self._dims is None:
            with self._lock:
                if self._dims is None:
                    self._dims = len(self._post([_PROBE])[0])
        return self._dims

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text, in order; raises before returning anything if any batch fails."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = [self._batch_matrix(batch) for batch in self._batches(texts)]
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    def _batch_matrix(self, batch: list[str]) -> np.ndarray:
        vectors = self._post(batch)
        if len(vectors) != len(batch):
            raise EmbeddingServiceError(f"{self.describe} returned {len(vectors)} vectors for {len(batch)} texts")
        try:
            matrix = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingServiceError(f"{self.describe} returned vectors that are not lists of numbers "
                                        f"of one length ({exc})") from None
        if matrix.ndim != 2 or not matrix.shape[1]:
            raise EmbeddingServiceError(f"{self.describe} returned no vectors for the model {self.model!r}")
        expected = self._dims
        if expected is None:
            self._dims = matrix.shape[1]
        elif matrix.shape[1] != expected:
            got = matrix.shape[1]
            raise EmbeddingError(
                f"{self.describe} returned {got}-dimensional vectors for {self.name!r}, but {expected} were "
                + (f"expected ({self.model!r} is known to make {expected}); if this server's model is another, "
                   f"give its dimensions in code: {type(self).__name__}({self.model!r}, dims={got}, ...)"
                   if self._dims_known else
                   f"expected (the memory was built with {expected}); embed with the model it was built with, "
                   "or re-embed it with this one (MemoryStore.open(path, embedder=..., reembed=True))")
            )
        return matrix

    def _batches(self, texts: list[str]) -> Iterator[list[str]]:
        """At most ``batch_size`` texts and ``max_batch_chars`` characters a request (a longer text alone)."""
        batch: list[str] = []
        chars = 0
        for text in texts:
            if batch and (len(batch) >= self.batch_size or chars + len(text) > self.max_batch_chars):
                yield batch
                batch, chars = [], 0
            batch.append(text)
            chars += len(text)
        if batch:
            yield batch

    @property
    def describe(self) -> str:
        raise NotImplementedError

    def _post(self, texts: list[str]) -> list[Any]:
        raise NotImplementedError


class OpenAIEmbedder(_HttpEmbedder):
    """``openai/<model>``: the OpenAI embeddings API, or any server that speaks it at ``base_url``.

    The key comes from ``api_key`` or the environment variable ``api_key_env`` (``OPENAI_API_KEY``);
    OpenAI's own URL needs one, a local server usually none. ``base_url``: the API's base, ending
    where ``/embeddings`` follows (``http://localhost:11434/v1`` for Ollama, ``http://localhost:1234/v1``
    for LM Studio, ``http://localhost:8000/v1`` for vLLM); default ``$OPENAI_BASE_URL``, else OpenAI.
    """

    provider = "openai"

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, api_key_env: str = "OPENAI_API_KEY", dims: int | None = None,
                 batch_size: int = 256, max_batch_chars: int = 200_000, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        base = _http_url(base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_URL,
                         "the OpenAI base URL ([models] embedder_url or $OPENAI_BASE_URL)").rstrip("/")
        key = api_key if api_key is not None else os.environ.get(api_key_env, "").strip()
        self.api_key_env = api_key_env
        self._has_key = bool(key)
        if not key and urlsplit(base).hostname == urlsplit(OPENAI_URL).hostname:
            raise ConfigError(
                f"the embedder 'openai/{model}' needs an OpenAI API key: set the environment variable "
                f"{api_key_env} (export {api_key_env}=sk-...). For another OpenAI-compatible server, "
                "set its URL in OPENAI_BASE_URL or [models] embedder_url instead"
            )
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        super().__init__(model, url=base, dims=dims, batch_size=batch_size, max_batch_chars=max_batch_chars,
                         client=JsonClient(headers=headers, timeout=timeout, retry=retry, sleep=sleep))

    @property
    def describe(self) -> str:
        return f"the embedding API at {self.url}/embeddings"

    def _post(self, texts: list[str]) -> list[Any]:
        answer = self.client.post(
            f"{self.url}/embeddings", {"model": self.model, "input": texts}, describe=self.describe,
            hint="check the URL (OPENAI_BASE_URL or [models] embedder_url) and that the server is running",
            on_error=self._refusal,
        )
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or not all(isinstance(d, dict) and "embedding" in d for d in data):
            raise EmbeddingServiceError(f"{self.describe} answered without a 'data' list of embeddings; "
                                        "check that the URL is an OpenAI-compatible API's base (often ending in /v1)")
        if all(isinstance(d.get("index"), int) for d in data):
            data = sorted(data, key=lambda d: d["index"])
        return [d["embedding"] for d in data]

    def _refusal(self, error: HttpError) -> EmbeddingServiceError:
        detail = f"HTTP {error.status}" + (f": {error.message}" if error.message else "")
        if error.status in (401, 403):
            what = (f"refused the key in {self.api_key_env}" if self._has_key
                    else "needs a key and none was given")
            return EmbeddingServiceError(f"{self.describe} {what} ({detail}); set {self.api_key_env} to a valid "
                                         "API key for this server")
        if error.status == 404:
            return EmbeddingServiceError(
                f"{self.describe} does not know the model {self.model!r} or the path ({detail}); check the "
                "model name, and that the base URL is the API's base (e.g. http://localhost:11434/v1)"
            )
        return EmbeddingServiceError(f"{self.describe} refused the request ({detail})")


class OllamaEmbedder(_HttpEmbedder):
    """``ollama/<model>``: Ollama's ``/api/embed`` at ``base_url`` (default ``$OLLAMA_HOST``, else
    ``http://localhost:11434``). The model must be pulled first: ``ollama pull <model>``."""

    provider = "ollama"

    def __init__(self, model: str = "nomic-embed-text", *, base_url: str | None = None, dims: int | None = None,
                 batch_size: int = 64, max_batch_chars: int = 200_000, timeout: float = 120.0,
                 retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        host = base_url or _ollama_host(os.environ.get("OLLAMA_HOST", ""))
        base = _http_url(host, "the Ollama URL ([models] embedder_url or $OLLAMA_HOST)").rstrip("/")
        super().__init__(model, url=base, dims=dims, batch_size=batch_size, max_batch_chars=max_batch_chars,
                         client=JsonClient(timeout=timeout, retry=retry, sleep=sleep))

    @property
    def describe(self) -> str:
        return f"Ollama at {self.url}"

    def _post(self, texts: list[str]) -> list[Any]:
        answer = self.client.post(
            f"{self.url}/api/embed", {"model": self.model, "input": texts}, describe=self.describe,
            hint="start it (ollama serve), or set OLLAMA_HOST or [models] embedder_url to where it runs",
            on_error=self._refusal,
        )
        vectors = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(vectors, list):
            raise EmbeddingServiceError(f"{self.describe} answered without 'embeddings'; check that the URL "
                                        "is Ollama's (its API answers at /api/embed)")
        return vectors

    def _refusal(self, error: HttpError) -> EmbeddingServiceError:
        detail = f"HTTP {error.status}" + (f": {error.message}" if error.message else "")
        if error.status == 404 and "model" in error.message.lower():
            return EmbeddingServiceError(f"{self.describe} does not have the model {self.model!r} ({detail}); "
                                         f"pull it first: ollama pull {self.model}")
        if error.status == 404:
            return EmbeddingServiceError(f"{self.describe} has no /api/embed ({detail}); check the URL, or "
                                         "upgrade Ollama (0.3.4 and later have it)")
        return EmbeddingServiceError(f"{self.describe} refused the request ({detail})")


def _ollama_host(value: str) -> str:
    """``$OLLAMA_HOST`` as a URL: it may be ``host``, ``host:port`` or a URL (as Ollama itself reads it)."""
    value = value.strip()
    if not value:
        return OLLAMA_URL
    if "://" not in value:
        value = f"http://{value}"
    parts = urlsplit(value)
    if parts.port is None and parts.hostname:
        value = value.replace(parts.netloc, f"{parts.netloc}:11434", 1)
    return value


def _http_url(value: str, what: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{what} must be an http:// or https:// URL, got {value!r}")
    return value.strip()

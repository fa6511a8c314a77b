"""Embedders that run in the process without torch: fastembed (ONNX) and model2vec (static vectors).

Both are optional packages (``pip install fastembed`` / ``pip install model2vec``). A model is
fetched from the Hugging Face hub the first time its name is used, into the package's cache,
and read from there after; with ``HF_HUB_OFFLINE=1`` only what is already on disk is used.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError
from .base import EmbedderProfile

__all__ = ["FastEmbedEmbedder", "Model2VecEmbedder", "hub_offline"]

_FETCH_HINT = ("a model is fetched from the Hugging Face hub the first time it is named: check the name and the "
               "network, or unset HF_HUB_OFFLINE to allow the download")


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids fetching models (as the hub's own client reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


class FastEmbedEmbedder:
    """``fastembed/<model>``: a fastembed ONNX model, e.g. ``fastembed/BAAI/bge-small-en-v1.5``.

    Queries go through the model's ``query_embed`` (models trained with query prefixes add them
    there), stored texts through ``passage_embed``. ``cache_dir``: where fastembed keeps models
    (default ``$FASTEMBED_CACHE_PATH``, else fastembed's own).
    """

    profile = EmbedderProfile()  # sentence-model defaults

    def __init__(self, model: str = "BAAI/bge-small-en-v1.5", *, batch_size: int = 64, cache_dir: str | None = None,
                 threads: int | None = None) -> None:
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise ImportError(f"the embedder 'fastembed/{model}' needs the optional package: pip install fastembed") \
                from exc
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
        if model.lower() not in known:
            raise ConfigError(f"fastembed has no text model {model!r}; its models are listed by "
                              "fastembed.TextEmbedding.list_supported_models(), e.g. BAAI/bge-small-en-v1.5")
        options: dict[str, Any] = {"local_files_only": True} if hub_offline() else {}
        try:
            self._model: Any = TextEmbedding(model_name=model, cache_dir=cache_dir, threads=threads, **options)
        except ValueError as exc:  # fastembed's "could not load from any source"
            raise FileNotFoundError(f"fastembed could not load {model!r} ({exc}); {_FETCH_HINT}") from None
        self.dims = int(self._model.embedding_size)
        self.name = f"fastembed/{model}"
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"FastEmbedEmbedder({self.name!r}, dims={self.dims})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return _stack(self._model.passage_embed(texts, batch_size=self.batch_size), self.dims)

    def embed_query(self, text: str) -> np.ndarray:
        return _stack(self._model.query_embed([text]), self.dims)[0]


class Model2VecEmbedder:
    """``model2vec/<model>``: a model2vec static model (a hub id such as ``minishlab/potion-base-8M``, or a
    directory written by ``StaticModel.save_pretrained``). numpy only at run time: thousands of texts
    a second on one core, at some cost in quality against a transformer."""

    profile = EmbedderProfile()  # sentence-model defaults

    def __init__(self, model: str = "minishlab/potion-base-8M", *, batch_size: int = 1024) -> None:
        try:
            from model2vec import StaticModel
        except ImportError as exc:
            raise ImportError(f"the embedder 'model2vec/{model}' needs the optional package: pip install model2vec") \
                from exc
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        try:
            self._model: Any = StaticModel.from_pretrained(model, force_download=False)
        except OSError as exc:  # the hub's "not cached and offline", or no such repository
            raise FileNotFoundError(f"model2vec could not load {model!r} ({exc}); {_FETCH_HINT}, or name a "
                                    "directory written by StaticModel.save_pretrained") from None
        self.dims = int(self._model.dim)
        self.name = f"model2vec/{model}"
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"Model2VecEmbedder({self.name!r}, dims={self.dims})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        # no worker processes: a library must not fork its host (a server's threads, open connections)
        vectors = self._model.encode(texts, batch_size=self.batch_size, use_multiprocessing=False)
        return np.asarray(vectors, dtype=np.float32)


def _stack(vectors: Any, dims: int) -> np.ndarray:
    rows = [np.asarray(v, dtype=np.float32) for v in vectors]
    return np.vstack(rows) if rows else np.zeros((0, dims), dtype=np.float32)

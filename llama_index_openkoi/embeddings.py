"""Embeddings across the boundary, both ways.

* :class:`OpenKoiEmbedding`: a LlamaIndex ``BaseEmbedding`` over a core embedder (by default the
  core's default, the static embedder): an embed model for ``VectorStoreIndex`` and
  ``Settings.embed_model`` that needs no network, no key and no download.
* :class:`LlamaIndexEmbedder`: a core embedder over any LlamaIndex embed model, so
  ``MemoryStore.open(path, embedder=LlamaIndexEmbedder(OpenAIEmbedding()))`` stores and searches
  with the model a LlamaIndex application already uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from shared_core.embed import Embedder, StaticEmbedder

__all__ = ["OpenKoiEmbedding", "LlamaIndexEmbedder"]


class OpenKoiEmbedding(BaseEmbedding):
    """A LlamaIndex embed model backed by a core embedder (default: the 256-d static embedder, as new memories)."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        embedder = embedder or StaticEmbedder()
        super().__init__(model_name=embedder.name, **kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "OpenKoiEmbedding"

    @property
    def dims(self) -> int:
        return int(self._embedder.dims)

    def _vectors(self, texts: list[str]) -> list[list[float]]:
        return np.asarray(self._embedder.embed(texts), dtype=np.float32).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vectors([query])[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vectors([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._vectors(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class LlamaIndexEmbedder:
    """A core :class:`~shared_core.embed.Embedder` over a LlamaIndex embed model.

    ``name`` defaults to ``llama-index/<class>/<model_name>`` (recorded in the database, so
    reopening with another model is refused); ``dims`` comes from one probe embedding unless given.
    """

    def __init__(self, model: BaseEmbedding, *, name: str | None = None, dims: int | None = None) -> None:
        if not isinstance(model, BaseEmbedding):
            raise TypeError(f"expected a LlamaIndex BaseEmbedding, got {type(model).__name__}")
        self.model = model
        model_name = getattr(model, "model_name", None)
        self.name = name or "/".join(p for p in ("llama-index", type(model).__name__, model_name) if p)
        self.dims = int(dims) if dims is not None else len(model.get_query_embedding("dimension probe"))

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self.name!r}, dims={self.dims})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.get_text_embedding_batch(list(texts)), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.model.get_query_embedding(text), dtype=np.float32)

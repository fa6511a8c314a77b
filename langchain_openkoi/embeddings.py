"""LangChain ``Embeddings`` as a core :class:`~shared_core.embed.Embedder`.

The database records its embedder's name and dimensions, so a file built with one model is
never silently searched with another. A wrapped model is named
``langchain/<class>[/<model>]``, the model taken from the first of its ``model``,
``model_name``, ``model_id``, ``deployment`` attributes (or the wrapped function's name for
LangGraph's ``EmbeddingsLambda``); pass ``name=`` to choose your own. ``dims`` comes from one
probe embedding of a short text unless you give it (give it when each call costs money).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings

from shared_core.embed import Embedder, EmbedderProfile

__all__ = ["LangChainEmbedder", "as_embedder"]

_MODEL_ATTRIBUTES = ("model", "model_name", "model_id", "deployment")
_PROBE = "openkoi dimension probe"


class LangChainEmbedder:
    """Wraps an ``Embeddings`` object: ``embed`` is ``embed_documents``, queries use ``embed_query``."""

    embeds_text = True

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        dims: int | None = None,
        name: str | None = None,
        profile: EmbedderProfile | None = None,
    ) -> None:
        if not isinstance(embeddings, Embeddings):
            raise TypeError(
                f"expected a LangChain Embeddings object, got {type(embeddings).__name__}; "
                "wrap a plain function with langgraph.store.base.embed.ensure_embeddings(fn) first"
            )
        self.embeddings = embeddings
        self.name = name or _name_of(embeddings)
        if dims is None:
            dims = len(embeddings.embed_query(_PROBE))
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise ValueError(f"dims must be a positive integer, got {dims!r}")
        self.dims = dims
        self.profile = profile or EmbedderProfile()  # sentence-model defaults (see shared_core.embed.base)

    def __repr__(self) -> str:
        return f"LangChainEmbedder({self.name!r}, dims={self.dims})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embeddings.embed_documents(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self.embeddings.embed_query(text)


def as_embedder(embedding: Embeddings | Embedder | None, *, dims: int | None = None) -> Embedder | None:
    """A core embedder for ``embedding``: LangChain models are wrapped, core embedders pass through."""
    if embedding is None or isinstance(embedding, LangChainEmbedder):
        if embedding is not None and dims is not None and embedding.dims != dims:
            raise ValueError(f"the embedder has {embedding.dims} dimensions, not the {dims} given")
        return embedding
    if isinstance(embedding, Embeddings):
        return LangChainEmbedder(embedding, dims=dims)
    if all(hasattr(embedding, attr) for attr in ("name", "dims", "embed")):
        if dims is not None and embedding.dims != dims:
            raise ValueError(f"the embedder {embedding.name!r} has {embedding.dims} dimensions, not the {dims} given")
        return embedding
    raise TypeError(
        f"expected a LangChain Embeddings object or an openkoi Embedder, got {type(embedding).__name__}"
    )


def _name_of(embeddings: Any) -> str:
    parts = ["langchain", type(embeddings).__name__]
    for attr in _MODEL_ATTRIBUTES:
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            parts.append(value)
            break
    else:
        func = getattr(embeddings, "func", None) or getattr(embeddings, "afunc", None)
        if func is not None:
            parts.append(getattr(func, "__qualname__", type(func).__name__))
    return "/".join(parts)


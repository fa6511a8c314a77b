"""The ``Embedder`` protocol and the checks every embedding goes through."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import OpenKoiError

__all__ = ["Embedder", "EmbedderProfile", "profile_of", "as_matrix", "as_vector", "check_dims", "check_embedder",
           "EmbeddingError", "EmbeddingServiceError"]

_PROBE = "openkoi dimension probe"


class EmbeddingError(OpenKoiError, ValueError):
    """An embedding has the wrong shape, is not finite, or is all zeros."""


class EmbeddingServiceError(OpenKoiError):
    """An embedding service (an HTTP API, a local model server) could not embed: it is down or
    unreachable, refused the key, or does not know the model. The message says which and what to do."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``name`` and ``dims`` are recorded in the database."""

    name: str

    @property
    def dims(self) -> int:
        """The vectors' length (an attribute, or a property that learns it on first use)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray | Sequence[Sequence[float]]:
        """One vector per text, in order."""
        ...


@dataclass(frozen=True)
class EmbedderProfile:
    """How much to trust an embedder's similarities when fusing them with BM25.

    ``similarity_floor``: cosine at or below which a match is noise (only the excess counts).
    ``vector_weight``: weight of the vector side against normalised BM25 in fusion.
    ``kb_threshold``: the knowledge-base vector threshold (seed 003 uses 0.7 for sentence models).

    The defaults (floor 0.2, weight 1.2) were chosen on LoCoMo with all-MiniLM-L6-v2
    (docs/search.md); other sentence models get them unless they bring a profile of their own.
    """

    similarity_floor: float = 0.2
    vector_weight: float = 1.2
    kb_threshold: float = 0.7


def profile_of(embedder: object) -> EmbedderProfile:
    """The embedder's own ``profile`` attribute, or the defaults for a sentence-embedding model."""
    profile = getattr(embedder, "profile", None)
    return profile if isinstance(profile, EmbedderProfile) else EmbedderProfile()


def as_matrix(vectors: object, dims: int, *, count: int | None = None, what: str = "embedding") -> np.ndarray:
    """Validate and convert to a C-contiguous float32 matrix of unit-length rows."""
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{what}s must be sequences of numbers: {exc}") from None
    if matrix.ndim == 1 and count in (None, 1) and matrix.size == dims:
        matrix = matrix.reshape(1, dims)
    if matrix.ndim != 2 or matrix.shape[1] != dims:
        got = matrix.shape[1] if matrix.ndim == 2 else matrix.shape
        raise EmbeddingError(
            f"{what} has {got} dimensions but this store holds {dims}-dimensional vectors; "
            "use the embedder the database was built with, or re-embed it (MemoryStore.open(..., reembed=True))"
        )
    if count is not None and matrix.shape[0] != count:
        raise EmbeddingError(f"expected {count} {what}s, got {matrix.shape[0]}")
    # a row's sum of squares is finite only if all its values are (or it overflowed: checked below)
    squares = np.einsum("ij,ij->i", matrix, matrix)
    if not np.isfinite(squares).all():
        if not np.isfinite(matrix).all():
            raise EmbeddingError(f"{what} contains NaN or infinite values; check the embedding model's output")
        squares = np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64)  # values past 1e19
    if not squares.all():
        raise EmbeddingError(f"{what} is all zeros, so it has no direction to compare; embed non-empty text")
    return np.ascontiguousarray(matrix / np.sqrt(squares)[:, None], dtype=np.float32)


def as_vector(vector: object, dims: int, *, what: str = "query vector") -> np.ndarray:
    return as_matrix(vector, dims, count=1, what=what)[0]


def check_embedder(embedder: Any) -> None:
    """Refuse an object that is not an embedder: it needs a ``name``, positive integer ``dims`` and ``embed``."""
    for attr in ("name", "dims", "embed"):
        if not hasattr(embedder, attr):
            raise TypeError(
                f"embedder {embedder!r} has no {attr!r}; an embedder needs name, dims and embed(texts)"
            )
    if not isinstance(embedder.dims, int) or embedder.dims < 1:
        raise ValueError(f"embedder dims must be a positive integer, got {embedder.dims!r}")
    if not isinstance(embedder.name, str) or not embedder.name:
        raise ValueError(f"embedder name must be a non-empty string, got {embedder.name!r}")


def check_dims(embedder: Embedder) -> None:
    """Embed one short text and check that the vector has ``embedder.dims`` values.

    Called before a new database is created: its vector table is sized, and its embedder
    recorded, for good. An embedder that cannot embed text (``embeds_text = False``) is trusted.
    """
    if not getattr(embedder, "embeds_text", True):
        return
    try:
        got = np.asarray(embedder.embed([_PROBE]), dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"the embedder {embedder.name!r} returned something that is not a vector ({exc})") from None
    size = got.shape[-1] if got.ndim in (1, 2) and got.size else 0
    if size != embedder.dims:
        raise EmbeddingError(
            f"the embedder {embedder.name!r} says it makes {embedder.dims}-dimensional vectors but returned "
            f"{size or got.shape}; nothing was created. Give the dimensions the model really makes "
            f"(dims={size}, or LangGraph's index={{'dims': {size}, ...}}), or leave dims out to have them measured"
        )

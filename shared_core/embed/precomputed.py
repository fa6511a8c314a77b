"""An embedder for stores whose vectors always come from outside.

LlamaIndex nodes, for instance, arrive with their embeddings, and its queries carry a
query embedding. Such a store still needs to know the dimensions; it never embeds text
itself, so text-only searches fall back to keyword search.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import EmbeddingError

__all__ = ["PrecomputedVectors"]


class PrecomputedVectors:
    """Dimensions and a name, but no model: every vector must be passed in."""

    embeds_text = False

    def __init__(self, dims: int, name: str | None = None) -> None:
        if not isinstance(dims, int) or dims < 1:
            raise ValueError(f"dims must be a positive integer, got {dims!r}")
        self.dims = dims
        self.name = name or f"precomputed-{dims}"

    def __repr__(self) -> str:
        return f"PrecomputedVectors(dims={self.dims}, name={self.name!r})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError(
            f"this store has no text embedder ({self.name}); pass vector=... with each item and query, "
            "or open the store with an embedder"
        )

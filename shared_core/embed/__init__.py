"""Embedders: the protocol, the static default, the hashing one, and an optional sentence-transformers one."""

from __future__ import annotations

from .base import (
    Embedder,
    EmbedderProfile,
    EmbeddingError,
    as_matrix,
    as_vector,
    check_dims,
    check_embedder,
    profile_of,
)
from .hashes import EMBEDDING_TEXT_VERSION, content_hash, fnv1a_64
from .hashing import HashingEmbedder
from .precomputed import PrecomputedVectors
from .sentence import SentenceTransformerEmbedder
from .static import StaticEmbedder

__all__ = [
    "Embedder",
    "EmbedderProfile",
    "EmbeddingError",
    "HashingEmbedder",
    "PrecomputedVectors",
    "SentenceTransformerEmbedder",
    "StaticEmbedder",
    "EMBEDDING_TEXT_VERSION",
    "content_hash",
    "fnv1a_64",
    "as_matrix",
    "as_vector",
    "check_dims",
    "check_embedder",
    "profile_of",
    "embedder_from_name",
]


def embedder_from_name(name: str) -> Embedder:
    """Build an embedder from a config or database name.

    ``static``, ``default`` or ``static/minilm-256``: the default (the table shipped in the
    package); ``hashing`` or ``openkoi-hashing-v1-<dims>``: the hashing embedder;
    ``sentence-transformers/<model>``: a local sentence-transformers model. Anything else (an
    adapter-wrapped LangChain or LlamaIndex model, say) cannot be rebuilt from its name and must
    be passed in code.
    """
    if name in ("static", "default", "static/minilm-256"):
        return StaticEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    if name.startswith("openkoi-hashing-v1-"):
        rest = name.removeprefix("openkoi-hashing-v1-")
        if rest.isdigit():
            return HashingEmbedder(dims=int(rest))
    if name.startswith("precomputed-") and name.removeprefix("precomputed-").isdigit():
        return PrecomputedVectors(int(name.removeprefix("precomputed-")))
    if name.startswith("sentence-transformers/"):
        return SentenceTransformerEmbedder(name.removeprefix("sentence-transformers/"))
    raise ValueError(
        f"cannot build the embedder {name!r} from its name; pass it in code, e.g. "
        "MemoryStore.open(path, embedder=...)"
    )

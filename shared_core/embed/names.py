"""Embedders by one string: what ``[models] embedder``, ``MemoryStore.open(embedder="...")`` and
the command line's ``--embedder`` accept, and what a memory records so it can be reopened."""

from __future__ import annotations

from typing import Any

from .base import Embedder
from .hashing import HashingEmbedder
from .precomputed import PrecomputedVectors
from .static import StaticEmbedder

__all__ = ["embedder_from_name", "EMBEDDER_FORMS"]

EMBEDDER_FORMS = ("static", "hashing", "openai/<model>", "ollama/<model>", "fastembed/<model>",
                  "sentence-transformers/<model>", "model2vec/<model>")


def embedder_from_name(name: str, *, dims: int | None = None, base_url: str | None = None,
                       batch_size: int | None = None) -> Embedder:
    """Build an embedder from a config or database name.

    ``static`` (or ``default``, ``static/minilm-256c``): the default, offline, the table shipped in the
    package (``static/minilm-256``: the same without removing the common direction, as recorded by
    memories made before it was); ``hashing`` (or ``openkoi-hashing-v1-<dims>``): offline, spelling only; ``openai/<model>``: the
    OpenAI embeddings API or any compatible server (``base_url``, else ``$OPENAI_BASE_URL``; key in
    ``$OPENAI_API_KEY``); ``ollama/<model>``: Ollama (``base_url``, else ``$OLLAMA_HOST``);
    ``fastembed/<model>``, ``sentence-transformers/<model>``, ``model2vec/<model>``: local models
    (optional packages). ``dims``: the dimensions a memory recorded (the HTTP embedders then need
    no request to know them, and check every answer against them); ``batch_size``: texts per
    request or model call. Anything else (an adapter-wrapped LangChain or LlamaIndex model, say)
    cannot be rebuilt from its name and must be passed in code.
    """
    if not isinstance(name, str):
        raise TypeError(f"an embedder name is a string such as 'openai/text-embedding-3-small', got {name!r}")
    provider, _, model = name.strip().partition("/")
    size: dict[str, Any] = {"batch_size": batch_size} if batch_size else {}  # else each embedder's default
    if provider == "openai" and model:
        from .remote import OpenAIEmbedder

        return OpenAIEmbedder(model, base_url=base_url, dims=dims, **size)
    if provider == "ollama" and model:
        from .remote import OllamaEmbedder

        return OllamaEmbedder(model, base_url=base_url, dims=dims, **size)
    if provider == "fastembed" and model:
        from .local import FastEmbedEmbedder

        return FastEmbedEmbedder(model, **size)
    if provider == "model2vec" and model:
        from .local import Model2VecEmbedder

        return Model2VecEmbedder(model, **size)
    if provider == "sentence-transformers" and model:
        from .sentence import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(model, **size)
    if name in ("static", "default", "static/minilm-256c"):
        return StaticEmbedder()
    if name == "static/minilm-256":  # memories made before the common direction was removed
        return StaticEmbedder(centred=False)
    if name == "hashing":
        return HashingEmbedder()
    if name.startswith("openkoi-hashing-v1-"):
        rest = name.removeprefix("openkoi-hashing-v1-")
        if rest.isdigit():
            return HashingEmbedder(dims=int(rest))
    if name.startswith("precomputed-") and name.removeprefix("precomputed-").isdigit():
        return PrecomputedVectors(int(name.removeprefix("precomputed-")))
    raise ValueError(
        f"cannot build the embedder {name!r} from its name; name one of {', '.join(EMBEDDER_FORMS)}, "
        "or pass the embedder in code, e.g. MemoryStore.open(path, embedder=...)"
    )

"""The memory file behind an adapter, and fitting it to the embeddings it is given.

LlamaIndex builds a vector store before it has seen an embedding, while an openkoi file
sizes its vector table when it is created. So a file that holds no memories yet takes
the size of the first embeddings it is given (``embed_dim``, the first node, or the
first query): it is switched to precomputed vectors of that size, which loses nothing.
A file that already holds memories with vectors of another size is a clear error.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from shared_core import MemoryStore
from shared_core.embed import PrecomputedVectors
from shared_core.errors import EmbedderMismatchError
from shared_core.namespaces import Namespace, NamespaceTemplateError, as_namespace, template_fields

__all__ = ["StoreHandle", "fit_dims", "namespace_of"]


def namespace_of(namespace: Namespace, owner: str) -> str:
    """The core namespace of ``namespace`` (a string as given, a tuple encoded), as every door reads it.

    A template (``"user:{user_id}"``) is refused: LlamaIndex has no per-run config to fill it,
    and taken literally it would put every user in one namespace.
    """
    try:
        return as_namespace(namespace)
    except NamespaceTemplateError:
        fields = ", ".join(f"{name!r}: ..." for name in template_fields(namespace))
        raise NamespaceTemplateError(
            f"{owner} got the namespace template {namespace!r}, but LlamaIndex has no per-run config to fill it; "
            f"build one {owner} per user with a filled namespace, e.g. "
            f"namespace=resolve_namespace({namespace!r}, {{{fields}}}) (from shared_core.namespaces)"
        ) from None


def fit_dims(store: MemoryStore, dims: int, *, take_over: bool) -> None:
    """Make ``store`` hold ``dims``-dimensional vectors, or explain why it cannot.

    ``take_over``: the adapter opened the file itself, so an empty file's text embedder
    (the hashing default) gives way to precomputed vectors even when the sizes agree;
    a store the caller opened keeps its embedder unless the sizes differ.
    """
    if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
        raise ValueError(f"embed_dim must be a positive integer, got {dims!r}")
    embedder = store.embedder
    precomputed = not getattr(embedder, "embeds_text", True)
    if embedder.dims == dims and (precomputed or not take_over):
        return
    held = sum(store.namespaces().values())
    if held == 0:
        store.reembed(PrecomputedVectors(dims))
        return
    if embedder.dims != dims:
        raise EmbedderMismatchError(
            f"{store.path} holds {held} memories with {embedder.dims}-dimensional vectors ({embedder.name}), "
            f"but these embeddings have {dims}; use a separate file for this embedding model, or re-embed "
            "the file with MemoryStore.open(path, embedder=..., reembed=True)"
        )


class StoreHandle:
    """A ``MemoryStore`` given by the caller, or opened from a path (and then owned)."""

    def __init__(self, store: MemoryStore | None, path: str | os.PathLike[str] | None,
                 embed_dim: int | None = None, **open_kwargs: Any) -> None:
        if store is not None and path is not None:
            raise ValueError("give either a MemoryStore or a path, not both")
        if store is not None and not isinstance(store, MemoryStore):
            raise TypeError(f"store must be a shared_core.MemoryStore, got {type(store).__name__}")
        if store is not None and open_kwargs:
            raise TypeError(
                f"{', '.join(sorted(open_kwargs))} only apply when opening a path; the MemoryStore given is already open"
            )
        self._lock = threading.RLock()
        self._fitted: int | None = None
        self.owned = store is None
        self._path = None if path is None else os.fspath(path)
        self._open_kwargs = open_kwargs
        if store is None:
            store = MemoryStore.open(self._path, **open_kwargs)
        self.store = store
        if embed_dim is not None:
            self.fit(embed_dim)  # a file without memories takes this size straight away

    def fit(self, dims: int) -> MemoryStore:
        """The store, sized for ``dims``-dimensional vectors (once; then only checked)."""
        with self._lock:
            if self._fitted != dims or self.store.embedder.dims != dims:
                take_over = self.owned and self._fitted is None
                try:
                    fit_dims(self.store, dims, take_over=take_over)
                except EmbedderMismatchError:
                    if not self.owned or self._path == ":memory:":
                        raise
                    # another connection may have sized the file since we opened it: look again
                    # (the old object is left to the garbage collector: an adapter may share it)
                    self.store = MemoryStore.open(self._path, **self._open_kwargs)
                    fit_dims(self.store, dims, take_over=False)
                self._fitted = dims
            return self.store

    def close(self) -> None:
        if self.owned:
            self.store.close()

"""Reaching the core store behind an adapter, or opening one (shared by every adapter)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from shared_core import EmbedderMismatchError, MemoryStore
from shared_core.clock import Clock
from shared_core.config import Config
from shared_core.embed import Embedder

__all__ = ["core_store", "open_store"]


def core_store(obj: Any) -> MemoryStore:
    """The :class:`MemoryStore` itself, or the one an openkoi adapter works on."""
    if isinstance(obj, MemoryStore):
        return obj
    for attr in ("memory_store", "store"):
        inner = getattr(obj, attr, None)
        if isinstance(inner, MemoryStore):
            return inner
    raise TypeError(
        f"expected a shared_core MemoryStore (or an openkoi adapter built on one), got {type(obj).__name__}; "
        "open one with MemoryStore.open(path)"
    )


def open_store(
    store: Any,
    path: str | os.PathLike[str] | None,
    embedder: Embedder | None,
    *,
    config: Config | Mapping[str, Any] | None = None,
    clock: Clock | None = None,
) -> tuple[MemoryStore, bool]:
    """``(store, owned)``: the given store (checked against ``embedder``), or a newly opened one."""
    if store is not None:
        if path is not None:
            raise ValueError("give store= (an open MemoryStore) or path= (a file to open), not both")
        if config is not None or clock is not None:
            raise ValueError("config= and clock= apply when opening a file; the given store already has its own")
        core = core_store(store)
        if embedder is not None and (embedder.name, embedder.dims) != (core.embedder.name, core.embedder.dims):
            raise EmbedderMismatchError(
                f"the store searches with {core.embedder.name!r} ({core.embedder.dims} dims), not "
                f"{embedder.name!r} ({embedder.dims} dims); leave the embedding out to use the store's own, "
                "or open the store with this embedding: MemoryStore.open(path, embedder=LangChainEmbedder(...))"
            )
        return core, False
    return MemoryStore.open(path, embedder=embedder, config=config, clock=clock), True

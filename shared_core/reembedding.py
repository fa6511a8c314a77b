"""Re-embedding: only what changed (versioned content hashes, seed 003), or everything for a new embedder.

The embedding (minutes with a real model) runs without the memory's lock and outside any write
transaction, so searches go on and other writers get their turns; only the writing of each batch
(or, for a new embedder, of all the new vectors at the end) holds the memory.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .clock import to_iso
from .embed import Embedder, as_matrix, check_embedder, content_hash

if TYPE_CHECKING:
    from .kernel import Kernel

__all__ = ["reembed", "switch_embedder"]

Progress = Callable[[int, int], None]


def reembed(kernel: Kernel, embedder: Embedder | None = None, *, batch_size: int = 256,
            progress: Progress | None = None) -> int:
    """Re-embed what needs it (see ``MemoryStore.reembed``); return how many memories were re-embedded."""
    current = kernel.embedder
    if embedder is not None and (embedder.name != current.name or embedder.dims != current.dims):
        check_embedder(embedder)
        return switch_embedder(kernel, embedder, batch_size=batch_size, progress=progress)
    text_of = kernel.hooks.embedding_text
    with kernel.session():
        states = kernel.memories.embedding_states()
        candidates = kernel.memories.by_rowids([rowid for rowid, _, _ in states])
        stale = [m for rowid, stored_hash, model in states if (m := candidates.get(rowid)) is not None
                 and (model != current.name or stored_hash != content_hash(text_of(m)))]
    done = 0
    for start in range(0, len(stale), batch_size):
        part = stale[start : start + batch_size]
        texts = [text_of(m) for m in part]
        vectors = kernel.embed(texts)  # no lock held: the slow part
        with kernel.session(write=True):
            now = kernel.memories.by_rowids([m.rowid for m in part])
            for memory, text, vector in zip(part, texts, vectors, strict=True):
                latest = now.get(memory.rowid)
                if latest is not None and text_of(latest) == text:  # else changed or gone meanwhile
                    kernel.memories.update(latest, vector=vector, embedding_text=text, refresh_hit=False)
        done += len(part)
        if progress:
            progress(done, len(stale))
    return done


def switch_embedder(kernel: Kernel, embedder: Embedder, *, batch_size: int = 256,
                    progress: Progress | None = None) -> int:
    """Every vector anew with ``embedder``: embedded batch by batch without the lock (kept in a
    temporary file, not in RAM), then written in one transaction with the few rows that were
    added or changed meanwhile, so the memory switches embedders at one moment."""
    text_of = kernel.hooks.embedding_text
    with kernel.session():
        snapshot = {m.rowid: text_of(m) for m in kernel.memories.by_rowids(kernel.memories.all_rowids()).values()}
    order = list(snapshot)
    with tempfile.TemporaryDirectory(prefix="openkoi-reembed-") as scratch:
        staged = np.lib.format.open_memmap(Path(scratch) / "vectors.npy", mode="w+", dtype=np.float32,
                                           shape=(max(1, len(order)), embedder.dims))
        for start in range(0, len(order), batch_size):
            texts = [snapshot[r] for r in order[start : start + batch_size]]
            staged[start : start + len(texts)] = as_matrix(embedder.embed(texts), embedder.dims,
                                                           count=len(texts), what="embedding")
            if progress:
                progress(min(start + batch_size, len(order)), len(order))
        slot = {rowid: i for i, rowid in enumerate(order)}
        with kernel.session(write=True) as db:
            memories = kernel.memories.by_rowids(kernel.memories.all_rowids())
            now_texts = {rowid: text_of(m) for rowid, m in memories.items()}
            late = [rowid for rowid, text in now_texts.items() if snapshot.get(rowid) != text]
            fresh = dict(zip(late, as_matrix(embedder.embed([now_texts[r] for r in late]), embedder.dims,
                                             count=len(late), what="embedding"), strict=True)) if late else {}
            kernel.use_embedder(embedder)
            kernel.vectors.rebuild(embedder.dims)
            now = to_iso(kernel.clock.now())
            rowids = list(memories)
            for start in range(0, len(rowids), batch_size):
                part = rowids[start : start + batch_size]
                kernel.vectors.write_all([(r, fresh[r] if r in fresh else staged[slot[r]]) for r in part])
                kernel.memories.mark_embedded([(r, content_hash(now_texts[r])) for r in part], embedder.name, now)
            db.set_meta("embedder_name", embedder.name)
            db.set_meta("embedder_dims", str(embedder.dims))
        del staged
    kernel.vectors.reset()
    kernel.vectors.ensure_ready()
    return len(memories)

"""``store.archive``: archive, restore, get, search and count archived memories. The logic only:
the SQL is :mod:`.repository`'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from ..index.filters import Filter
from ..memories import DEFAULT_NAMESPACE, Memory, scope_for
from ..search import SearchResults

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Archive"]


class Archive:
    """``store.archive``: ``store.archive(ids)`` archives; ``restore``, ``get``, ``search`` and
    ``count`` read and bring back what was archived."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def __call__(self, ids: str | Sequence[str], *, reason: str = "manual", namespace: str | None = None) -> int:
        """Move memories out of the live index into the keyword-searchable archive; return how many."""
        wanted = [ids] if isinstance(ids, str) else list(ids)
        kernel = self.kernel
        with kernel.session():
            found = kernel.memories.get_many(wanted, namespace)
            missing = sorted(set(wanted) - {m.id for m in found})
            if missing:
                raise NotFoundError(f"no live memory with id {missing[0]!r}")
            with kernel.session(write=True):
                return kernel.archive.move([m.rowid for m in found], reason)

    def restore(self, ids: str | Sequence[str], *, namespace: str | None = None) -> list[Memory]:
        """Bring archived memories back into the live index (re-embedded), feedback and dates kept."""
        wanted = [ids] if isinstance(ids, str) else list(ids)
        kernel = self.kernel
        with kernel.session():
            archived = [kernel.archive.get(i, namespace) for i in wanted]
            for memory_id, memory in zip(wanted, archived, strict=False):
                if memory is None:
                    raise NotFoundError(f"no archived memory with id {memory_id!r}")
            with kernel.session(write=True):
                for memory in archived:
                    assert memory is not None
                    kernel.archive.restore(memory)
            return kernel.memories.get_many(wanted)

    def get(self, id: str, *, namespace: str | None = None) -> Memory:  # noqa: A002
        """An archived memory (``archived_at`` and ``archive_reason`` set), or :class:`NotFoundError`."""
        with self.kernel.session():
            memory = self.kernel.archive.get(id, namespace)
        if memory is None:
            raise NotFoundError(f"no archived memory with id {id!r}")
        return memory

    def search(
        self,
        query: str,
        *,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        namespace_prefix: str | None = None,
        kind: str | Sequence[str] | None = None,
        where: Mapping[str, Any] | Filter | None = None,
        limit: int = 10,
    ) -> SearchResults:
        """Keyword search over archived memories only (seed 002's ``queryArchive``)."""
        kernel = self.kernel
        scope = scope_for(
            namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, ids=None, where=where, tags=None,
            category=None, source=None, since=None, until=None, live_at=None, current_only=False,
        )
        with kernel.session():
            keyword_query = kernel.keyword.prepare(query)
            hits = kernel.searcher.archive_hits(keyword_query, scope, limit, {}, kernel.clock.now(), "archive")
        hits.sort(key=lambda h: -h.score)
        return SearchResults(hits[:limit], query=query)

    def count(self, namespace: str | None = None) -> int:
        """How many memories are archived (in ``namespace``, if given)."""
        with self.kernel.session():
            return self.kernel.archive.count(namespace)

    def erase(self, namespace: str) -> int:
        """Remove the namespace's archived memories (``erase_namespace``)."""
        return self.kernel.archive.erase(namespace)

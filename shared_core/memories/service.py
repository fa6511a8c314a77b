"""The memories domain's service: add (with fact versioning and auto-categories), search (with
access tracking and links), get, list, count, update, feedback, delete and expiry.

``MemoryStore`` delegates its everyday methods here, and every domain service that writes or
searches memories asks the kernel for this service (``kernel.service(MemoryService)``).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..clock import to_iso
from ..errors import NotFoundError
from ..index.filters import Filter
from ..index.protocols import LoadDeferring
from ..lifecycle.links import LinkGraph
from ..search import SearchResults
from ..search_query import SearchQuery
from ..validation import LIMITS, check_finite, time_or_none
from .checks import expiry, scope_for
from .records import DEFAULT_NAMESPACE, AddResult, Memory, NewMemory
from .versioning import FactVersions

if TYPE_CHECKING:
    from ..kernel import Kernel
    from .records import Prepared

__all__ = ["MemoryService", "Progress"]

Progress = Callable[[int, int], None]

_MERGE_AFTER_LOAD = 1000  # memories a load must add before it merges the keyword index (and at least doubles it)


class MemoryService:
    """``store.add``, ``store.search`` and the other operations on memories, over the kernel."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._versions = FactVersions(kernel)

    # -- writing ---------------------------------------------------------------------------

    def add(
        self,
        text: str,
        *,
        id: str | None = None,  # noqa: A002 - the natural name for callers
        kind: str = "fact",
        namespace: str = DEFAULT_NAMESPACE,
        tags: Sequence[str] | str | None = None,
        category: str | None = None,
        source: str = "agent",
        metadata: Mapping[str, Any] | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        pinned: bool = False,
        session_id: str | None = None,
        task_id: str | None = None,
        owner_id: str | None = None,
        expires_at: datetime | str | None = None,
        ttl: float | timedelta | None = None,
        created_at: datetime | str | None = None,
        vector: Any = None,
        embedding_text: str | None = None,
        dedup: bool = True,
        supersedes: str | None = None,
    ) -> AddResult:
        """Remember ``text``; return the id it landed on (an :class:`AddResult`, a ``str``).

        A caller-given ``id`` always upserts. Without one, a fact that only restates a live
        fact of the namespace (cosine above ``memory.fact_dedup_threshold``, 0.9, and the same
        words once case, punctuation and articles are set aside) reinforces it instead, and its
        id comes back with ``event == "reinforced"``. A near-duplicate that changes a detail
        (a number, a name, a negation) is kept: the new version of the old fact when the
        subject is the same (``event == "superseded"``, the old one in :meth:`history`),
        otherwise a new fact. ``supersedes=old_id`` makes this the new version of that memory;
        see :mod:`shared_core.memories.versioning` for the whole rule.
        """
        item = NewMemory(
            text=text, id=id, kind=kind, namespace=namespace, tags=tags or (), category=category, source=source,
            metadata=metadata, importance=importance, confidence=confidence, pinned=pinned, session_id=session_id,
            task_id=task_id, owner_id=owner_id, expires_at=expires_at, ttl=ttl, created_at=created_at,
            vector=vector, embedding_text=embedding_text,
        )
        # seed 004's auto-categorisation (memory.auto_categorize), decided before the lock: it may ask a model
        auto_category = self._auto_category(item)
        kernel = self.kernel
        embedder = kernel.embedder
        (prepared,) = kernel.memories.prepare([item])  # embedded without the lock: a remote model takes a while
        with kernel.session():
            if kernel.embedder is not embedder:  # re-embedded to another embedder meanwhile
                (prepared,) = kernel.memories.prepare([item])
            if supersedes is not None or (kind == "fact" and id is None and kernel.config.memory.fact_versioning):
                return self._versions.write(prepared, supersedes=supersedes, dedup=dedup, auto_category=auto_category)
            prepared.category = prepared.category or auto_category
            with kernel.session(write=True):
                return kernel.memories.write(prepared, dedup=dedup)

    def _categorize_by_rules(self, items: list[Prepared]) -> None:
        """Auto-categorisation for a bulk load: the keyword rules only, never a model call per item."""
        if not self.kernel.config.memory.auto_categorize:
            return
        rules = self.kernel.categorizer
        for item in items:
            if item.kind == "fact" and item.category is None:
                item.category = rules.rule_category(item.text)

    def _auto_category(self, item: NewMemory) -> str | None:
        """The category a fact added without one gets (None: keep none); see :mod:`shared_core.categories`."""
        if item.kind != "fact" or item.category is not None or not self.kernel.config.memory.auto_categorize:
            return None
        if not isinstance(item.text, str) or not item.text.strip():
            return None  # NewMemory's validation reports the bad text
        return self.kernel.categorizer.categorize(item.text)

    def add_many(
        self,
        items: Iterable[NewMemory | Mapping[str, Any] | str],
        *,
        namespace: str | None = None,
        batch_size: int = 1000,
        dedup: bool = False,
        progress: Progress | None = None,
    ) -> list[AddResult]:
        """Add many memories, embedded and written ``batch_size`` at a time (one transaction each).

        Items are :class:`NewMemory`, dicts of the same fields, or plain strings. ``namespace``
        applies to items that do not name their own. Bulk loading skips near-duplicate
        detection unless ``dedup=True`` (then each item is checked like :meth:`add`; within
        one batch only identical texts are merged).
        """
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        materialised = list(items)
        rows_before = self._row_count() if len(materialised) >= _MERGE_AFTER_LOAD else None
        deferred = self._defer_vector_index(len(materialised))
        try:
            with _cyclic_gc_paused() if len(materialised) > batch_size else contextlib.nullcontext():
                results = self._add_batches(materialised, namespace, batch_size, dedup, progress)
        finally:
            if deferred is not None:
                with self.kernel.session(write=True):
                    deferred.build_after_load()
        if rows_before is not None:
            self._settle_after_load(rows_before, sum(r.created for r in results))
        return results

    def _defer_vector_index(self, rows: int) -> LoadDeferring | None:
        """The vector index, when it builds itself after this load rather than row by row (PostgreSQL's
        HNSW index, for a load that at least doubles the memory); not inside a caller's transaction,
        whose rows a build in its own transaction could not wait for."""
        vectors = self.kernel.vectors
        if not isinstance(vectors, LoadDeferring) or self.kernel.backend.in_transaction:
            return None
        with self.kernel.session(write=True):
            return vectors if vectors.defer_for_load(rows) else None

    def _row_count(self) -> int:
        with self.kernel.session():
            return self.kernel.memories.row_count()

    def _settle_after_load(self, rows_before: int, added: int) -> None:
        """After a load that at least doubled the memory: merge the keyword index into one segment,
        then let the database settle the new rows (:meth:`.Backend.settle_after_load`: PostgreSQL's
        ``VACUUM (ANALYZE)``; not inside a caller's transaction, whose rows it could not see).

        FTS5 merges its segments a level at a time as commits come; after a bulk load, the
        single adds that followed rewrote the loaded postings (the first 400 adds after a 100k
        load ran at two thirds of their later speed). Merging once costs less (0.12 s at 100k,
        2 % of the load), and only loads that double the index do it, so over a store's life
        the merges add up to a few rewrites of its final index.
        """
        if added < _MERGE_AFTER_LOAD or 2 * added < rows_before + added:
            return
        with self.kernel.session(write=True):
            self.kernel.keyword.optimize()
        with self.kernel.session() as backend:
            if not backend.in_transaction:
                backend.settle_after_load()

    def _add_batches(self, materialised: list[Any], namespace: str | None, batch_size: int, dedup: bool,
                     progress: Progress | None) -> list[AddResult]:
        total = len(materialised)
        batches = [[_as_new_memory(raw, namespace) for raw in materialised[start : start + batch_size]]
                   for start in range(0, total, batch_size)]
        results: list[AddResult] = []
        if len(batches) < 2:
            prepared_batches: Iterator[list[Prepared]] = map(self._prepare_batch, batches)
        else:
            # the next batch is validated, embedded and categorised on another thread while this one
            # is written: SQLite lets go of the GIL while it works (a 100k load: 11 s -> 8 s on 2 cores)
            prepared_batches = _prepared_ahead(self._prepare_batch, batches)
        try:
            for prepared in prepared_batches:
                results.extend(self._write_batch(prepared, dedup))
                if progress:
                    progress(len(results), total)
        finally:
            if hasattr(prepared_batches, "close"):  # a failed write: stop the worker now, not when collected
                prepared_batches.close()
        return results

    def _prepare_batch(self, batch: list[NewMemory]) -> list[Prepared]:
        """Validation, embeddings and rule categories of a batch: no database access, any thread."""
        prepared = self.kernel.memories.prepare(batch)
        self._categorize_by_rules(prepared)
        return prepared

    def _write_batch(self, prepared: list[Prepared], dedup: bool) -> list[AddResult]:
        memories = self.kernel.memories
        with self.kernel.session(write=True):
            if dedup:
                return [memories.write(p, dedup=True) for p in prepared]
            return memories.write_many(prepared)

    def update(
        self,
        id: str,  # noqa: A002
        text: str | None = None,
        *,
        tags: Sequence[str] | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        category: Any = ...,
        importance: Any = ...,
        confidence: Any = ...,
        pinned: bool | None = None,
        expires_at: Any = ...,
        vector: Any = None,
        namespace: str | None = None,
    ) -> Memory:
        """Fix or update a memory in place (seed 002): score kept, ``last_hit_at`` refreshed, re-indexed.

        Only the arguments given change; ``tags`` and ``metadata`` replace the old values.
        """
        kernel = self.kernel
        with kernel.session():
            memory = kernel.memories.require(id, namespace)
            with kernel.session(write=True):
                kernel.memories.update(
                    memory, text=text, tags=tags, metadata=metadata, category=category, importance=importance,
                    confidence=confidence, pinned=pinned, expires_at=expires_at, vector=vector,
                    embedding_text=self._embedding_text_after(memory, text),
                )
            return kernel.memories.require(id)

    def _embedding_text_after(self, memory: Memory, new_text: str | None) -> str | None:
        if new_text is None or memory.kind not in self.kernel.hooks.embedding_texts:
            return None
        return self.kernel.hooks.embedding_text(Memory(**{**memory.__dict__, "text": new_text}))

    def delete(self, ids: str | Sequence[str], *, namespace: str | None = None, missing_ok: bool = False) -> int:
        """Permanently delete memories (row, index entry, vector); return how many were deleted.

        Deleting is an explicit request; the lifecycle itself only ever archives.
        """
        wanted = [ids] if isinstance(ids, str) else list(ids)
        kernel = self.kernel
        with kernel.session():
            found = kernel.memories.get_many(wanted, namespace)
            if not missing_ok:
                missing = sorted(set(wanted) - {m.id for m in found})
                if missing:
                    where = f" in namespace {namespace!r}" if namespace is not None else ""
                    raise NotFoundError(f"no memory with id {missing[0]!r}{where}" +
                                        (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
            if not found:
                return 0
            with kernel.session(write=True):
                return kernel.memories.delete_rows([m.rowid for m in found])

    def delete_where(
        self,
        *,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        namespace_prefix: str | None = None,
        kind: str | Sequence[str] | None = None,
        where: Mapping[str, Any] | Filter | None = None,
    ) -> int:
        """Permanently delete every memory matching the filters (e.g. all chunks of one source document)."""
        scope = scope_for(
            namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, ids=None, where=where, tags=None,
            category=None, source=None, since=None, until=None, live_at=None, current_only=False,
        )
        kernel = self.kernel
        with kernel.session():
            rowids = kernel.memories.rowids(scope)
            if not rowids:
                return 0
            with kernel.session(write=True):
                return kernel.memories.delete_rows(rowids)

    def set_expiry(
        self,
        ids: str | Sequence[str],
        *,
        ttl: float | timedelta | None = None,
        expires_at: datetime | str | None = None,
        namespace: str | None = None,
    ) -> int:
        """Set (or with neither argument, clear) the expiry of memories without touching anything else.

        For TTLs refreshed on read; returns how many memories were changed.
        """
        kernel = self.kernel
        when = to_iso(expiry(expires_at, ttl, kernel.clock.now()))
        wanted = [ids] if isinstance(ids, str) else list(ids)
        with kernel.session():
            found = kernel.memories.get_many(wanted, namespace)
            if not found:
                return 0
            with kernel.session(write=True):
                kernel.memories.set_expiry([m.rowid for m in found], when)
            return len(found)

    # -- feedback ----------------------------------------------------------------------------

    def reinforce(self, id: str, *, namespace: str | None = None, weight: float | None = None) -> Memory:  # noqa: A002
        """This memory helped: score += 3 (``memory.reinforce_weight``), ``last_hit_at`` = now."""
        delta = self.kernel.config.memory.reinforce_weight if weight is None else \
            check_finite(weight, "weight", bound=LIMITS.weight)
        return self._feedback(id, delta, hit=True, namespace=namespace)

    def demote(self, id: str, *, namespace: str | None = None, weight: float | None = None) -> Memory:  # noqa: A002
        """This memory is wrong, stale or irrelevant: score -= 1 (``memory.demote_weight``)."""
        delta = self.kernel.config.memory.demote_weight if weight is None else \
            check_finite(weight, "weight", bound=LIMITS.weight)
        return self._feedback(id, -delta, hit=False, namespace=namespace)

    def _feedback(self, memory_id: str, delta: float, *, hit: bool, namespace: str | None) -> Memory:
        kernel = self.kernel
        with kernel.session():
            memory = kernel.memories.require(memory_id, namespace)
            with kernel.session(write=True):
                kernel.memories.feedback(memory, delta, hit=hit)
            return kernel.memories.require(memory_id)

    # -- reading ---------------------------------------------------------------------------

    def get(self, id: str, *, namespace: str | None = None) -> Memory:  # noqa: A002
        """The memory with this id (in ``namespace``, if given), or :class:`NotFoundError`."""
        with self.kernel.session():
            return self.kernel.memories.require(id, namespace)

    def get_many(self, ids: Sequence[str], *, namespace: str | None = None) -> list[Memory]:
        """The memories that exist among ``ids``, in the order asked; missing ids are skipped."""
        with self.kernel.session():
            return self.kernel.memories.get_many(list(ids), namespace)

    def search(
        self,
        query: str | None = None,
        *,
        vector: Any = None,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        namespace_prefix: str | None = None,
        kind: str | Sequence[str] | None = None,
        tags: str | Sequence[str] | None = None,
        category: str | Sequence[str] | None = None,
        source: str | Sequence[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        where: Mapping[str, Any] | Filter | None = None,
        ids: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
        fusion: str | None = None,
        vector_weight: float | None = None,
        min_score: float | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
        include_archive: bool = False,
        mmr_lambda: float | None = None,
        fetch_k: int | None = None,
        track_access: bool | None = None,
        expand_links: bool | None = None,
        rank: bool = True,
        time_phrases: str | None = None,
        asked_at: datetime | str | None = None,
    ) -> SearchResults:
        """Hybrid search (BM25 + vectors, fused, then ranked by feedback and recency).

        Filters (namespace, kind, tags: any of, category, source, created ``since``/``until``,
        ``where`` in the filter language, ``ids``) apply before top-k. ``fusion``: ``keyword_first``
        (default), ``weighted``, ``rrf``, ``keyword`` (BM25 only) or ``vector`` (KNN only).
        ``include_archive`` adds keyword matches from the archive. ``mmr_lambda`` (0..1) reorders
        the best ``fetch_k`` candidates by maximal marginal relevance for diversity. Each returned
        live hit's ``access_count`` goes up by one unless ``track_access=False`` (seed 003), and
        the top hits are linked as co-recalled (Hebbian links, seed 002; ``links.enabled``).
        ``expand_links`` (default ``links.expand_by_default``) appends strongly linked neighbours
        of the hits, in the same scope, marked ``parts.fusion == "link"``. ``rank=False`` orders
        by relevance alone, without the feedback and recency weights (for adapters whose
        framework promises plain similarity order, such as vector stores). A time in the question
        ("last Tuesday", "in March", "two weeks ago", "before the trip"), read relative to
        ``asked_at`` (default: the store's clock), raises the memories created in that window
        (``time_phrases="boost"``, the default ``search.time_phrases``), keeps only them
        (``"narrow"``) or is ignored (``"off"``).
        """
        kernel = self.kernel
        cfg = kernel.config
        now = kernel.clock.now()
        scope = scope_for(
            namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, ids=ids, where=where, tags=tags,
            category=category, source=source, since=since, until=until,
            live_at=None if include_expired else to_iso(now), current_only=not include_superseded,
        )
        q = SearchQuery.build(
            query, scope, limit=cfg.search.default_limit if limit is None else limit,
            default_fusion=cfg.search.fusion, vector=vector, offset=offset, fusion=fusion,
            vector_weight=vector_weight, min_score=min_score, include_archive=include_archive, mmr_lambda=mmr_lambda,
            fetch_k=fetch_k, rank=rank, time_mode=cfg.search.time_phrases if time_phrases is None else time_phrases,
            asked_at=now if asked_at is None else time_or_none(asked_at, "asked_at"),
        )
        embedder = kernel.embedder
        embedded = vector is None and q.has_text and q.fusion != "keyword" and getattr(embedder, "embeds_text", True)
        if embedded:  # without the lock: a remote model takes a while
            q = replace(q, vector=kernel.searcher.embed_query(q.text or ""))
        with kernel.session():
            if embedded and kernel.embedder is not embedder:  # re-embedded to another embedder meanwhile
                q = replace(q, vector=kernel.searcher.embed_query(q.text or ""))
            hits, _ = kernel.searcher.run(q)
            track = cfg.search.track_access if track_access is None else track_access
            expand = cfg.links.expand_by_default if expand_links is None else expand_links
            links = kernel.service(LinkGraph)
            linked = links.expand(hits, scope) if expand else []
            live = [h.memory.rowid for h in [*hits, *linked] if h.memory.archived_at is None]
            if track and live and not kernel.backend.read_only:
                # never waits for another writer: counts kept for later, this co-recall left out of the links
                kernel.memories.note_access(live, (lambda: links.record(h.memory for h in hits))
                                            if cfg.links.enabled else None)
            return SearchResults([*hits, *linked], query=query)

    def list(
        self,
        *,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        namespace_prefix: str | None = None,
        kind: str | Sequence[str] | None = None,
        tags: str | Sequence[str] | None = None,
        category: str | Sequence[str] | None = None,
        source: str | Sequence[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        where: Mapping[str, Any] | Filter | None = None,
        ids: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
        order_by: str = "created_at",
        descending: bool = False,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> list[Memory]:
        """Memories matching the filters, without ranking (``order_by`` a column)."""
        with self.kernel.session():
            scope = scope_for(
                namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, ids=ids, where=where, tags=tags,
                category=category, source=source, since=since, until=until,
                live_at=None if include_expired else to_iso(self.kernel.clock.now()),
                current_only=not include_superseded,
            )
            return self.kernel.memories.select(scope, order_by=order_by, descending=descending, limit=limit,
                                               offset=offset)

    def count(
        self,
        *,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        namespace_prefix: str | None = None,
        kind: str | Sequence[str] | None = None,
        where: Mapping[str, Any] | Filter | None = None,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> int:
        """How many memories match."""
        with self.kernel.session():
            scope = scope_for(
                namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, ids=None, where=where, tags=None,
                category=None, source=None, since=None, until=None,
                live_at=None if include_expired else to_iso(self.kernel.clock.now()),
                current_only=not include_superseded,
            )
            return self.kernel.memories.count(scope)

    def namespaces(
        self,
        prefix: str | None = None,
        *,
        kind: str | Sequence[str] | None = None,
        include_expired: bool = True,
    ) -> dict[str, int]:
        """Every namespace (starting with ``prefix``) and how many memories it holds.

        ``kind`` counts only memories of those kinds (namespaces without any are left out);
        ``include_expired=False`` leaves out memories whose TTL has passed but that no sweep
        has deleted yet, as search and ``list`` do.
        """
        with self.kernel.session():
            scope = scope_for(
                namespace=None, namespace_prefix=prefix or "", kind=kind, ids=None, where=None, tags=None,
                category=None, source=None, since=None, until=None,
                live_at=None if include_expired else to_iso(self.kernel.clock.now()), current_only=False,
            )
            return self.kernel.memories.count_by_namespace(scope)

    # -- lifecycle basics ----------------------------------------------------------------------

    def sweep_expired(self) -> int:
        """Permanently delete the memories whose ``expires_at`` has passed (TTL); return how many."""
        kernel = self.kernel
        with kernel.session():
            rowids = kernel.memories.expired_rowids()
            if not rowids:
                return 0
            with kernel.session(write=True):
                return kernel.memories.delete_rows(rowids)


def _prepared_ahead(prepare: Callable[[list[NewMemory]], list[Prepared]],
                    batches: list[list[NewMemory]]) -> Iterator[list[Prepared]]:
    """``map(prepare, batches)``, each batch prepared on a worker thread while the caller writes
    the one before. An error in a batch surfaces when the caller reaches it, after every batch
    before it was written, as without the thread."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="openkoi-prepare") as pool:
        pending = pool.submit(prepare, batches[0])
        for following in [*batches[1:], None]:
            prepared = pending.result()
            if following is not None:
                pending = pool.submit(prepare, following)
            yield prepared


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off during a bulk load (as ``timeit`` turns it off while
    it times), then as it was: a load makes no reference cycles, but its allocations set off full
    collections that walk every live object, the caller's too (0.5-2 s of a 100k load here)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _as_new_memory(raw: NewMemory | Mapping[str, Any] | str, namespace: str | None) -> NewMemory:
    if isinstance(raw, NewMemory):
        item = raw
        if namespace is not None and item.namespace == DEFAULT_NAMESPACE:
            item = NewMemory(**{**item.__dict__, "namespace": namespace})
        return item
    if isinstance(raw, str):
        return NewMemory(text=raw, namespace=namespace or DEFAULT_NAMESPACE)
    if isinstance(raw, Mapping):
        data = dict(raw)
        if namespace is not None:
            data.setdefault("namespace", namespace)
        unknown = set(data) - set(NewMemory.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown memory fields {sorted(unknown)}; known: {sorted(NewMemory.__dataclass_fields__)}")
        try:
            return NewMemory(**data)
        except TypeError as exc:
            raise ValueError(f"invalid memory {raw!r}: {exc}") from None
    raise TypeError(f"add_many takes NewMemory objects, dicts or strings, got {type(raw).__name__}")

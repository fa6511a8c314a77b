"""``MemoryStore``: the one object users open. One SQLite file holds everything.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     mid = store.add("The production server runs on Fly.io in Frankfurt", namespace="user:alice")
...     [hit.id == mid for hit in store.search("where does production run?", namespace="user:alice")]
[True]
"""

from __future__ import annotations

import contextlib
import html
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .archive import Archive
from .clock import Clock
from .config import Config
from .db import Backend
from .embed import Embedder
from .erasure import EraseReport, Erasure
from .index.filters import Filter
from .kernel import Domain, Kernel
from .lifecycle.maintenance import Maintenance
from .llm import TextModel
from .memories import DEFAULT_NAMESPACE, AddResult, Memory, NewMemory
from .memories.facts import Facts
from .memories.service import MemoryService, Progress
from .opening import named_embedder, open_kernel
from .reembedding import reembed
from .registry import DOMAINS
from .search import SearchResults

if TYPE_CHECKING:
    from .context import MemoryManager
    from .conversations import Conversations
    from .documents import KnowledgeBase
    from .episodes import Episodes
    from .insights import Insights
    from .inspection import Inspector
    from .kv import KeyValueStore
    from .learnings import Learnings
    from .lifecycle.forgetting import ForgettingEngine
    from .lifecycle.links import LinkGraph
    from .lifecycle.maintenance import MaintenanceReport
    from .lifecycle.pruning import Pruner
    from .procedures import Procedures
    from .recall import Historian
    from .skills import Skills
    from .tasks import TaskMemory
    from .usage import Usage
    from .workspace import Workspaces

__all__ = ["MemoryStore", "StoreStats"]


@dataclass(frozen=True)
class StoreStats:
    """What is in a store, for ``openkoi-memory stats`` and notebooks."""

    path: str
    file_bytes: int
    schema_version: int
    driver: str
    sqlite_version: str
    embedder: str
    dims: int
    vector_index: str
    memories: int
    by_kind: dict[str, int] = field(default_factory=dict)
    by_namespace: dict[str, int] = field(default_factory=dict)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                       for k, v in self.__dict__.items())
        return f"<table>{rows}</table>"


class MemoryStore:
    """Long-term memory in one SQLite file: add, search, feedback, lifecycle.

    Open with :meth:`open`; use as a context manager or call :meth:`close`. A store is
    safe to share between threads, and several processes may open the same file. Each domain
    of the registry (:mod:`shared_core.registry`) is an attribute: ``store.learnings``,
    ``store.conversations``, ``store.documents``...
    """

    if TYPE_CHECKING:  # the registry's domains, reached through __getattr__
        memories: MemoryService
        archive: Archive
        facts: Facts
        links: LinkGraph
        episodes: Episodes
        procedures: Procedures
        skills: Skills
        usage: Usage
        kv: KeyValueStore
        learnings: Learnings
        tasks: TaskMemory
        recall: Historian
        insights: Insights
        conversations: Conversations
        forgetting: ForgettingEngine
        documents: KnowledgeBase
        workspaces: Workspaces
        memory_manager: MemoryManager
        erasure: Erasure
        pruning: Pruner
        maintenance: Maintenance
        inspector: Inspector

    def __init__(self, kernel: Kernel) -> None:
        """A store over an opened kernel; use :meth:`open`."""
        self.kernel = kernel

    @property
    def embedder(self) -> Embedder:
        """The embedder of this memory (``reembed`` switches it)."""
        return self.kernel.embedder

    @property
    def config(self) -> Config:
        return self.kernel.config

    @property
    def clock(self) -> Clock:
        return self.kernel.clock

    @property
    def text_model(self) -> TextModel | None:
        """Optional: summaries and fact/learning extraction use it, with rule-based fallbacks."""
        return self.kernel.text_model

    @text_model.setter
    def text_model(self, model: TextModel | None) -> None:
        self.kernel.text_model = model

    # -- opening and closing ----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | str | None = None,
        config: Config | Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        read_only: bool = False,
        reembed: bool = False,
        text_model: TextModel | None = None,
        domains: Sequence[Domain[Any]] = DOMAINS,
    ) -> MemoryStore:
        """Open (creating if needed) a memory: an SQLite file, or a PostgreSQL database.

        ``path``: a file, ``":memory:"``, a ``postgresql://user:pw@host/db[?schema=name]`` URL (a
        memory shared by several processes and machines; docs/scaling.md), or ``None`` for
        ``$OPENKOI_DATABASE_URL``, else ``[database] url`` from the config, else
        ``<data dir>/openkoi.db`` (the XDG data dir, or ``$OPENKOI_DATA``). ``embedder``: an embedder, or its
        name (``"openai/text-embedding-3-small"``, ``"ollama/nomic-embed-text"``, ...; docs/embedders.md);
        defaults to what the database was built with, else ``[models] embedder`` from the config (the
        hashing embedder). ``config``: a
        :class:`Config`, or a dict of overrides on top of ``config.toml``. ``reembed=True``
        lets a different embedder take over an existing database by re-embedding everything.
        ``text_model``: optional; summaries and fact/learning extraction use it, with rule-based
        fallbacks when it is absent or answers badly. ``domains``: the registry the store builds its
        domains from (default :data:`shared_core.registry.DOMAINS`; an application adds its own
        domains to it, docs/architecture.md).
        """
        return cls(open_kernel(path, embedder=embedder, config=config, clock=clock, read_only=read_only,
                               reembed=reembed, text_model=text_model, domains=domains))

    def close(self) -> None:
        """Close the file (unfinished tasks are flushed first). Further use raises :class:`StoreClosedError`.

        A store dropped without ``close()`` lets go of its file and connections when the garbage
        collector frees it (without flushing unfinished tasks): per-request code cannot run out
        of file descriptors.
        """
        self.kernel.close()

    @property
    def closed(self) -> bool:
        return self.kernel.backend.closed

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({self.path!r}, embedder={self.embedder.name!r})"

    @property
    def path(self) -> str:
        return self.kernel.backend.path

    @property
    def data_dir(self) -> Path:
        """Where the files that belong to this database go (transcripts, skills, workspace).

        ``openkoi.db`` keeps OpenKoi's layout: its folder (``sessions/``, ``skills/`` beside it).
        Any other file gets a folder of its own, ``<file>.files/``, so two memory files in one
        folder never share transcripts. A ``":memory:"`` store gets a private temporary folder,
        removed on close: nothing of it lands in the user's data directory. The whole layout, and
        what happens to a folder a deleted database left: :mod:`shared_core.files`, docs/files.md.
        """
        return self.kernel.data_dir

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several writes into one atomic transaction (nested calls are savepoints)."""
        with self.kernel.backend.transaction():
            yield

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
        return self.memories.add(
            text, id=id, kind=kind, namespace=namespace, tags=tags, category=category, source=source,
            metadata=metadata, importance=importance, confidence=confidence, pinned=pinned,
            session_id=session_id, task_id=task_id, owner_id=owner_id, expires_at=expires_at, ttl=ttl,
            created_at=created_at, vector=vector, embedding_text=embedding_text, dedup=dedup,
            supersedes=supersedes,
        )

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
        return self.memories.add_many(
            items, namespace=namespace, batch_size=batch_size, dedup=dedup, progress=progress,
        )

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
        """Fix or update a memory in place (Koshi's update): score kept, ``last_hit_at`` refreshed, re-indexed.

        Only the arguments given change; ``tags`` and ``metadata`` replace the old values.
        """
        return self.memories.update(
            id, text, tags=tags, metadata=metadata, category=category, importance=importance,
            confidence=confidence, pinned=pinned, expires_at=expires_at, vector=vector, namespace=namespace,
        )

    def delete(self, ids: str | Sequence[str], *, namespace: str | None = None, missing_ok: bool = False) -> int:
        """Permanently delete memories (row, index entry, vector); return how many were deleted.

        Deleting is an explicit request; the lifecycle itself only ever archives.
        """
        return self.memories.delete(ids, namespace=namespace, missing_ok=missing_ok)

    def delete_where(
        self,
        *,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        namespace_prefix: str | None = None,
        kind: str | Sequence[str] | None = None,
        where: Mapping[str, Any] | Filter | None = None,
    ) -> int:
        """Permanently delete every memory matching the filters (e.g. all chunks of one source document)."""
        return self.memories.delete_where(
            namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, where=where,
        )

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
        return self.memories.set_expiry(ids, ttl=ttl, expires_at=expires_at, namespace=namespace)

    # -- feedback ----------------------------------------------------------------------------

    def reinforce(self, id: str, *, namespace: str | None = None, weight: float | None = None) -> Memory:  # noqa: A002
        """This memory helped: score += 3 (``memory.reinforce_weight``), ``last_hit_at`` = now."""
        return self.memories.reinforce(id, namespace=namespace, weight=weight)

    def demote(self, id: str, *, namespace: str | None = None, weight: float | None = None) -> Memory:  # noqa: A002
        """This memory is wrong, stale or irrelevant: score -= 1 (``memory.demote_weight``)."""
        return self.memories.demote(id, namespace=namespace, weight=weight)

    # -- reading ---------------------------------------------------------------------------

    def get(self, id: str, *, namespace: str | None = None) -> Memory:  # noqa: A002
        """The memory with this id (in ``namespace``, if given), or :class:`NotFoundError`."""
        return self.memories.get(id, namespace=namespace)

    def history(self, id: str) -> list[Memory]:  # noqa: A002
        """Every version of a memory, oldest first, linked by ``supersedes`` (see :mod:`shared_core.memories.versioning`)."""
        return self.kernel.service(Facts).history(id)

    def get_many(self, ids: Sequence[str], *, namespace: str | None = None) -> list[Memory]:
        """The memories that exist among ``ids``, in the order asked; missing ids are skipped."""
        return self.memories.get_many(ids, namespace=namespace)

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
        live hit's ``access_count`` goes up by one unless ``track_access=False`` (OpenLoomi's access tracking), and
        the top hits are linked as co-recalled (Koshi's Hebbian links; ``links.enabled``).
        ``expand_links`` (default ``links.expand_by_default``) appends strongly linked neighbours
        of the hits, in the same scope, marked ``parts.fusion == "link"``. ``rank=False`` orders
        by relevance alone, without the feedback and recency weights (for adapters whose
        framework promises plain similarity order, such as vector stores). A time in the question
        ("last Tuesday", "in March", "two weeks ago", "before the trip"), read relative to
        ``asked_at`` (default: the store's clock), raises the memories created in that window
        (``time_phrases="boost"``, the default ``search.time_phrases``), keeps only them
        (``"narrow"``) or is ignored (``"off"``).
        """
        return self.memories.search(
            query, vector=vector, namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, tags=tags,
            category=category, source=source, since=since, until=until, where=where, ids=ids, limit=limit,
            offset=offset, fusion=fusion, vector_weight=vector_weight, min_score=min_score,
            include_expired=include_expired, include_superseded=include_superseded,
            include_archive=include_archive, mmr_lambda=mmr_lambda, fetch_k=fetch_k, track_access=track_access,
            expand_links=expand_links, rank=rank,
            time_phrases=time_phrases, asked_at=asked_at,
        )

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
        return self.memories.list(
            namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, tags=tags, category=category,
            source=source, since=since, until=until, where=where, ids=ids, limit=limit, offset=offset,
            order_by=order_by, descending=descending, include_expired=include_expired,
            include_superseded=include_superseded,
        )

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
        return self.memories.count(
            namespace=namespace, namespace_prefix=namespace_prefix, kind=kind, where=where,
            include_expired=include_expired, include_superseded=include_superseded,
        )

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
        return self.memories.namespaces(prefix, kind=kind, include_expired=include_expired)

    def stats(self) -> StoreStats:
        """What is in the store: size, schema, driver, embedder, memories by kind and namespace."""
        db = self.kernel.backend
        with self.kernel.session():
            by_kind = self.kernel.memories.count_by_kind()
            by_ns = self.namespaces()
            size = 0 if db.capabilities.in_memory else db.storage_bytes()
            vector_index = self.kernel.vectors.name
            return StoreStats(
                path=self.path, file_bytes=size, schema_version=db.schema_version(),
                driver=db.driver.name, sqlite_version=db.driver.sqlite_version,
                embedder=self.embedder.name, dims=self.embedder.dims, vector_index=vector_index,
                memories=sum(by_kind.values()), by_kind=by_kind, by_namespace=by_ns,
            )

    # -- lifecycle basics ----------------------------------------------------------------------

    def sweep_expired(self) -> int:
        """Permanently delete the memories whose ``expires_at`` has passed (TTL); return how many."""
        return self.memories.sweep_expired()

    def erase_namespace(self, namespace: str) -> EraseReport:
        """Remove every trace of a namespace (a user, an agent): rows, index entries, vectors,
        archive, transcripts, uploads, workspace files, and the bytes they left in the file.

        On SQLite the deletes zero their content (``secure_delete``), the FTS5 indexes are merged,
        the file is rewritten (``VACUUM``) and the write-ahead log cut to zero bytes. While another
        connection reads a snapshot from before the erase, SQLite must keep the old pages: the
        report's ``status`` is then ``pending`` and ``remaining`` says why; the erase finishes by
        itself as soon as that read ends (or call :meth:`finish_erase`). On PostgreSQL the rows go
        and the tables are vacuumed; ``notes`` say what the server keeps (docs/privacy.md).
        """
        return self.kernel.service(Erasure).erase(namespace)

    def finish_erase(self, *, wait: float = 0.0) -> EraseReport:
        """Finish an erase that reported ``pending`` (from any process); ``wait``: seconds to keep
        trying while another connection's read holds the old pages. A no-op when none is pending."""
        return self.kernel.service(Erasure).finish(wait=wait)

    def verify_erase(self, namespace: str | None = None) -> EraseReport:
        """What is left: the namespace's rows and files (if given), and whether an unfinished erase
        may still have bytes in the file or its log. ``report.complete`` is True when nothing is."""
        return self.kernel.service(Erasure).verify(namespace)

    # -- re-embedding ------------------------------------------------------------------------

    def reembed(self, embedder: Embedder | str | None = None, *, batch_size: int = 256,
                progress: Progress | None = None) -> int:
        """Re-embed what needs it; return how many memories were re-embedded.

        With a different ``embedder`` (an embedder or its name, such as ``"openai/text-embedding-3-small"``,
        or other dims): everything, and the database then records the new embedder. Otherwise: only rows whose versioned FNV-64a content hash (OpenLoomi's) or
        embedder name no longer matches. The embedding (minutes with a real model) runs without
        the store's lock and outside any write transaction, so searches go on and other writers
        get their turns; only the writing of each batch (or, for a new embedder, of all the new
        vectors at the end) holds the memory.
        """
        if isinstance(embedder, str):
            embedder = named_embedder(embedder, self.kernel.config)
        return reembed(self.kernel, embedder, batch_size=batch_size, progress=progress)

    # -- for domain modules and adapters --------------------------------------------------------

    @property
    def db(self) -> Backend:
        """The underlying connection wrapper (domain modules run their SQL through it)."""
        return self.kernel.backend

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the store's embedder (unit-length float32 rows)."""
        return self.kernel.embed(texts)

    def __getattr__(self, name: str) -> Any:
        """``store.<domain>``: the service of a domain of the registry (:mod:`shared_core.registry`)."""
        if name.startswith("_") or "kernel" not in self.__dict__:
            raise AttributeError(name)
        try:
            return self.kernel.domain(name)
        except LookupError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}") from None

    def maintain(self, *, if_due: bool = False, steps: Sequence[str] | None = None) -> MaintenanceReport:
        """Run decay, TTL sweep, forgetting, size pruning, re-embedding and the other lifecycle jobs.

        Idempotent (a second run right after changes nothing), safe from several processes at once
        (the second returns ``status == "skipped_locked"``); ``if_due=True`` runs only when
        ``memory.prune_schedule`` (Koshi's: "0 4 * * *") has fired since the last run.
        """
        return self.kernel.service(Maintenance).run(if_due=if_due, steps=steps)

"""The kernel: what every service of one memory needs, and the one way in to its backend.

A :class:`Kernel` holds the backend (a :class:`~shared_core.db.Backend`: the SQLite
:class:`~shared_core.db.Database` or the :class:`~shared_core.db.postgres.PostgresDatabase`), the clock, the
config, the embedder, the optional text model, the search machinery (vector and keyword indexes,
the memory repository, the archive, the searcher) and the :class:`Hooks`. Services are built with
the kernel, never with the :class:`~shared_core.store.MemoryStore` that users open: the kernel
builds each :class:`Domain` of the registry (:mod:`shared_core.registry`) on first use, and a
service that needs another asks for it with :meth:`Kernel.service`.

:meth:`Kernel.session` is how code uses the backend: it holds the memory's lock, refuses a closed
memory and, for ``write=True``, runs the block in one transaction (a savepoint when nested).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import numpy as np

from .archive.repository import ArchiveRepository
from .categories import Categorizer
from .clock import Clock
from .config import Config
from .db import Backend
from .embed import Embedder
from .errors import OpenKoiError
from .files import data_dir_for
from .index.keyword import keyword_index_for
from .index.protocols import KeywordIndex, VectorIndex
from .index.vectors import vector_index_for
from .llm import TextModel
from .memories import Memory
from .memories.repository import MemoryRepository
from .search import Searcher

__all__ = ["Kernel", "Hooks", "Domain"]

logger = logging.getLogger("openkoi.store")

S = TypeVar("S")


class Hooks:
    """What runs at given moments: erasers (``erase_namespace``), embedding-text builders (a memory
    of that kind is embedded from ``builder(memory)``, not its text), closers (on close) and
    session detachers (sessions are about to be deleted: rows of other domains that point at
    them let go, inside the same transaction)."""

    def __init__(self) -> None:
        self.erasers: list[Callable[[str], object]] = []
        self.embedding_texts: dict[str, Callable[[Memory], str]] = {}
        self.closers: list[Callable[[], object]] = []
        self.session_detachers: list[Callable[[Sequence[str]], object]] = []

    def sessions_deleted(self, session_ids: Sequence[str]) -> None:
        """Tell every domain whose rows point at these sessions that they are about to go."""
        if session_ids:
            for detach in self.session_detachers:
                detach(session_ids)

    def embedding_text(self, memory: Memory) -> str:
        """The text ``memory`` is embedded from."""
        builder = self.embedding_texts.get(memory.kind)
        return builder(memory) if builder else memory.text


@dataclass(frozen=True)
class Domain(Generic[S]):
    """One line of the registry: a domain's name (``store.<name>``), its service (built with the
    kernel on first use), the memory kinds it owns, and what the kernel runs for it: ``eraser``
    on ``erase_namespace``, ``embedding_texts`` (kind -> builder) when such a memory is embedded,
    ``closer`` on close (once built), ``on_open`` when the memory opens (building the service) and
    ``detach_sessions`` before conversation sessions are deleted (its rows that point at them let go)."""

    name: str
    service: Callable[[Kernel], S]
    kinds: tuple[str, ...] = ()
    eraser: Callable[[S, str], object] | None = None
    embedding_texts: Mapping[str, Callable[[S, Memory], str]] = field(default_factory=dict)
    closer: Callable[[S], object] | None = None
    on_open: Callable[[S], object] | None = None
    detach_sessions: Callable[[S, Sequence[str]], object] | None = None


class Kernel:
    """The backend, clock, config, embedder, text model, search index, hooks and domains of one memory."""

    def __init__(self, backend: Backend, *, embedder: Embedder, config: Config, clock: Clock,
                 text_model: TextModel | None = None, domains: Sequence[Domain[Any]] = ()) -> None:
        self.backend = backend
        self.config = config
        self.clock = clock
        self.text_model = text_model  # optional: summaries and extraction use rules without one
        self.hooks = Hooks()
        self._data_dir: Path | None = None
        self._categorizer: tuple[Any, Categorizer] | None = None
        self.embedder = embedder
        self._build_index()
        self.domains: dict[str, Domain[Any]] = {}
        self._names: dict[Callable[[Kernel], Any], str] = {}  # service factory -> domain name
        self._services: dict[str, Any] = {}
        for domain in domains:
            self._register(domain)

    def _register(self, domain: Domain[Any]) -> None:
        if domain.name in self.domains:
            raise ValueError(f"two domains are named {domain.name!r}")
        self.domains[domain.name] = domain
        self._names[domain.service] = name = domain.name
        if domain.eraser is not None:
            eraser = domain.eraser
            self.hooks.erasers.append(lambda namespace: eraser(self.domain(name), namespace))
        for kind, builder in domain.embedding_texts.items():
            self.hooks.embedding_texts[kind] = functools.partial(self._embedding_text, name, builder)
        if domain.closer is not None:
            closer = domain.closer
            self.hooks.closers.append(lambda: name in self._services and closer(self._services[name]))
        if domain.detach_sessions is not None:
            detach = domain.detach_sessions
            self.hooks.session_detachers.append(lambda ids: detach(self.domain(name), ids))

    def _embedding_text(self, name: str, builder: Callable[[Any, Memory], str], memory: Memory) -> str:
        return builder(self.domain(name), memory)

    def _build_index(self) -> None:
        # the seam: SQLite (FTS5, sqlite-vec) or PostgreSQL (tsvector, pgvector) under the same repositories
        self.vectors: VectorIndex = vector_index_for(self.backend, self.embedder.dims, self.config.search,
                                                     self.config.database)
        self.keyword: KeywordIndex = keyword_index_for(self.backend, self.config.search)
        self.memories = MemoryRepository(self.backend, self.vectors, self.embedder, self.clock, self.config)
        self.archive = ArchiveRepository(self.backend, self.memories, self.clock, self.keyword)
        self.searcher = Searcher(self.config, self.keyword, self.vectors, self.memories, self.embedder, self.clock,
                                 archive=self.archive)

    def use_embedder(self, embedder: Embedder) -> None:
        """Search and write with ``embedder`` from now on (the caller rebuilds the vectors)."""
        self.embedder = embedder
        self._build_index()

    # -- domains --------------------------------------------------------------------------------

    def domain(self, name: str) -> Any:
        """The service of the domain ``name``, built on first use (once, under the memory's lock)."""
        try:
            return self._services[name]
        except KeyError:
            pass
        try:
            domain = self.domains[name]
        except KeyError:
            raise LookupError(f"no domain named {name!r}; known: {', '.join(self.domains)}") from None
        with self.backend.lock:
            if name not in self._services:
                self._services[name] = domain.service(self)
            return self._services[name]

    def service(self, factory: Callable[[Kernel], S]) -> S:
        """The service a registered domain builds with ``factory`` (its class): ``kernel.service(Facts)``."""
        try:
            name = self._names[factory]
        except KeyError:
            raise LookupError(f"{getattr(factory, '__name__', factory)!r} is not the service of a registered domain") \
                from None
        return cast(S, self.domain(name))

    def open_domains(self) -> None:
        """Run the ``on_open`` hooks (when the memory opens)."""
        for domain in self.domains.values():
            if domain.on_open is not None:
                domain.on_open(self.domain(domain.name))

    @property
    def categorizer(self) -> Categorizer:
        """The categoriser the ``memory`` settings describe (rules, or the text model first)."""
        cfg = self.config.memory
        key = (cfg.categorizer, self.text_model if cfg.categorizer == "model" else None,
               tuple((k, tuple(v)) for k, v in cfg.category_keywords.items()), cfg.default_category)
        if self._categorizer is None or self._categorizer[0] != key:
            self._categorizer = (key, Categorizer.from_settings(cfg, self.text_model))
        return self._categorizer[1]

    # -- the backend ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def session(self, *, write: bool = False) -> Iterator[Backend]:
        """The backend under the memory's lock, checked open; ``write=True``: in one transaction."""
        backend = self.backend
        with backend.lock:
            backend.check_open()
            if write:
                with backend.transaction():
                    yield backend
            else:
                yield backend

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the memory's embedder (unit-length float32 rows)."""
        return self.memories.embed(texts)

    # -- files ----------------------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        """Where the files of this memory go (see :attr:`MemoryStore.data_dir`)."""
        if self._data_dir is None:
            folder = data_dir_for(self.backend, self.config)
            if folder is None:
                folder = Path(tempfile.mkdtemp(prefix="openkoi-memory-"))
                # removed on close, or when the kernel is collected without one
                self.hooks.closers.append(weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True))
            self._data_dir = folder
        return self._data_dir

    @property
    def has_data_dir(self) -> bool:
        """Whether :attr:`data_dir` exists without creating one (a ``:memory:`` store makes its own on first use)."""
        return self._data_dir is not None or self.backend.path != ":memory:"

    # -- closing --------------------------------------------------------------------------------

    def close(self) -> None:
        """Run the closers, write pending access counts, close the backend."""
        backend = self.backend
        if not backend.closed:
            for closer in list(self.hooks.closers):
                try:
                    closer()
                except Exception:  # closing must not fail half-way; the journal keeps what was not flushed
                    logger.exception("a close hook failed")
            if not backend.read_only:
                try:  # access counts that searches kept while another writer had the memory
                    self.memories.flush_access()
                except OpenKoiError as exc:
                    logger.warning("access counts not written at close: %s", exc)
            self.vectors.close()
        backend.close()

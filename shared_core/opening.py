"""Opening a memory: where it is, which embedder it was built with, its migrations, then its kernel.

``MemoryStore.open`` is this module's :func:`open_kernel` wrapped in a store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .clock import Clock, SystemClock, to_iso
from .config import Config
from .db import Backend, is_postgres_url, open_database
from .embed import Embedder, HashingEmbedder, check_dims, check_embedder, embedder_from_name
from .erasure import Erasure
from .errors import ConfigError, EmbedderMismatchError, SchemaError
from .files import data_dir_for, set_aside_leftovers
from .kernel import Domain, Kernel
from .llm import TextModel
from .reembedding import switch_embedder
from .registry import DOMAINS

__all__ = ["open_kernel", "default_target", "named_embedder"]

_HASHING = ("hashing",)


def open_kernel(
    path: str | os.PathLike[str] | None = None,
    *,
    embedder: Embedder | str | None = None,
    config: Config | Mapping[str, Any] | None = None,
    clock: Clock | None = None,
    read_only: bool = False,
    reembed: bool = False,
    text_model: TextModel | None = None,
    domains: Sequence[Domain[Any]] = DOMAINS,
) -> Kernel:
    """The kernel of the memory at ``path`` (see ``MemoryStore.open``, which takes the same arguments)."""
    cfg = config if isinstance(config, Config) else Config.load(overrides=config)
    clock = clock or SystemClock()
    target = default_target(cfg) if path is None else os.fspath(path)
    if target != ":memory:" and not is_postgres_url(target):
        target = str(Path(target).expanduser())
    if isinstance(embedder, str):  # "openai/text-embedding-3-small", ...: built before any file exists
        embedder = named_embedder(embedder, cfg)
    configured = None
    if embedder is None and not read_only and _is_new_file(target) and cfg.models.embedder not in _HASHING:
        configured = named_embedder(cfg.models.embedder, cfg)  # a missing key is reported before the file exists
    checked = False
    if embedder is not None and not read_only and _is_new_file(target):
        check_embedder(embedder)
        check_dims(embedder)  # a wrong dims is refused before the file exists
        checked = True
    db = open_database(target, read_only=read_only, settings=cfg.database)
    try:
        return _attach(db, embedder, cfg, clock, reembed, text_model, domains, dims_checked=checked,
                       configured=configured)
    except BaseException:
        db.close()
        raise


def _attach(db: Backend, embedder: Embedder | None, cfg: Config, clock: Clock, reembed: bool,
            text_model: TextModel | None, domains: Sequence[Domain[Any]], *, dims_checked: bool = False,
            configured: Embedder | None = None) -> Kernel:
    """Migrate the opened database, settle its embedder and build its kernel."""
    version = db.schema_version()
    if version == 0 and not db.read_only:  # a new memory
        if embedder is not None and not dims_checked:
            check_embedder(embedder)
            check_dims(embedder)  # (a PostgreSQL schema) its vectors are sized for good by the migration
        folder = data_dir_for(db, cfg)
        if folder is not None:  # a deleted database's folder is not this one's
            set_aside_leftovers(folder, clock.now(), shared=folder == Path(db.path).parent)
    recorded_name = recorded_dims = None
    if version >= 2:
        recorded_name = db.get_meta("embedder_name")
        dims_text = db.get_meta("embedder_dims")
        recorded_dims = int(dims_text) if dims_text else None
    if embedder is None:
        if recorded_name:
            try:
                embedder = named_embedder(recorded_name, cfg, dims=recorded_dims)
            except ConfigError:  # e.g. no API key in the environment: its own message says which to set
                raise
            except (ValueError, ImportError, FileNotFoundError) as exc:
                raise EmbedderMismatchError(
                    f"{db.path} was built with the embedder {recorded_name!r}, which cannot be rebuilt here "
                    f"({exc}); pass it in code: MemoryStore.open(path, embedder=...)"
                ) from None
        elif version == 1:
            # the seed schema, from before files recorded their embedder: its vectors were sized by the
            # default of that time, the hashing embedder
            embedder = HashingEmbedder()
        else:
            embedder = configured or (HashingEmbedder() if cfg.models.embedder in _HASHING else
                                      named_embedder(cfg.models.embedder, cfg))
    check_embedder(embedder)
    if db.read_only and version == 0:
        raise SchemaError(f"{db.path} is not an openkoi-memory database yet; open it writable once to create it")
    if not db.read_only:
        db.migrate(dims=recorded_dims or embedder.dims, now_iso=to_iso(clock.now()))
        if recorded_name is None:  # new, or migrated by a process that stopped before recording it
            with db.transaction():
                if db.get_meta("embedder_name") is None:  # another process may have recorded it
                    db.set_meta("embedder_name", embedder.name)
                    db.set_meta("embedder_dims", str(embedder.dims))
                    db.set_meta("created_at", to_iso(clock.now()))
            recorded_name = db.get_meta("embedder_name")
            dims_text = db.get_meta("embedder_dims")
            recorded_dims = int(dims_text) if dims_text else None
    elif version < db.latest_version():
        raise SchemaError(f"{db.path} needs a schema upgrade; open it once without read_only=True")
    kernel = Kernel(db, embedder=embedder, config=cfg, clock=clock, text_model=text_model, domains=domains)
    kernel.open_domains()
    if recorded_name and (recorded_name != embedder.name or recorded_dims != embedder.dims):
        if not reembed:
            raise EmbedderMismatchError(
                f"{db.path} was built with the embedder {recorded_name!r} ({recorded_dims} dims), not "
                f"{embedder.name!r} ({embedder.dims} dims); open it with that embedder, or re-embed it with "
                "MemoryStore.open(path, embedder=..., reembed=True)"
            )
        switch_embedder(kernel, embedder)
    else:
        kernel.vectors.ensure_ready()
    if not db.read_only:
        kernel.service(Erasure).resume()  # an erase another process left pending, if its reader has gone
    return kernel


def named_embedder(name: str, cfg: Config, *, dims: int | None = None) -> Embedder:
    """The embedder ``name`` stands for, with the ``[models]`` settings (the server's URL, the batch size)."""
    return embedder_from_name(name, dims=dims, base_url=cfg.models.embedder_url or None,
                              batch_size=cfg.models.embedder_batch_size or None)


def _is_new_file(target: str) -> bool:
    """True for ``:memory:`` and a file that does not exist yet; False for PostgreSQL (and an existing but
    empty file, which :func:`_attach` checks once it has found no schema in it)."""
    if target == ":memory:":
        return True
    return not is_postgres_url(target) and not os.path.lexists(target)


def default_target(cfg: Config) -> str:
    """What ``MemoryStore.open()`` opens with no path: ``$OPENKOI_DATABASE_URL``, ``[database] url``, or the data dir's file."""
    return (os.environ.get("OPENKOI_DATABASE_URL", "").strip() or cfg.database.url.strip()
            or str(Path(cfg.data_dir) / "openkoi.db"))

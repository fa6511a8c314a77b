"""The files a memory is made of on disk, and what a deleted database left behind.

A memory in ``agent.db`` is:

=================== ===========================================================================
``agent.db``        the database: every memory, message, index and setting
``agent.db-wal``    SQLite's write-ahead log (pages committed but not yet copied into the file)
``agent.db-shm``    the log's shared index (SQLite recreates it)
``agent.db-lock``   the queue writers of this process and others wait in (empty)
``agent.db.files/`` the data folder: ``sessions/`` (JSONL transcripts), ``workspaces/`` (Markdown
                    workspace files), ``skills/`` (SKILL.md files), ``uploads/`` (REST uploads, a
                    folder per namespace: :func:`upload_folder`)
=================== ===========================================================================

``erase_namespace`` removes a namespace's files from all of these (:mod:`shared_core.erasure`).

A file named ``openkoi.db`` keeps seed 000's layout instead: its folder is the data folder
(``sessions/``, ``skills/``, ``workspaces/`` beside it). A ``":memory:"`` store has a private
temporary folder, removed on close. To copy or move a memory, close every store open on it, then
copy the database and its data folder; ``-wal``, ``-shm`` and ``-lock`` are working files of open
stores (the log is folded into the database when the last one closes).

**Leftovers.** A new database whose data folder already exists (the database was deleted, its
folder was not) would inherit another database's transcripts and workspace files: the
transcripts of a deleted ``agent.db`` even refuse to be written to by a new one. When a database
is created, :func:`set_aside_leftovers` renames such a folder to ``<name>.old-<time>`` (nothing
is deleted) and logs where it went.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from .config import Config
from .conversations.transcripts import (
    MARKER as TRANSCRIPT_MARKER,  # marks a sessions/ folder as a store's
)

__all__ = ["data_dir_of", "data_dir_for", "set_aside_leftovers", "LEGACY_NAME", "UPLOADS", "upload_folder", "upload_roots",
           "record_upload_root"]

logger = logging.getLogger("openkoi.store")

LEGACY_NAME = "openkoi.db"  # seed 000's file: its folder is its data folder
UPLOADS = "uploads"  # the REST API's uploaded files, one folder per namespace
_UPLOAD_ROOTS_KEY = "upload_roots"  # store_meta: upload folders a server was given besides <data dir>/uploads


def data_dir_of(path: str) -> Path:
    """The data folder of the database file ``path`` (see the module docs)."""
    file = Path(path)
    return file.parent if file.name == LEGACY_NAME else file.parent / f"{file.name}.files"


def data_dir_for(db: Any, cfg: Config) -> Path | None:
    """The data folder of the memory ``db``: its file's, or one under the data dir for a PostgreSQL
    memory (named after its URL); None for ``:memory:``."""
    if db.capabilities.shared:
        return Path(cfg.data_dir) / "postgres" / _slug(db.path)
    if db.capabilities.in_memory or db.path == ":memory:":  # the test suite's PostgreSQL stand-in for one too
        return None
    return data_dir_of(db.path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.split("://", 1)[-1]).strip("_")[:120] or "postgres"


def set_aside_leftovers(data_dir: Path, now: datetime, *, shared: bool) -> list[Path]:
    """Rename what a deleted database left in ``data_dir``; return the new names.

    ``shared``: the folder also holds other things (seed 000's layout, the folder of
    ``openkoi.db``): only a ``sessions/`` folder that a store has marked as its own is set aside.
    Otherwise the whole folder belongs to the database and is set aside when it is not empty.
    """
    if shared:
        sessions = data_dir / "sessions"
        candidates = [sessions] if (sessions / TRANSCRIPT_MARKER).is_file() else []
    else:
        candidates = [data_dir] if data_dir.is_dir() and any(data_dir.iterdir()) else []
    moved = []
    for folder in candidates:
        target = _free_name(folder, now)
        try:
            os.rename(folder, target)
        except FileNotFoundError:  # another process creating the same database moved it first
            continue
        except OSError as exc:
            logger.warning("%s was left by a deleted database and could not be set aside (%s); a new database "
                           "may refuse to use it: move it away yourself", folder, exc)
            continue
        logger.warning("%s was left by a deleted database; it is kept as %s (delete it when it is no longer needed)",
                       folder, target)
        moved.append(target)
    return moved


def _free_name(folder: Path, now: datetime) -> Path:
    stem = f"{folder.name}.old-{now:%Y%m%dT%H%M%S}"
    target = folder.with_name(stem)
    number = 2
    while target.exists():
        target = folder.with_name(f"{stem}-{number}")
        number += 1
    return target


def upload_folder(root: Path, namespace: str) -> Path:
    """Where the files a namespace uploaded through the REST API are kept under ``root`` (a hash:
    the folder name never shows the namespace)."""
    return root / hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:16]


def upload_roots(data_dir: Path, db: Any) -> list[Path]:
    """Every folder uploads of the memory in ``db`` may be in: ``<data dir>/uploads``, and each folder a
    server was started with (``create_app(upload_dir=...)`` records it in the database before its
    first upload, so an erase from any process finds those files too)."""
    roots = [(Path(data_dir) / UPLOADS).resolve()]
    recorded = db.get_meta(_UPLOAD_ROOTS_KEY)
    for text in json.loads(recorded) if recorded else []:
        path = Path(text)
        if path not in roots:
            roots.append(path)
    return roots


def record_upload_root(data_dir: Path, db: Any, root: Path) -> None:
    """Remember ``root`` as an upload folder of the memory in ``db`` (see :func:`upload_roots`)."""
    root = root.expanduser().resolve()
    if db.read_only or root in upload_roots(data_dir, db):
        return
    with db.transaction():
        recorded = db.get_meta(_UPLOAD_ROOTS_KEY)
        known = json.loads(recorded) if recorded else []
        if str(root) not in known:
            db.set_meta(_UPLOAD_ROOTS_KEY, json.dumps([*known, str(root)]))

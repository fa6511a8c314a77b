"""Workspace files in the search index: kind ``workspace``, re-indexed by content hash.

``sync()`` compares every ``*.md`` file of the folder with ``workspace_files``: a file whose size
and modification time are unchanged is skipped without reading; otherwise its versioned FNV-64a
content hash decides. A new or edited file has its old chunks deleted and its new ones added in
one transaction (never duplicated); an unchanged file is skipped; a file that is gone leaves the
index. Chunks follow the Markdown: a heading starts a new chunk, paragraphs are packed up to
``workspace.chunk_chars`` (1000) characters, a longer paragraph is cut at line or word
boundaries; headings in a row (``# Memory`` then ``## Pets``) open one chunk together. A chunk
is a memory of kind ``workspace`` with ``owner_id`` = the file's relative name and metadata
``{"path", "heading", "chunk"}``, id ``ws_<namespace hash>_<path hash>_<n>``. HTML comments are
not indexed.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..embed import content_hash, fnv1a_64
from ..memories import NewMemory
from ..memories.service import MemoryService
from .markdown import chunk_markdown
from .repository import WorkspaceRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Folder", "SyncReport", "sync", "reindex", "remove", "file_states", "register", "recorded_folder",
           "erase_namespace", "KIND"]

logger = logging.getLogger("openkoi.workspace")

KIND = "workspace"


class Folder(Protocol):
    """What the index reads of a workspace folder (:class:`~shared_core.workspace.Workspace`)."""

    kernel: Kernel
    namespace: str
    path: Path

    def file(self, name: str) -> Path: ...

    def read(self, name: str) -> str: ...

    def markdown_files(self) -> list[str]: ...


@dataclass
class SyncReport:
    """What a sync did, by relative file name."""

    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.indexed or self.removed)

    def __str__(self) -> str:
        text = (f"{len(self.indexed)} indexed ({self.chunks} chunks), {len(self.unchanged)} unchanged, "
                f"{len(self.removed)} removed")
        if self.errors:
            text += "; " + "; ".join(f"{name}: {reason}" for name, reason in self.errors)
        return text


def _chunk_id(namespace: str, name: str, index: int) -> str:
    return f"ws_{fnv1a_64(namespace):016x}_{fnv1a_64(name):016x}_{index}"


def _known(workspace: Folder) -> dict[str, tuple[str, int, int | None]]:
    """Indexed files: relative name -> (content hash, size, mtime_ns)."""
    with workspace.kernel.session() as db:
        return WorkspaceRepository(db).file_states(workspace.namespace)


def _stat(workspace: Folder, name: str) -> tuple[int, int] | None:
    try:
        info = workspace.file(name).stat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def sync(workspace: Folder) -> SyncReport:
    """Bring the index in line with the folder (see the module docs)."""
    report = SyncReport()
    if workspace.kernel.backend.read_only:
        return report
    known = _known(workspace)
    present = workspace.markdown_files()
    for name in present:
        recorded = known.get(name)
        stat = _stat(workspace, name)
        if recorded is not None and stat is not None and (recorded[1], recorded[2]) == stat:
            report.unchanged.append(name)  # same size and modification time: not even read
            continue
        try:
            text = workspace.read(name)
        except (OSError, ValueError) as exc:
            report.errors.append((name, str(exc)))
            continue
        digest = content_hash(text)
        if recorded is not None and recorded[0] == digest:
            _touch(workspace, name, stat)  # touched, not changed: remember the new time
            report.unchanged.append(name)
            continue
        report.chunks += reindex(workspace, name, text, digest)
        report.indexed.append(name)
    for name in sorted(set(known) - set(present)):
        remove(workspace, name)
        report.removed.append(name)
    if report.changed:
        logger.info("workspace %s: %s", workspace.path, report)
    return report


def reindex(workspace: Folder, name: str, text: str, digest: str | None = None) -> int:
    """Replace a file's chunks and record its hash, in one transaction; return how many chunks."""
    kernel = workspace.kernel
    size = kernel.config.workspace.chunk_chars
    pieces = chunk_markdown(text, size)
    items = [NewMemory(
        text=chunk, id=_chunk_id(workspace.namespace, name, i), kind=KIND, namespace=workspace.namespace,
        owner_id=name, source="workspace", metadata={"path": name, "heading": heading, "chunk": i},
    ) for i, (chunk, heading) in enumerate(pieces)]
    stat = _stat(workspace, name)
    size = len(text.encode("utf-8"))
    mtime = stat[1] if stat is not None and stat[0] == size else None  # the stat must be of this text
    memories = kernel.service(MemoryService)
    with kernel.session(write=True) as db:
        memories.delete_where(namespace=workspace.namespace, kind=KIND, where={"@owner_id": name})
        if items:
            memories.add_many(items)
        WorkspaceRepository(db).record_file(workspace.namespace, name, digest=digest or content_hash(text), size=size,
                                            mtime_ns=mtime, chunks=len(items), now=kernel.clock.now())
    return len(items)


def _touch(workspace: Folder, name: str, stat: tuple[int, int] | None) -> None:
    if stat is None:
        return
    with workspace.kernel.session(write=True) as db:
        WorkspaceRepository(db).touch_file(workspace.namespace, name, stat[0], stat[1])


def remove(workspace: Folder, name: str) -> None:
    """Take a file out of the index (its chunks and its row)."""
    kernel = workspace.kernel
    with kernel.session(write=True) as db:
        kernel.service(MemoryService).delete_where(namespace=workspace.namespace, kind=KIND, where={"@owner_id": name})
        WorkspaceRepository(db).forget_file(workspace.namespace, name)


def file_states(workspace: Folder) -> list[dict[str, Any]]:
    """For ``workspace status``: every file on disk or in the index, and whether the index is current."""
    known = _known(workspace)
    out = []
    for name in sorted(set(known) | set(workspace.markdown_files())):
        path = workspace.file(name)
        exists = path.is_file()
        current = False
        if exists and name in known:
            try:
                current = content_hash(workspace.read(name)) == known[name][0]
            except (OSError, ValueError):
                current = False
        out.append({"file": name, "exists": exists, "bytes": path.stat().st_size if exists else 0,
                    "indexed": name in known, "current": current})
    return out


# -- which folder belongs to which namespace ------------------------------------------------------


def register(kernel: Kernel, namespace: str, path: str) -> None:
    """Record that ``path`` is ``namespace``'s workspace (a folder serves one namespace only)."""
    if kernel.backend.read_only:
        return
    with kernel.session() as db:
        repo = WorkspaceRepository(db)
        owner = repo.owner_of(path)
        if owner is not None and owner != namespace:
            raise ValueError(f"{path} is already the workspace of namespace {owner!r}; a folder serves one namespace, "
                             "so give this namespace another folder")
        current = repo.folder_of(namespace)
        if current == path:
            return
        with db.transaction():
            repo.set_folder(namespace, path, kernel.clock.now())
            if current is not None:  # the namespace moved folders: the old folder's index entries go
                repo.forget_files(namespace)
                kernel.service(MemoryService).delete_where(namespace=namespace, kind=KIND)


def recorded_folder(kernel: Kernel, namespace: str) -> Path | None:
    """The folder recorded as the namespace's workspace, if any."""
    with kernel.session() as db:
        recorded = WorkspaceRepository(db).folder_of(namespace)
    return None if recorded is None else Path(recorded)


def erase_namespace(kernel: Kernel, namespace: str) -> None:
    """``erase_namespace``: the rows now, the folder's Markdown files once the erase commits."""
    db = kernel.backend
    repo = WorkspaceRepository(db)
    folder = repo.folder_of(namespace)
    repo.erase(namespace)
    if folder is None:
        return

    def remove_files() -> None:
        root = Path(folder)
        if not root.is_dir():
            return
        for current, _dirs, files in os.walk(root, topdown=False):
            for name in files:
                if name.endswith(".md"):
                    Path(current, name).unlink(missing_ok=True)
            try:
                Path(current).rmdir()  # only when empty: files that are not ours stay
            except OSError:
                pass

    db.after_commit(remove_files)

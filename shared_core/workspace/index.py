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
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..clock import to_iso
from ..embed import content_hash, fnv1a_64
from ..memories import NewMemory
from .files import strip_comments

if TYPE_CHECKING:
    from .files import Workspace

__all__ = ["SyncReport", "sync", "chunk_markdown", "file_states", "KIND"]

logger = logging.getLogger("openkoi.workspace")

KIND = "workspace"
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


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


def chunk_markdown(text: str, size: int = 1000) -> list[tuple[str, str | None]]:
    """(chunk text, heading) pairs of a Markdown text, comments removed (see the module docs)."""
    chunks: list[tuple[str, str | None]] = []
    heading: str | None = None
    current: list[str] = []
    has_body = False

    def flush() -> None:
        nonlocal has_body
        body = "\n\n".join(p for p in current if p.strip()).strip()
        if body:
            chunks.append((body, heading))
        current.clear()
        has_body = False

    for block in re.split(r"\n\s*\n", strip_comments(text)):
        block = block.strip()
        if not block:
            continue
        lines = block.splitlines()
        match = _HEADING.match(lines[0])
        if match:
            if has_body:  # a heading starts a chunk; headings in a row stay together
                flush()
            heading = match.group(1) or heading
        if not match or len(lines) > 1:
            has_body = True
        for piece in _pieces(block, size):
            if current and len("\n\n".join(current)) + 2 + len(piece) > size:
                flush()
            current.append(piece)
    flush()
    return chunks


def _pieces(block: str, size: int) -> list[str]:
    """A paragraph in pieces of at most ``size`` characters, cut at line breaks, then spaces."""
    if len(block) <= size:
        return [block]
    out: list[str] = []
    rest = block
    while len(rest) > size:
        cut = rest.rfind("\n", 0, size)
        if cut < size // 2:
            cut = rest.rfind(" ", 0, size)
        if cut < size // 2:
            cut = size
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        out.append(rest)
    return out


def _chunk_id(namespace: str, name: str, index: int) -> str:
    return f"ws_{fnv1a_64(namespace):016x}_{fnv1a_64(name):016x}_{index}"


def _known(workspace: Workspace) -> dict[str, tuple[str, int, int | None]]:
    """Indexed files: relative name -> (content hash, size, mtime_ns)."""
    db = workspace.store.db
    with db.lock:
        rows = db.query("SELECT path, content_hash, size, mtime_ns FROM workspace_files WHERE namespace = ?",
                        (workspace.namespace,))
    return {r[0]: (r[1], int(r[2]), r[3]) for r in rows}


def _stat(workspace: Workspace, name: str) -> tuple[int, int] | None:
    try:
        info = workspace.file(name).stat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def sync(workspace: Workspace) -> SyncReport:
    """Bring the index in line with the folder (see the module docs)."""
    store = workspace.store
    report = SyncReport()
    if store.db.read_only:
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


def reindex(workspace: Workspace, name: str, text: str, digest: str | None = None) -> int:
    """Replace a file's chunks and record its hash, in one transaction; return how many chunks."""
    store = workspace.store
    size = store.config.workspace.chunk_chars
    pieces = chunk_markdown(text, size)
    items = [NewMemory(
        text=chunk, id=_chunk_id(workspace.namespace, name, i), kind=KIND, namespace=workspace.namespace,
        owner_id=name, source="workspace", metadata={"path": name, "heading": heading, "chunk": i},
    ) for i, (chunk, heading) in enumerate(pieces)]
    stat = _stat(workspace, name)
    size = len(text.encode("utf-8"))
    mtime = stat[1] if stat is not None and stat[0] == size else None  # the stat must be of this text
    with store.db.lock, store.transaction():
        store.delete_where(namespace=workspace.namespace, kind=KIND, where={"@owner_id": name})
        if items:
            store.add_many(items)
        store.db.execute(
            "INSERT INTO workspace_files (namespace, path, content_hash, size, mtime_ns, chunks, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, path) DO UPDATE SET "
            "content_hash = excluded.content_hash, size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "chunks = excluded.chunks, indexed_at = excluded.indexed_at",
            (workspace.namespace, name, digest or content_hash(text), size, mtime, len(items),
             to_iso(store.clock.now())),
        )
    return len(items)


def _touch(workspace: Workspace, name: str, stat: tuple[int, int] | None) -> None:
    if stat is None:
        return
    db = workspace.store.db
    with db.lock, db.transaction():
        db.execute("UPDATE workspace_files SET size = ?, mtime_ns = ? WHERE namespace = ? AND path = ?",
                   (stat[0], stat[1], workspace.namespace, name))


def remove(workspace: Workspace, name: str) -> None:
    """Take a file out of the index (its chunks and its row)."""
    store = workspace.store
    with store.db.lock, store.transaction():
        store.delete_where(namespace=workspace.namespace, kind=KIND, where={"@owner_id": name})
        store.db.execute("DELETE FROM workspace_files WHERE namespace = ? AND path = ?", (workspace.namespace, name))


def file_states(workspace: Workspace) -> list[dict[str, Any]]:
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


def register(store: Any, namespace: str, path: str) -> None:
    """Record that ``path`` is ``namespace``'s workspace (a folder serves one namespace only)."""
    db = store.db
    if db.read_only:
        return
    with db.lock:
        owner = db.scalar("SELECT namespace FROM workspaces WHERE path = ?", (path,))
        if owner is not None and owner != namespace:
            raise ValueError(f"{path} is already the workspace of namespace {owner!r}; a folder serves one namespace, "
                             "so give this namespace another folder")
        current = db.scalar("SELECT path FROM workspaces WHERE namespace = ?", (namespace,))
        if current == path:
            return
        with db.transaction():
            db.execute("INSERT INTO workspaces (namespace, path, created_at) VALUES (?, ?, ?) "
                       "ON CONFLICT(namespace) DO UPDATE SET path = excluded.path",
                       (namespace, path, to_iso(store.clock.now())))
            if current is not None:  # the namespace moved folders: the old folder's index entries go
                db.execute("DELETE FROM workspace_files WHERE namespace = ?", (namespace,))
                store.delete_where(namespace=namespace, kind=KIND)


def erase_namespace(store: Any, namespace: str) -> None:
    """``erase_namespace``: the rows now, the folder's Markdown files once the erase commits."""
    import os
    from pathlib import Path

    db = store.db
    folder = db.scalar("SELECT path FROM workspaces WHERE namespace = ?", (namespace,))
    db.execute("DELETE FROM workspace_files WHERE namespace = ?", (namespace,))
    db.execute("DELETE FROM workspaces WHERE namespace = ?", (namespace,))
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

"""All SQL of the workspace: ``workspaces`` (which folder is a namespace's) and ``workspace_files``
(what each indexed Markdown file was when it was indexed). Callers hold the kernel's session."""

from __future__ import annotations

from datetime import datetime

from ..clock import to_iso
from ..db import Backend

__all__ = ["WorkspaceRepository"]


class WorkspaceRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    # -- workspace_files ---------------------------------------------------------------------------

    def file_states(self, namespace: str) -> dict[str, tuple[str, int, int | None]]:
        """Indexed files of the namespace: relative name -> (content hash, size, mtime_ns)."""
        rows = self.db.query("SELECT path, content_hash, size, mtime_ns FROM workspace_files WHERE namespace = ?",
                             (namespace,))
        return {r[0]: (r[1], int(r[2]), r[3]) for r in rows}

    def record_file(self, namespace: str, name: str, *, digest: str, size: int, mtime_ns: int | None,
                    chunks: int, now: datetime) -> None:
        self.db.execute(
            "INSERT INTO workspace_files (namespace, path, content_hash, size, mtime_ns, chunks, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, path) DO UPDATE SET "
            "content_hash = excluded.content_hash, size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "chunks = excluded.chunks, indexed_at = excluded.indexed_at",
            (namespace, name, digest, size, mtime_ns, chunks, to_iso(now)),
        )

    def touch_file(self, namespace: str, name: str, size: int, mtime_ns: int) -> None:
        """Record a new size and modification time for a file whose content did not change."""
        self.db.execute("UPDATE workspace_files SET size = ?, mtime_ns = ? WHERE namespace = ? AND path = ?",
                        (size, mtime_ns, namespace, name))

    def forget_file(self, namespace: str, name: str) -> None:
        self.db.execute("DELETE FROM workspace_files WHERE namespace = ? AND path = ?", (namespace, name))

    def forget_files(self, namespace: str) -> None:
        self.db.execute("DELETE FROM workspace_files WHERE namespace = ?", (namespace,))

    # -- workspaces --------------------------------------------------------------------------------

    def owner_of(self, path: str) -> str | None:
        """The namespace whose workspace ``path`` is, if any."""
        value = self.db.scalar("SELECT namespace FROM workspaces WHERE path = ?", (path,))
        return None if value is None else str(value)

    def folder_of(self, namespace: str) -> str | None:
        """The folder recorded as the namespace's workspace, if any."""
        value = self.db.scalar("SELECT path FROM workspaces WHERE namespace = ?", (namespace,))
        return None if value is None else str(value)

    def set_folder(self, namespace: str, path: str, now: datetime) -> None:
        self.db.execute("INSERT INTO workspaces (namespace, path, created_at) VALUES (?, ?, ?) "
                        "ON CONFLICT(namespace) DO UPDATE SET path = excluded.path",
                        (namespace, path, to_iso(now)))

    def erase(self, namespace: str) -> None:
        """The namespace's rows of both tables."""
        self.forget_files(namespace)
        self.db.execute("DELETE FROM workspaces WHERE namespace = ?", (namespace,))

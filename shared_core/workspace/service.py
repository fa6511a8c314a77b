"""``Workspaces``: which folder is a namespace's workspace, and the :class:`Workspace` objects for them.

Reached through ``store.memory_manager.workspace(namespace)`` (or ``store.workspaces``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..embed import fnv1a_64
from ..errors import ConfigError
from ..memories import DEFAULT_NAMESPACE, check_namespace
from .files import Workspace
from .index import erase_namespace, recorded_folder, register

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Workspaces"]


class Workspaces:
    """The workspace folders of one memory, one per namespace."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._open: dict[tuple[str, str], Workspace] = {}

    def get(self, namespace: str = DEFAULT_NAMESPACE, *, path: str | Path | None = None) -> Workspace | None:
        """The namespace's workspace folder; None when workspaces are off for this store.

        ``path`` names the folder explicitly (always honoured); otherwise it is
        ``<workspace.root>/<namespace slug>``, ``workspace.root`` defaulting to
        ``<data dir>/workspaces`` for file stores. ``:memory:`` stores have none unless
        ``workspace.root`` or ``path`` is given (their ``data_dir`` is the user's real one).
        """
        check_namespace(namespace)
        if path is not None:
            folder = Path(path).expanduser().resolve()
        else:
            default = self.folder(namespace)
            if default is None:
                return None
            folder = default
        cache_key = (namespace, str(folder))
        if cache_key not in self._open:
            register(self.kernel, namespace, str(folder))
            self._open = {k: v for k, v in self._open.items() if k[0] != namespace}
            self._open[cache_key] = Workspace(self.kernel, namespace, folder)
        return self._open[cache_key]

    def folder(self, namespace: str = DEFAULT_NAMESPACE) -> Path | None:
        """Where :meth:`get` puts the namespace's folder when no ``path`` is given (None: no
        workspaces for this store); nothing is created."""
        cfg = self.kernel.config.workspace
        if cfg.enabled == "off":
            return None
        if cfg.root:
            root = Path(cfg.root).expanduser()
        elif self.kernel.backend.path == ":memory:":
            if cfg.enabled == "on":
                raise ConfigError("workspace.enabled = 'on' for a ':memory:' store needs workspace.root (or pass "
                                  "path=): a ':memory:' store has no data directory of its own")
            return None
        else:
            root = self.kernel.data_dir / "workspaces"
        return (root / _folder_name(namespace)).resolve()

    def folder_of(self, namespace: str) -> Path | None:
        """The namespace's workspace folder: the one recorded, else where it would be by default."""
        recorded = recorded_folder(self.kernel, namespace)
        if recorded is not None:
            return recorded
        try:
            return self.folder(namespace)
        except ConfigError:
            return None

    def erase(self, namespace: str) -> None:
        """``erase_namespace``: the workspace rows, and (after commit) the folder's Markdown files."""
        erase_namespace(self.kernel, namespace)
        self._open = {k: v for k, v in self._open.items() if k[0] != namespace}


def _folder_name(namespace: str) -> str:
    """A safe folder name for a namespace: itself when it is ``[a-z0-9._-]``, else a slug plus a hash."""
    if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", namespace) and not namespace.endswith("."):
        return namespace
    slug = re.sub(r"[^a-z0-9]+", "-", namespace.casefold()).strip("-")[:40] or "namespace"
    return f"{slug}-{fnv1a_64(namespace):016x}"

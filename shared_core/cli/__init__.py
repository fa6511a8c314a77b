"""The ``openkoi-memory`` command line.

Errors print as one line on stderr and exit non-zero. ``--db`` (or ``$OPENKOI_DB``)
picks the file; the default is ``<data dir>/openkoi.db``. Each module of this package
holds the commands of one domain; they all hang off the ``main`` group in ``support``.
"""

from __future__ import annotations

from . import memories  # noqa: F401 - registers the core commands on main
from .context import compact_command, context_command, end_session_command, workspace
from .conversations import forget, sessions
from .documents import ingest, kb
from .insights import insights
from .learning import history_command, learnings_command, recall_command, skills_command
from .lifecycle import links, maintain, prune
from .server import mcp, serve, token, ui
from .support import main
from .transfer import migrate_backend_command

__all__ = ["main"]

for command in (maintain, prune, links, insights, recall_command, learnings_command, skills_command, history_command,
                ingest, kb, sessions, forget, context_command, compact_command, end_session_command, workspace,
                serve, mcp, token, ui, migrate_backend_command):
    main.add_command(command)

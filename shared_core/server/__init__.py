"""openkoi-memory as a service (the ``server`` extra): MCP server, REST API, tokens, maintenance schedule.

* :func:`create_mcp_server` / :func:`run_stdio`: the memory and knowledge-base tools over MCP;
* :func:`create_app`: the REST API (FastAPI) with the MCP endpoint at ``/mcp``;
* :class:`TokenFile`, :class:`Principal`: bearer tokens limited to namespaces;
* :class:`MaintenanceScheduler`: ``store.maintain(if_due=True)`` on the schedule, in a thread.

The tokens and the scheduler are plain Python; the MCP and HTTP parts import the SDK and
FastAPI on first use. See docs/server.md.
"""

from __future__ import annotations

from typing import Any

from .auth import Principal, TokenFile, default_tokens_path
from .scheduler import MaintenanceScheduler

__all__ = [
    "MaintenanceScheduler",
    "Principal",
    "TokenFile",
    "create_app",
    "create_mcp_server",
    "default_tokens_path",
    "run_stdio",
]

_LAZY = {"create_app": ".rest", "create_mcp_server": ".mcp_server", "run_stdio": ".mcp_server"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The threads that scan vector codes beside the caller's own work.

numpy and the compiled scans (``shared_core/_speedups.c``) let go of the GIL while they
work, so a scan on a worker thread runs beside a keyword query in SQLite, or beside the
other half of the same scan, on a second core.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["CPUS", "scan_pool", "submit"]

CPUS = os.cpu_count() or 1  # one: nothing runs on a worker thread

_pool: ThreadPoolExecutor | None = None


def scan_pool() -> ThreadPoolExecutor:
    """The workers, created on first use and again in a forked child."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=min(4, CPUS), thread_name_prefix="openkoi-vector-scan")
    return _pool


def submit(work: Callable[..., Any], *args: Any) -> Future | None:
    """``work(*args)`` on a worker thread, or None when there is no second CPU or the interpreter
    is shutting down (its executors then refuse new work): the caller does it itself."""
    if CPUS < 2:
        return None
    try:
        return scan_pool().submit(work, *args)
    except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
        return None


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)

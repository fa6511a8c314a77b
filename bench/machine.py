"""One line describing the machine a benchmark ran on, for docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe() -> str:
    """CPU model, logical CPUs, RAM, OS, Python, numpy, the SQLite build the store uses, and how the
    near-duplicate check scans (compiled, with the kernel the CPU got, or numpy where it was not built)."""
    import numpy as np

    from shared_core.db import get_driver
    from shared_core.index import mirror

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
        kb = int(next(line for line in lines if line.startswith("MemTotal")).split()[1])
        memory = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration):
        pass
    driver = get_driver()
    scan = f"compiled ({mirror._speedups.near_kernels()[0]})" if mirror._speedups is not None else "numpy"
    return (f"{cpu}, {os.cpu_count()} logical CPUs{memory}, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, numpy {np.__version__}; SQLite {driver.sqlite_version} via {driver.name}; "
            f"near-duplicate scan {scan}")

"""Single ``add()`` calls on a copy of the cached stores of bench/scaling.py ``--cached``.

    python bench/single_adds.py --sizes 100000 1000000 --rounds 5
    python bench/single_adds.py --sizes 1000000 --vectors static   # the default embedder's store

Each size's store in bench/.cache (built by ``bench/scaling.py --cached`` first) is copied
(sparse) into a temporary folder, opened, searched once, and then given ``rounds`` rounds of 200
single adds (embedding and near-duplicate check on, with the store's embedder): the median round's rate and
the p50/p95 latency, as bench/scaling.py reports them, and the near-duplicate check's share.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from cold_start import copy_store  # noqa: E402
from core import CACHE, embedder_for, locomo_texts, time_single_adds  # noqa: E402

from shared_core import MemoryStore  # noqa: E402
from shared_core.index import vectors as vector_index  # noqa: E402


def cached(size: int, kind: str) -> Path:
    found = sorted(CACHE.glob(f"scaling-{kind}-{size}-*.db"))
    if not found:
        raise SystemExit(f"no cached store of {size} in {CACHE}: run bench/scaling.py --sizes {size} "
                         f"--vectors {kind} --cached first")
    return found[-1]


def measure(size: int, kind: str, rounds: int, workdir: Path) -> dict:
    source = cached(size, kind)
    copy = workdir / source.name
    copy_store(source, copy)
    turns, _ = locomo_texts()
    checks: list[float] = []
    original = vector_index.SqliteVectorIndex.above

    def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            checks.append((time.perf_counter() - started) * 1000)

    vector_index.SqliteVectorIndex.above = timed  # type: ignore[method-assign]
    try:
        with MemoryStore.open(copy, embedder=embedder_for(kind)) as store:
            store.search("warm up", namespace="bench", limit=10, track_access=False)
            checks.clear()
            result = time_single_adds(store, turns, rounds)
    finally:
        vector_index.SqliteVectorIndex.above = original  # type: ignore[method-assign]
        for path in workdir.iterdir():
            subprocess.run(["rm", "-rf", str(path)], check=True)
    checks.sort()
    result["near_duplicate_check_p50"] = checks[len(checks) // 2] if checks else None
    return {"size": size, "vectors": kind, "load": os.getloadavg()[0], **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--vectors", default="hashing", choices=["hashing", "static"])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        for size in args.sizes:
            row = measure(size, args.vectors, args.rounds, Path(tmp))
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                              if k != "single_add_rounds_per_s"} | {"rounds": [round(r) for r in row["single_add_rounds_per_s"]]}),
                  flush=True)


if __name__ == "__main__":
    main()

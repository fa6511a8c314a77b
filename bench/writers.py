"""Writers sharing one file: add latency of several writer processes while others search.

    python bench/writers.py                          # 4 writers x 2,000 adds, 2 searchers (the test's numbers)
    python bench/writers.py --adds 500 --compare     # also without writer turns (OPENKOI_WRITER_TURNS=off)

Each writer process adds distinct facts one at a time (``store.add``: dedup check, row, FTS and
vector in one transaction) and times each call; searcher processes run hybrid searches until the
writers are done. Prints adds/s over all writers, the latency percentiles and the maximum, and
checks the final count. This is the setting of ``tests/core/test_concurrency.py``, measured.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from machine import describe as describe_machine  # noqa: E402

from shared_core import MemoryStore  # noqa: E402

WORDS = [f"w{k:04d}" for k in range(5000)]


def text(writer: int, i: int) -> str:
    rng = random.Random(writer * 1_000_003 + i)
    return " ".join(rng.sample(WORDS, 10)) + f" marker{writer}x{i}"


def writer(path: str, w: int, n: int, start, out) -> None:
    store = MemoryStore.open(path)
    start.wait()
    latencies = []
    for i in range(n):
        began = time.perf_counter()
        store.add(text(w, i), namespace=f"ns{w % 2}")
        latencies.append(time.perf_counter() - began)
    store.close()
    out.put(latencies)


def searcher(path: str, start, stop, out) -> None:
    store = MemoryStore.open(path)
    start.wait()
    done = 0
    while not stop.is_set():
        store.search(text(done % 4, done)[:40], namespace=["ns0", "ns1"], limit=10)
        done += 1
    store.close()
    out.put(done)


def run(writers: int, adds: int, searchers: int, turns: bool) -> dict[str, float]:
    if turns:
        os.environ.pop("OPENKOI_WRITER_TURNS", None)
    else:
        os.environ["OPENKOI_WRITER_TURNS"] = "off"  # inherited by the worker processes
    with tempfile.TemporaryDirectory(prefix="openkoi-writers-") as tmp:
        path = str(Path(tmp) / "shared.db")
        MemoryStore.open(path).close()
        start, stop, results, counts = mp.Event(), mp.Event(), mp.Queue(), mp.Queue()
        procs = [mp.Process(target=writer, args=(path, w, adds, start, results)) for w in range(writers)]
        readers = [mp.Process(target=searcher, args=(path, start, stop, counts)) for _ in range(searchers)]
        for p in procs + readers:
            p.start()
        time.sleep(1.0)
        began = time.perf_counter()
        start.set()
        latencies = np.concatenate([np.array(results.get()) for _ in procs])
        seconds = time.perf_counter() - began
        stop.set()
        searches = sum(counts.get() for _ in readers)
        for p in procs + readers:
            p.join()
        with MemoryStore.open(path) as store:
            rows = store.count(namespace=["ns0", "ns1"])
    os.environ.pop("OPENKOI_WRITER_TURNS", None)
    p50, p95, p99, p999 = (float(np.percentile(latencies, q)) * 1000 for q in (50, 95, 99, 99.9))
    return {"rows": rows, "seconds": seconds, "adds_per_s": len(latencies) / seconds, "p50": p50, "p95": p95,
            "p99": p99, "p99.9": p999, "max": float(latencies.max()) * 1000, "searches": searches}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--adds", type=int, default=2000, help="per writer")
    parser.add_argument("--searchers", type=int, default=2)
    parser.add_argument("--compare", action="store_true", help="also run without writer turns")
    args = parser.parse_args()
    modes = [True, False] if args.compare else [True]
    rows = []
    load = [os.getloadavg()[0]]
    for turns in modes:
        rows.append(("on" if turns else "off", run(args.writers, args.adds, args.searchers, turns)))
        load.append(os.getloadavg()[0])
    print(f"Machine: {describe_machine()}; "
          f"load average {', '.join(f'{x:.1f}' for x in load)} (before, after each run).")
    print(f"Command: `python bench/writers.py --writers {args.writers} --adds {args.adds} "
          f"--searchers {args.searchers}{' --compare' if args.compare else ''}`\n")
    print("| writer turns | adds | s | adds/s | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms | searches |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows:
        assert r["rows"] == args.writers * args.adds, r
        print(f"| {name} | {r['rows']:,} | {r['seconds']:.0f} | {r['adds_per_s']:.0f} | {r['p50']:.1f} | "
              f"{r['p95']:.1f} | {r['p99']:.0f} | {r['p99.9']:.0f} | {r['max']:.0f} | {r['searches']:,} |")


if __name__ == "__main__":
    main()

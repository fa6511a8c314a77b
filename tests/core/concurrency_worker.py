"""A separate process for tests/core/test_concurrency.py (run as a script, never imported by pytest).

    python concurrency_worker.py add PATH WRITER COUNT START_FILE      # COUNT adds, one line per acknowledged id
    python concurrency_worker.py batches PATH WRITER BATCH START_FILE  # add_many batches forever (to be killed)
    python concurrency_worker.py search PATH STOP_FILE START_FILE      # search until STOP_FILE exists
    python concurrency_worker.py same PATH COUNT START_FILE            # add the same COUNT facts
    python concurrency_worker.py open PATH WRITER START_FILE           # open a new file at once with others, add one

Acknowledged writes are printed as ``ok <id> ...`` after ``store.add`` returned (``add``: ``ok <id>
<began> <ended>``, ``time.monotonic()`` readings); errors as ``error <type>: <message>`` (the test fails
on any).
"""

from __future__ import annotations

import faulthandler
import os
import random
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shared_core import MemoryStore  # noqa: E402

WORDS = [f"w{k:04d}" for k in range(5000)]


def text(writer: int, i: int) -> str:
    """A fact unlike every other (random words, so dedup never merges two of them)."""
    rng = random.Random(writer * 1_000_003 + i)
    return " ".join(rng.sample(WORDS, 10)) + f" marker{writer}x{i}"


def wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.005)


WAIT_S = 300.0
EXACT_SCAN_ROWS = 250


def main(argv: list[str]) -> None:
    if hasattr(signal, "SIGUSR1"):  # the test asks for every thread's stack when a worker hangs
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    mode, path = argv[0], argv[1]
    out = sys.stdout
    if mode == "open":  # the race is in creating the schema: open only once everyone is ready
        wait_for(argv[3])
    try:
        # what is checked is that nothing is lost or doubled; how long a write waits behind seven other
        # clients on a loaded machine is not (10 s, the default, was once exceeded on PostgreSQL there).
        # On PostgreSQL a namespace past EXACT_SCAN_ROWS is searched (and checked for near-duplicates)
        # through the HNSW index: an eighth of the default, so that fewer adds get there.
        store = MemoryStore.open(path, config={"database": {"busy_timeout_s": WAIT_S, "exact_scan_rows": EXACT_SCAN_ROWS}})
    except Exception as exc:
        out.write(f"error {type(exc).__name__}: {exc}\n")
        raise SystemExit(1) from None
    try:
        if mode == "add":
            writer, count, start = int(argv[2]), int(argv[3]), argv[4]
            wait_for(start)
            for i in range(count):  # monotonic: one clock for every process of the machine
                began = time.monotonic()
                result = store.add(text(writer, i), namespace=f"ns{writer % 2}", tags=[f"writer{writer}"])
                out.write(f"ok {result.id} {began:.6f} {time.monotonic():.6f}\n")
            out.flush()
        elif mode == "batches":
            writer, size, start = int(argv[2]), int(argv[3]), argv[4]
            wait_for(start)
            i = 0
            while True:
                results = store.add_many([text(writer, i + j) for j in range(size)], namespace="crash")
                i += size
                out.write("".join(f"ok {r.id}\n" for r in results))
                out.flush()
                one = store.add(text(writer, i), namespace="crash")
                i += 1
                out.write(f"ok {one.id}\n")
                out.flush()
        elif mode == "search":
            stop, start = argv[2], argv[3]
            wait_for(start)
            done = 0
            while not os.path.exists(stop):
                store.search(text(done % 4, done)[:40], namespace=["ns0", "ns1"], limit=10)
                done += 1
            out.write(f"searches {done}\n")
        elif mode == "same":
            count, start = int(argv[2]), argv[3]
            wait_for(start)
            for i in range(count):
                result = store.add(text(999, i), namespace="race")
                out.write(f"ok {result.id} {result.event}\n")
            out.flush()
        elif mode == "open":
            result = store.add(text(int(argv[2]), 0), namespace="opened")
            out.write(f"ok {result.id}\n")
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    except Exception as exc:  # reported to the test, which fails on it
        out.write(f"error {type(exc).__name__}: {exc}\n")
        out.flush()
        raise SystemExit(1) from None
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])

"""What access tracking costs a single search, to compare code with and without the activity log.

Opens a fresh SQLite file of ``rows`` memories and times ``searches`` searches with access tracking
on (each writes the hits' access counts, and where the code has it their ``memory_activity`` row)
and off, interleaved, moving the clock a day every 50 searches (so the daily trim runs too). Prints
the medians. Run it on two checkouts to compare: PYTHONPATH=/path/to/other python bench/access_activity.py
Usage: python bench/access_activity.py [rows] [searches]
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from shared_core import ManualClock, MemoryStore

WORDS = ("payment api hmac signature onboarding partner invoice refund ledger account server deploy "
         "frankfurt database migration postgres backup restore alert outage incident review release "
         "kiwi orchard garden recipe travel budget hiring plan roadmap meeting notes").split()


def main(rows: int = 2000, searches: int = 400) -> None:
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(rows)]
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(searches)]
    clock = ManualClock("2026-01-01")
    with tempfile.TemporaryDirectory() as folder, \
            MemoryStore.open(Path(folder) / "bench.db", clock=clock, config={"links": {"enabled": False}}) as store:
        store.add_many(texts)
        for query in queries[:50]:  # warm up caches and the vector mirror
            store.search(query, limit=10, track_access=False)
        timings: dict[bool, list[float]] = {True: [], False: []}
        for i, query in enumerate(queries):
            if i % 50 == 0:
                clock.advance(days=1)
            for track in (False, True):
                start = time.perf_counter()
                store.search(query, limit=10, track_access=track)
                timings[track].append((time.perf_counter() - start) * 1000)
        has_log = "memory_activity" in store.db.tables_with_column("namespace")
        alone = []  # the activity statement by itself, for 10 hits, inside a transaction
        if has_log:
            repository = store.kernel.memories
            for query in queries[:200]:
                rowids = [hit.memory.rowid for hit in store.search(query, limit=10, track_access=False)]
                with store.kernel.session(write=True):
                    start = time.perf_counter()
                    repository.activity.accessed(rowids, 1, clock.now())
                    alone.append((time.perf_counter() - start) * 1000)
    on, off = statistics.median(timings[True]), statistics.median(timings[False])
    print(f"{rows} memories, {searches} searches, activity log: {'yes' if has_log else 'no'}")
    print(f"track_access on:  median {on:.3f} ms")
    print(f"track_access off: median {off:.3f} ms (tracking adds {on - off:.3f} ms)")
    if alone:
        print(f"the activity upsert alone (10 hits): median {statistics.median(alone):.3f} ms")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))

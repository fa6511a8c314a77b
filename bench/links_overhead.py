"""How much Hebbian link recording adds to a search (docs/lifecycle.md, "Hebbian links").

Runs the same searches on one store with ``links.enabled`` on and off (access tracking on in
both, so the only difference is the one ``executemany`` upsert of up to 45 pairs) and prints
the median time per search. Usage: python bench/links_overhead.py [rows] [searches]
"""

from __future__ import annotations

import platform
import random
import statistics
import sys
import time

from shared_core import ManualClock, MemoryStore

WORDS = ("payment api hmac signature onboarding partner invoice refund ledger account server deploy "
         "frankfurt database migration postgres backup restore alert outage incident review release "
         "kiwi orchard garden recipe travel budget hiring plan roadmap meeting notes").split()


def main(rows: int = 5000, searches: int = 300) -> None:
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(rows)]
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(searches)]
    store = MemoryStore.open(":memory:", clock=ManualClock("2026-01-01"))
    store.add_many(texts)
    for query in queries[:50]:  # warm up caches and the vector mirror
        store.search(query, limit=10, track_access=False)
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(2):  # interleave to even out noise
        for enabled in (False, True):
            store.config.links.enabled = enabled
            for query in queries:
                start = time.perf_counter()
                store.search(query, limit=10)
                timings[enabled].append((time.perf_counter() - start) * 1000)
    off, on = statistics.median(timings[False]), statistics.median(timings[True])
    upserts = []  # the link upsert alone, in its own transaction
    for query in queries:
        hits = store.search(query, limit=10, track_access=False)
        start = time.perf_counter()
        with store.transaction():
            store.links.record(h.memory for h in hits)
        upserts.append((time.perf_counter() - start) * 1000)
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, {rows} rows, "
          f"{searches} searches x 2, top 10")
    print(f"median search: links off {off:.2f} ms, links on {on:.2f} ms (+{on - off:.2f} ms); "
          f"{store.links.count()} links recorded")
    print(f"the link upsert alone (45 pairs, own transaction): median {statistics.median(upserts):.3f} ms")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))

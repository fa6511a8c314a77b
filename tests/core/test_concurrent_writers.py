"""Several connections (threads, processes, app servers) writing one memory at once."""

from __future__ import annotations

import threading

from shared_core import MemoryStore


def test_a_fact_added_from_several_connections_at_once_is_stored_once(tmp_path):
    """Writers take turns (SQLite's write lock, PostgreSQL's advisory lock) and the duplicate check
    runs inside the write: the same fact from four connections at once is one memory, reinforced thrice."""
    stores = [MemoryStore.open(tmp_path / "m.db") for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    results = []

    def add(store):
        barrier.wait()
        results.append(store.add("the office wifi password is on the fridge"))

    threads = [threading.Thread(target=add, args=(s,)) for s in stores]
    [t.start() for t in threads]
    [t.join() for t in threads]
    try:
        assert len({str(r) for r in results}) == 1
        assert sorted(r.event for r in results) == ["created", "reinforced", "reinforced", "reinforced"]
        assert stores[0].count() == 1 and stores[0].get(results[0]).score == 9.0
    finally:
        for s in stores:
            s.close()

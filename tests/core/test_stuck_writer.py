"""A stuck writer in another process: this process's readers go on, its writers get BusyError in time.

The holder is a real process that opens a write transaction and keeps it until the test lets
go (a notebook inside ``with store.transaction():``, a process stopped in a debugger, a long
``reembed``). Nothing here times anything: a read that waited for the holder would never
finish (the holder waits for the test), and a write that waited without limit would too; the
suite's timeout would fail them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from shared_core import MemoryStore
from shared_core.errors import BusyError

_HOLDER = textwrap.dedent("""
    import os, sys, time
    from shared_core import MemoryStore
    path, ready, release = sys.argv[1:4]
    with MemoryStore.open(path) as store:
        with store.transaction():
            store.add("written by the holder, not committed yet", namespace="held", dedup=False)
            open(ready, "w").close()
            while not os.path.exists(release):
                time.sleep(0.01)
""")


# another program's writer: SQLite's own write lock, without the writer's turn openkoi's processes queue on
_FOREIGN_HOLDER = textwrap.dedent("""
    import os, sqlite3, sys, time
    path, ready, release = sys.argv[1:4]
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    open(ready, "w").close()
    while not os.path.exists(release):
        time.sleep(0.01)
    conn.execute("ROLLBACK")
""")


@pytest.fixture(params=["openkoi", pytest.param("foreign", marks=pytest.mark.sqlite_only)])
def holder(request, tmp_path, clock):
    """(path, stop): a file with one memory, and another process holding its write turn until stop()
    (an openkoi process inside store.transaction(), or another program holding SQLite's write lock)."""
    path = tmp_path / "shared.db"
    with MemoryStore.open(path, clock=clock) as store:
        store.add("the tide table for Tuesday", namespace="a")
    ready, release = tmp_path / "ready", tmp_path / "release"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                         os.environ.get("PYTHONPATH", "")])}
    script = _HOLDER if request.param == "openkoi" else _FOREIGN_HOLDER
    proc = subprocess.Popen([sys.executable, "-c", script, str(path), str(ready), str(release)], env=env,
                            stderr=subprocess.PIPE, text=True)
    while not ready.exists():
        assert proc.poll() is None, proc.stderr.read()
        threading.Event().wait(0.01)

    def stop() -> None:
        release.touch()
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
        proc.wait(timeout=120)

    yield path, proc, stop
    if proc.poll() is None:
        stop()


def _open(path, clock, busy: float) -> MemoryStore:
    return MemoryStore.open(path, clock=clock, config={"database": {"busy_timeout_s": busy}})


@pytest.mark.parametrize("stopped", [False, True], ids=["holding", "sigstopped"])
def test_reads_answer_and_writes_get_busy_while_another_process_writes(holder, clock, stopped):
    path, proc, stop = holder
    if stopped:
        os.kill(proc.pid, signal.SIGSTOP)
    with _open(path, clock, busy=0.5) as store:
        hits = store.search("tide table", namespace="a")  # counts its access later: never waits
        assert [h.text for h in hits] == ["the tide table for Tuesday"]
        assert store.get(hits[0].id).text == "the tide table for Tuesday"
        assert [m.text for m in store.list(namespace="a")] == ["the tide table for Tuesday"]
        assert store.count(namespace="held") == 0  # nothing of the holder's is committed
        with pytest.raises(BusyError, match="busy timeout"):
            store.add("a write that must not hang", namespace="a")
        with pytest.raises(BusyError):
            store.reinforce(hits[0].id)
        stop()
        store.add("a write once the holder is gone", namespace="a")
        assert store.count(namespace="a") == 2
    with MemoryStore.open(path, clock=clock) as store:  # the search's access was kept and written later
        assert store.get(hits[0].id).access_count == 1


def test_a_thread_waiting_to_write_does_not_keep_the_stores_readers_waiting(holder, clock):
    path, _, stop = holder
    with _open(path, clock, busy=600) as store:
        done = threading.Event()
        result: list[object] = []

        def write() -> None:
            try:
                result.append(store.add("waits for the holder", namespace="a"))
            finally:
                done.set()

        writer = threading.Thread(target=write)
        writer.start()
        try:
            for _ in range(20):  # each would wait for the writer's turn if the store's lock were held meanwhile
                assert [h.text for h in store.search("tide table", namespace="a")] == ["the tide table for Tuesday"]
                assert store.count(namespace="a") == 1
            assert not done.is_set()  # the writer is still waiting for the holder
        finally:
            stop()
        writer.join(timeout=120)
        assert result and result[0].event == "created"
        assert store.count(namespace="a") == 2


def test_a_try_without_waiting_is_busy_at_once(holder, clock):
    path, _, stop = holder
    with _open(path, clock, busy=600) as store:
        with pytest.raises(BusyError):
            with store.db.transaction(wait=0):
                pass
        stop()
        with store.db.transaction(wait=0):
            pass


class _GatedEmbedder:
    """The hashing embedder, but a batch of more than one text waits at a gate (a slow model)."""

    def __init__(self, dims: int) -> None:
        from shared_core import HashingEmbedder

        self._inner = HashingEmbedder(dims=dims)
        self.name, self.dims = f"gated-{dims}", dims
        self.entered, self.gate = threading.Event(), threading.Event()

    def embed(self, texts):
        if len(texts) > 1:
            self.entered.set()
            assert self.gate.wait(120)
        return self._inner.embed(texts)


@pytest.mark.parametrize("dims", [384, 64], ids=["same-dims", "new-dims"])
def test_reembedding_lets_searches_and_writes_through_while_it_embeds(tmp_path, clock, dims):
    from shared_core import HashingEmbedder

    # the hashing embedder's 384 dims, so that the gated one can have the same dims or others
    with MemoryStore.open(tmp_path / "r.db", clock=clock, embedder=HashingEmbedder()) as store:
        store.add_many([f"tide table entry {i}" for i in range(20)], namespace="a")
        embedder = _GatedEmbedder(dims)
        if dims == 384:  # same dims, another name: every row is stale and re-embedded in place
            store.db.execute("UPDATE memory_chunks SET embedding_model = 'old-model'")
        worker = threading.Thread(target=lambda: store.reembed(embedder if dims != 384 else None, batch_size=8))
        if dims == 384:
            store.kernel.memories.embedder = embedder  # the store's own embedder is the slow one
        worker.start()
        try:
            assert embedder.entered.wait(120)
            assert len(store.search("tide table", namespace="a", limit=50)) == 20  # not waiting for the model
            store.add("written while the re-embed embeds", namespace="a", dedup=False)
        finally:
            embedder.gate.set()
            worker.join(timeout=120)
        assert not worker.is_alive()
        assert store.count(namespace="a") == 21
        assert store.search("written while the re-embed embeds", namespace="a")[0].text.startswith("written")

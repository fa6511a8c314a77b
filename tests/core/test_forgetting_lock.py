"""The forgetting run lock (seed 003): key memory_forgetting:<namespace>, 60 s TTL, held across processes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared_core import MemoryStore
from shared_core.lifecycle.forgetting import RuleBasedMemorySummarizer
from shared_core.lifecycle.locks import RunLocks

ROOT = Path(__file__).resolve().parents[2]


def _seed(store, clock, n=3):
    for i in range(n):
        store.conversations.append("s", "user", f"old message {i}", sent_at=f"2026-01-01T10:0{i}:00Z")
    clock.set("2026-02-01T00:00:00Z")


def test_key_token_and_release(store, clock):
    with store.forgetting.lock("user:ann") as held:
        assert held is not None and held.key == "memory_forgetting:user:ann"
        assert re.fullmatch(r"memory_forgetting:user:ann:\d{13}:[0-9a-f]{12}", held.token)
        assert held.token.split(":")[-2] == str(int(clock.now().timestamp() * 1000))
        assert (held.expires_at - held.acquired_at).total_seconds() == 60
        assert store.db.scalar("SELECT token FROM run_locks WHERE key = ?", (held.key,)) == held.token
        with store.forgetting.lock("user:ann") as second:
            assert second is None
    assert store.db.scalar("SELECT count(*) FROM run_locks") == 0


def test_a_second_run_while_one_holds_the_lock_is_skipped(store, clock):
    _seed(store, clock)
    with store.forgetting.lock() as held:
        assert held is not None
        report = store.forgetting.run()
        assert report.status == "skipped_locked" and report.tiers == [] and not report.changed
        assert store.forgetting.run("other").status == "ok"  # other namespaces have their own lock
    assert store.forgetting.run().status == "ok"


def test_an_expired_lock_of_a_crashed_holder_is_taken_over(store, clock):
    _seed(store, clock)
    locks = RunLocks(store.db, clock)
    assert locks.acquire("memory_forgetting:default", 60_000) is not None  # never released: a crash
    assert store.forgetting.run().status == "skipped_locked"
    clock.advance(seconds=59)
    assert store.forgetting.run().status == "skipped_locked"
    clock.advance(seconds=1)  # 60 s: expired
    report = store.forgetting.run()
    assert report.status == "ok" and report.compressed["short"] == 3


def test_a_clock_that_jumped_back_does_not_keep_a_lock_forever(store, clock):
    locks = RunLocks(store.db, clock)
    assert locks.acquire("memory_forgetting:default", 60_000) is not None
    clock.advance(seconds=-30)  # a small step back: still held
    assert store.forgetting.run().status == "skipped_locked"
    clock.advance(days=-2)  # the lock now looks acquired in the far future: stale
    assert store.forgetting.run().status == "ok"


def test_ttl_is_configurable(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"forgetting": {"lock_ttl_ms": 1000}}) as store:
        RunLocks(store.db, clock).acquire("memory_forgetting:default", 1000)
        assert store.forgetting.run().status == "skipped_locked"
        clock.advance(seconds=1)
        assert store.forgetting.run().status == "ok"


def test_a_run_that_loses_its_lock_writes_nothing(store, clock):
    _seed(store, clock)

    class Thief(RuleBasedMemorySummarizer):
        def summarize(self, messages, **kw):
            clock.advance(seconds=61)  # the run outlived its TTL ...
            RunLocks(store.db, clock).acquire("memory_forgetting:default", 60_000)  # ... and someone took over
            return super().summarize(messages, **kw)

    store.forgetting.summarizer = Thief()
    report = store.forgetting.run()
    assert report.status == "lost_lock" and not report.changed
    assert store.db.scalar("SELECT count(*) FROM memory_summaries") == 0
    assert store.db.scalar("SELECT count(*) FROM raw_messages WHERE archived_at IS NOT NULL") == 0


CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from shared_core import MemoryStore
from shared_core.lifecycle.forgetting import RuleBasedMemorySummarizer

store = MemoryStore.open(sys.argv[2])
if sys.argv[3] == "hold":
    with store.forgetting.lock() as held:
        print("LOCKED" if held else "NOT-LOCKED", flush=True)
        sys.stdin.readline()
else:
    class Slow(RuleBasedMemorySummarizer):
        def summarize(self, messages, **kw):
            print("RUNNING", flush=True)
            sys.stdin.readline()
            return super().summarize(messages, **kw)
    store.forgetting.summarizer = Slow()
    print(store.forgetting.run().status, flush=True)
store.close()
"""


def _child(db, mode):
    return subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), str(db), mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))


def _wait_for(child, word, timeout=60):
    deadline = time.monotonic() + timeout
    line = child.stdout.readline().strip()
    assert line == word and time.monotonic() < deadline, (line, child.stderr.read() if child.poll() is not None else "")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX pipes")
def test_the_lock_holds_across_processes(tmp_path):
    db = tmp_path / "shared.db"
    with MemoryStore.open(db) as store:
        for i in range(3):
            store.conversations.append("s", "user", f"old message {i}", sent_at="2020-01-01T00:00:00Z")

    holder = _child(db, "hold")
    try:
        _wait_for(holder, "LOCKED")
        with MemoryStore.open(db) as store:
            assert store.forgetting.run().status == "skipped_locked"
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0

    runner = _child(db, "run")  # a real run, paused in the middle (after the lock, before writing)
    try:
        _wait_for(runner, "RUNNING")
        with MemoryStore.open(db) as store:
            assert store.forgetting.run().status == "skipped_locked"
    finally:
        out, err = runner.communicate("\n", timeout=60)
    assert out.strip() == "ok", err
    with MemoryStore.open(db) as store:
        assert store.db.scalar("SELECT count(*) FROM memory_summaries") == 1
        assert store.forgetting.run().status == "ok" and store.db.scalar("SELECT count(*) FROM run_locks") == 0

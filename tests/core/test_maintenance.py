"""store.maintain(): every lifecycle job, idempotent, process-safe, on schedule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from shared_core import MemoryStore
from shared_core.cli import main
from shared_core.lifecycle.maintenance import STEPS

ROOT = Path(__file__).resolve().parents[2]


def _busy_store(store, clock):
    store.add("short lived note", ttl=60)
    store.learnings.add("Prefer small batches for imports", type="Heuristic", confidence=0.8)
    for i in range(6):
        store.conversations.append("s1", "user", f"message {i} about the quarterly planning meeting")
    clock.advance(days=400)


def test_maintain_runs_every_step_and_is_idempotent(store, clock):
    _busy_store(store, clock)
    first = store.maintain()
    assert first.status == "ran" and [s.name for s in first.steps] == list(STEPS)
    assert not first.errors, str(first)
    assert first.changed
    by_name = {s.name: s for s in first.steps}
    assert by_name["expire"].changed and by_name["decay"].changed and by_name["forget"].changed
    second = store.maintain()
    assert second.status == "ran" and not second.changed, str(second)
    assert "<table>" in second._repr_html_() and "maintenance ran" in str(second)


def test_empty_store(store):
    report = store.maintain()
    assert report.status == "ran" and not report.errors and not report.changed


def test_if_due_follows_seed_002_schedule(store, clock):
    assert store.maintain(if_due=True).status == "not_due"  # a new store waits for 4am
    clock.advance(days=1)
    assert store.maintain(if_due=True).status == "ran"
    assert store.maintain(if_due=True).status == "not_due"
    assert store.maintenance.next_due() > clock.now()


def test_a_failing_step_is_reported_and_the_rest_run(store, monkeypatch):
    def broken():
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(store.maintenance, "_decay", broken)
    report = store.maintain()
    assert [s.name for s in report.errors] == ["decay"] and "disk on fire" in report.errors[0].error
    assert {s.name for s in report.steps} == set(STEPS)


def test_only_some_steps_and_unknown_steps(store):
    assert [s.name for s in store.maintain(steps=["expire", "reembed"]).steps] == ["expire", "reembed"]
    with pytest.raises(ValueError, match="unknown maintenance steps"):
        store.maintain(steps=["vacuum the cat"])


def test_second_concurrent_run_is_skipped(tmp_path, clock):
    path = tmp_path / "m.db"
    with MemoryStore.open(path, clock=clock) as a, MemoryStore.open(path, clock=clock) as b:
        lock = a.maintenance._locks.acquire("maintenance", 60_000)
        assert lock is not None
        assert b.maintain().status == "skipped_locked"
        a.maintenance._locks.release(lock)
        assert b.maintain().status == "ran"


def test_a_killed_maintain_frees_its_lock_at_once(tmp_path, clock):
    """A maintain killed half-way (its lock row left behind, 10 minutes to live) blocks nobody."""
    path = tmp_path / "killed.db"
    MemoryStore.open(path, clock=clock).close()
    code = (f"import os, sys; sys.path.insert(0, {str(ROOT)!r}); from shared_core import MemoryStore; "
            f"s = MemoryStore.open({str(path)!r}); lock = s.maintenance._locks.acquire('maintenance', 600_000); "
            "print(lock is not None, flush=True); os.kill(os.getpid(), 9)")
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, timeout=120)
    assert proc.stdout.strip() == "True" and proc.returncode == -9
    with MemoryStore.open(path, clock=clock) as s:
        assert s.maintenance._locks.current("maintenance") is not None  # the dead holder's row is there
        assert s.maintain().status == "ran"


def test_a_live_holder_in_another_process_keeps_its_lock(tmp_path):
    path = tmp_path / "alive.db"
    MemoryStore.open(path).close()
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from shared_core import MemoryStore; "
            f"s = MemoryStore.open({str(path)!r}); lock = s.maintenance._locks.acquire('maintenance', 600_000); "
            "print(lock is not None, flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "True"
        with MemoryStore.open(path) as s:  # the system clock, as the holder's
            assert s.maintain().status == "skipped_locked"
    finally:
        proc.communicate("", timeout=120)


def test_two_processes_maintaining_at_once(tmp_path):
    path = tmp_path / "procs.db"
    with MemoryStore.open(path) as s:
        s.add_many([f"memory {i}" for i in range(50)])
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from shared_core import MemoryStore; "
            f"s = MemoryStore.open({str(path)!r}); print(s.maintain().status); s.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    statuses = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert all(p.returncode == 0 for p in procs)
    assert set(statuses) <= {"ran", "skipped_locked"} and "ran" in statuses
    with MemoryStore.open(path) as s:
        assert s.count() == 50
        if s.db.dialect == "sqlite":
            assert s.db.scalar("PRAGMA integrity_check") == "ok"


@pytest.mark.sqlite_only  # the change log only feeds the SQLite vector mirror
def test_index_log_is_trimmed(store, monkeypatch):
    import shared_core.lifecycle.maintenance as maintenance

    monkeypatch.setattr(maintenance, "INDEX_LOG_KEEP", 5)
    store.add_many([f"entry {i}" for i in range(20)])
    report = store.maintain(steps=["index_log"])
    assert report.changed and store.db.scalar("SELECT count(*) FROM index_log") <= 6
    assert store.search("entry 7", fusion="vector").ids  # a mirror reloads when the log was trimmed past it


def test_cli_maintain(tmp_path):
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "c.db"), "maintain"], catch_exceptions=False)
    assert result.exit_code == 0 and "maintenance ran" in result.output

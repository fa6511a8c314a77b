"""Maintenance on schedule: the server runs maintain(if_due=True) on memory.prune_schedule and reports it."""

from __future__ import annotations

import threading
import time

from starlette.testclient import TestClient

from shared_core import ManualClock, MemoryStore
from shared_core.server.rest import create_app
from shared_core.server.scheduler import MaintenanceScheduler

UTC = {"memory": {"schedule_timezone": "UTC"}}  # seed 002's "0 4 * * *", read in UTC for the test


def _wait(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_runs_when_the_schedule_fires_and_not_before(tmp_path):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with MemoryStore.open(tmp_path / "m.db", clock=clock, config=UTC) as store:
        scheduler = MaintenanceScheduler(store, poll_seconds=60)
        assert scheduler.check().status == "not_due"
        status = scheduler.status()
        assert status["schedule"] == "0 4 * * *" and status["next_due"] == "2026-01-01T04:00:00.000000Z"
        assert status["last_check"] == "2026-01-01T00:00:00.000000Z" and status["last_run"] is None
        clock.set("2026-01-01T04:00:30Z")
        report = scheduler.check()
        assert report.status == "ran" and not report.errors
        status = scheduler.status()
        assert status["last_run"]["status"] == "ran" and status["last_run"]["at"] == "2026-01-01T04:00:30.000000Z"
        assert {s["name"] for s in status["last_run"]["steps"]} >= {"expire", "decay", "prune", "usage"}
        assert status["last_recorded_run"]["status"] == "ran"
        assert status["next_due"] == "2026-01-02T04:00:00.000000Z"
        assert scheduler.check().status == "not_due"  # once per fire time
        clock.set("2026-01-03T09:00:00Z")  # the machine was off at 04:00: the missed run happens once
        assert scheduler.check().status == "ran" and scheduler.check().status == "not_due"


def test_the_background_thread_and_the_status_endpoint(tmp_path, tokens, base_url):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with MemoryStore.open(tmp_path / "m.db", clock=clock, config=UTC) as store:
        scheduler = MaintenanceScheduler(store, poll_seconds=0.05)
        app = create_app(store, tokens=tokens[0], scheduler=scheduler, mcp=False)
        with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {tokens[1]}"}) as client:
            _wait(lambda: scheduler.status()["last_check"] is not None)
            status = client.get("/api/maintenance").json()
            assert status["thread_alive"] and status["enabled"] and status["last_run"] is None
            clock.set("2026-01-01T04:05:00Z")
            _wait(lambda: client.get("/api/maintenance").json()["last_run"] is not None)
            status = client.get("/api/maintenance").json()
            assert status["last_run"]["status"] == "ran" and status["last_recorded_run"]["status"] == "ran"
            assert all("summary" in step for step in status["last_run"]["steps"])
            limited = tokens[0].add("alice", ["user:alice"])
            hidden = client.get("/api/maintenance", headers={"Authorization": f"Bearer {limited}"}).json()
            assert hidden["last_run"]["status"] == "ran"
            assert all("summary" not in step for step in hidden["last_run"]["steps"])  # counts of other namespaces
        assert not scheduler.status()["thread_alive"]  # stopped with the app


def test_a_failing_run_is_reported_and_the_thread_keeps_going(tmp_path, monkeypatch):
    clock = ManualClock("2026-01-01T05:00:00Z")
    with MemoryStore.open(tmp_path / "m.db", clock=clock, config=UTC) as store:
        calls = []

        def broken(**kwargs):
            calls.append(kwargs)
            raise RuntimeError("disk on fire")

        monkeypatch.setattr(store, "maintain", broken)
        scheduler = MaintenanceScheduler(store, poll_seconds=0.02)
        scheduler.start()
        try:
            _wait(lambda: len(calls) >= 3)
        finally:
            scheduler.stop()
        status = scheduler.status()
        assert status["last_run"]["status"] == "failed" and "disk on fire" in status["last_run"]["error"]
        assert scheduler.status(details=False)["last_run"]["error"] == "maintenance failed (details in the server log)"


def test_two_servers_on_one_file_run_it_once(tmp_path):
    clock = ManualClock("2026-01-01T00:00:00Z")
    MemoryStore.open(tmp_path / "m.db", clock=clock, config=UTC).close()
    clock.set("2026-01-01T04:00:01Z")
    with MemoryStore.open(tmp_path / "m.db", clock=clock, config=UTC) as one, \
            MemoryStore.open(tmp_path / "m.db", clock=clock, config=UTC) as two:
        results = []
        barrier = threading.Barrier(2)

        def run(store):
            barrier.wait()
            results.append(MaintenanceScheduler(store).check().status)

        threads = [threading.Thread(target=run, args=(s,)) for s in (one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) in (["not_due", "ran"], ["ran", "skipped_locked"])

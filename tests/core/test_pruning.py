"""Size-based pruning into the archive (seed 002): measure live data, archive the bottom percent."""

from __future__ import annotations

import json
import math
import threading

import pytest

from shared_core import ManualClock, MemoryStore
from shared_core.ranking import prune_count, prune_weight


def _store(path, clock, **memory):
    config = {"memory": {"schedule_timezone": "UTC", **memory}}
    return MemoryStore.open(path, clock=clock, config=config)


def _fill(store, n, *, start=0):
    return store.add_many(
        [{"text": f"note {i} about topic{i % 7} with words alpha beta gamma {i}", "tags": [f"t{i % 3}"]}
         for i in range(start, start + n)]
    )


def _settled_size(store):
    """The live size once the FTS index is merged (what pruning compares with the limit)."""
    store.kernel.keyword.optimize()
    return store.pruning.measure().total


# -- the formula --------------------------------------------------------------------------------


def test_prune_weight_is_the_seed_rank_without_bm25():
    # seed 002: score 3 = 1.82x, 0 = 1.0x, -1 = 0.82x, -5 = 0.37x; recency 1/(1 + days x 0.01)
    assert prune_weight(3, 0) == pytest.approx(1.82, abs=0.005)
    assert prune_weight(0, 0) == 1.0
    assert prune_weight(-1, 0) == pytest.approx(0.82, abs=0.005)
    assert prune_weight(-5, 0) == pytest.approx(0.37, abs=0.005)
    assert prune_weight(0, 100) == pytest.approx(0.5)
    assert prune_weight(3, 100) == pytest.approx(math.exp(0.6) / 2)
    assert prune_weight(0, -10) == 1.0  # a clock that went back counts as no time
    assert prune_weight(1, 0, score_weight=0.5, recency_rate=0.1) == pytest.approx(math.exp(0.5))


def test_prune_count_is_percent_rounded_up():
    assert prune_count(1000, 1.0) == 10
    assert prune_count(50, 1.0) == 1
    assert prune_count(3, 50.0) == 2
    assert prune_count(0, 1.0) == 0
    assert prune_count(10, 0.0) == 0
    assert prune_count(10, 100.0) == 10


def test_defaults_are_the_seeds():
    from shared_core import Config

    cfg = Config.from_dict({}).memory
    assert (cfg.max_size, cfg.prune_percent, cfg.prune_schedule) == (100 * 10**6, 1.0, "0 4 * * *")


# -- measuring ----------------------------------------------------------------------------------


@pytest.mark.sqlite_only  # dbstat and the estimate; test_postgres_backend.py measures with pg_column_size
def test_measure_counts_live_data_not_the_archive(store):
    ids = _fill(store, 60)
    before = store.pruning.measure()
    assert before.method == "dbstat" and before.rows == 60
    assert before.parts["vectors"] == 60 * store.embedder.dims * 4
    estimate = store.pruning.measure("estimate")
    assert estimate.rows == 60 and 0.5 < estimate.total / before.total < 2.0
    store.archive(ids[:30], reason="manual")
    store.db.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
    after = store.pruning.measure()
    assert after.rows == 30 and after.total < 0.6 * before.total
    assert store.pruning.measure("estimate").total < 0.6 * estimate.total
    with pytest.raises(ValueError, match="unknown measure"):
        store.pruning.measure("pages")


def test_empty_store(store):
    report = store.pruning.run()
    assert report.status == "under_limit" and report.archived == 0 and report.before.rows == 0
    store.config.memory.max_size = 1  # even a 1-byte limit: nothing there to prune
    report = store.pruning.run()
    assert report.status in ("under_limit", "nothing_prunable") and report.archived == 0


# -- pruning ------------------------------------------------------------------------------------


def test_archives_the_bottom_percent_by_score_and_recency_never_pinned(clock):
    with _store(":memory:", clock, prune_percent=10.0) as store:
        old_bad = store.add("ancient and demoted remark", created_at="2025-01-01T00:00:00Z")
        store.demote(old_bad)
        pinned = store.add("ancient pinned remark that must stay", created_at="2024-01-01T00:00:00Z", pinned=True)
        for _ in range(5):
            store.demote(pinned)
        old = store.add("old but neutral remark", created_at="2025-03-01T00:00:00Z")
        fresh = _fill(store, 17)
        store.reinforce(fresh[0])
        # 20 live rows, 10 % -> 2 archived: the two lowest weights among the unpinned
        weights = {m.id: prune_weight(m.score, (clock.now() - (m.last_hit_at or m.created_at)).days)
                   for m in store.list(limit=None) if not m.pinned}
        expected = sorted(weights, key=weights.get)[:2]
        assert set(expected) == {old_bad, old}
        assert [mid for _, mid in store.pruning.candidates(2)] == expected
        store.config.memory.max_size = _settled_size(store) - 1
        report = store.pruning.run()
        assert report.status == "pruned" and report.archived == 2
        assert set(report.archived_ids) == {old_bad, old}
        assert store.get(pinned).pinned
        # archived rows left the live index and stay keyword-searchable and restorable
        assert old not in store.search("neutral remark").ids
        assert store.archive.search("neutral").ids == [old]
        assert store.archive.get(old).archive_reason == "size-prune"
        assert store.archive.restore(old)[0].id == old


def test_all_pinned_prunes_nothing(store):
    store.add_many([{"text": f"pinned fact number {i}", "pinned": True} for i in range(20)])
    store.config.memory.max_size = 1000
    report = store.pruning.run()
    assert report.status == "nothing_prunable" and report.archived == 0 and report.over_limit
    assert store.count() == 20


def test_only_prunable_kinds_are_archived(store):
    store.add_many([{"text": f"knowledge base chunk {i}", "kind": "document"} for i in range(10)])
    store.add_many([{"text": f"vector store node {i}", "kind": "node"} for i in range(10)])
    facts = store.add_many([f"an old fact {i}" for i in range(10)])
    store.config.memory.max_size = 1000
    report = store.pruning.run(until_under=True)
    assert report.status == "pruned" and set(report.archived_ids) == set(facts)
    assert store.pruning.run().status == "nothing_prunable"
    assert store.count(kind="document") == 10 and store.count(kind="node") == 10
    store.config.memory.prune_kinds = ()
    assert store.pruning.candidates(5) == []


def test_repeated_runs_converge_and_then_stop(tmp_path, clock):
    with _store(tmp_path / "mem.db", clock, prune_percent=5.0) as store:
        _fill(store, 120)
        full = store.pruning.measure().total
        limit = int(full * 0.7)
        store.config.memory.max_size = limit
        sizes, archived = [full], 0
        for _ in range(40):
            report = store.pruning.run()
            archived += report.archived
            sizes.append(report.after.total)
            if report.status == "under_limit":
                break
            assert report.status == "pruned" and report.archived == math.ceil(report.before.rows * 0.05)
        assert report.status == "under_limit" and report.archived == 0
        assert sizes[-1] <= limit < sizes[-3]  # it stopped once under, not before
        assert all(b >= a for a, b in zip(sizes[1:], sizes[:-1], strict=True))  # never grows
        live = store.count()
        assert live + store.archive.count() == 120 and live == 120 - archived
        # and the next runs change nothing
        for _ in range(2):
            again = store.pruning.run()
            assert again.status == "under_limit" and again.archived == 0
        assert store.count() == live


def test_until_under_in_one_call_and_estimate_method(tmp_path, clock):
    with _store(tmp_path / "mem.db", clock) as store:  # the seed's 1 %
        _fill(store, 150)
        limit = int(store.pruning.measure("estimate").total * 0.9)
        store.config.memory.max_size = limit
        report = store.pruning.run(until_under=True, method="estimate")
        assert report.status == "pruned" and report.rounds > 1 and report.after.total <= limit
        assert report.after.method == ("estimate" if store.db.dialect == "sqlite" else "pg_column_size")
        assert store.pruning.run(method="estimate").archived == 0


@pytest.mark.sqlite_only  # auto_vacuum and the freelist are SQLite's
def test_space_is_reclaimed_with_incremental_vacuum(tmp_path, clock):
    with _store(tmp_path / "mem.db", clock, prune_percent=30.0) as store:
        _fill(store, 200)
        assert store.db.scalar("PRAGMA auto_vacuum") == 0
        store.config.memory.max_size = 1
        first = store.pruning.run()
        assert first.switched_to_incremental and first.archived == 60
        assert store.db.scalar("PRAGMA auto_vacuum") == 2
        second = store.pruning.run()
        assert not second.switched_to_incremental and second.archived == 42
        assert second.pages_reclaimed > 0
        assert store.db.scalar("PRAGMA freelist_count") <= 1  # SQLite 3.40 may keep one page, 3.45+ none


def test_dry_run_changes_nothing(store):
    _fill(store, 30)
    store.config.memory.max_size = 1
    report = store.pruning.run(dry_run=True)
    assert report.status == "dry_run" and report.archived == 1 and len(report.archived_ids) == 1
    assert store.count() == 30 and store.archive.count() == 0 and store.pruning.last_run() is None


def test_disabled_with_zero_max_size(store):
    _fill(store, 5)
    store.config.memory.max_size = 0
    assert store.pruning.run().status == "disabled"
    assert store.count() == 5


def test_if_due_follows_the_schedule_and_the_last_run(tmp_path):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with _store(tmp_path / "mem.db", clock) as store:
        _fill(store, 10)
        # created at midnight: the first 04:00 has not come yet
        assert store.pruning.run(if_due=True).status == "not_due"
        assert store.pruning.next_due().isoformat() == "2026-01-01T04:00:00+00:00"
        clock.set("2026-01-01T04:00:00Z")
        assert store.pruning.is_due()
        assert store.pruning.run(if_due=True).status == "under_limit"
        assert store.pruning.last_run().last_run_at == clock.now()
        clock.advance(hours=12)
        report = store.pruning.run(if_due=True)
        assert report.status == "not_due" and report.next_due.isoformat() == "2026-01-02T04:00:00+00:00"
        clock.set("2026-01-03T09:00:00Z")  # missed a day: one run catches up
        assert store.pruning.run(if_due=True).status == "under_limit"
        assert store.pruning.run(if_due=True).status == "not_due"
        # the clock goes back before the last run: not due, nothing breaks
        clock.set("2026-01-02T05:00:00Z")
        assert store.pruning.run(if_due=True).status == "not_due"
        assert store.pruning.run().status == "under_limit"  # without if_due it always checks
        assert store.pruning.last_run().last_run_at.isoformat() == "2026-01-03T09:00:00+00:00"  # never moves back
        clock.set("2026-01-04T04:00:00Z")
        assert store.pruning.run(if_due=True).status == "under_limit"


def test_clock_going_backwards_does_not_break_the_order(store, clock):
    future = store.add("written in the future", created_at="2026-06-01T00:00:00Z")
    store.add("written now")
    store.demote(future)
    store.config.memory.max_size = 1
    report = store.pruning.run()
    assert report.archived_ids == (future,)  # days clamp at 0; the demoted one weighs least


def test_two_connections_racing_for_a_due_prune(tmp_path):
    clock = ManualClock("2026-01-01T00:00:00Z")
    path = tmp_path / "mem.db"
    with _store(path, clock, prune_percent=10.0) as setup:
        _fill(setup, 50)
        limit = _settled_size(setup) - 1
    clock.set("2026-01-01T05:00:00Z")
    stores = [_store(path, clock, prune_percent=10.0, max_size=limit) for _ in range(2)]
    reports = []
    barrier = threading.Barrier(2)

    def go(store):
        barrier.wait()
        reports.append(store.pruning.run(if_due=True))

    threads = [threading.Thread(target=go, args=(s,)) for s in stores]
    [t.start() for t in threads]
    [t.join() for t in threads]
    try:
        statuses = sorted(r.status for r in reports)
        assert statuses == ["not_due", "pruned"]
        assert sum(r.archived for r in reports) == 5
        assert stores[0].count() == 45
    finally:
        for s in stores:
            s.close()


def test_two_connections_pruning_at_once_do_not_overshoot(tmp_path, clock):
    path = tmp_path / "mem.db"
    with _store(path, clock, prune_percent=10.0) as setup:
        _fill(setup, 50)
        one_round = _settled_size(setup) - 1  # one round of 10 % gets under this
    stores = [_store(path, clock, prune_percent=10.0, max_size=one_round) for _ in range(2)]
    barrier = threading.Barrier(2)
    reports = []

    def go(store):
        barrier.wait()
        reports.append(store.pruning.run())

    threads = [threading.Thread(target=go, args=(s,)) for s in stores]
    [t.start() for t in threads]
    [t.join() for t in threads]
    try:
        assert sorted(r.status for r in reports) == ["pruned", "under_limit"]
        assert stores[1].count() == 45 and stores[1].archive.count() == 5
    finally:
        for s in stores:
            s.close()


def test_report_renders(store):
    _fill(store, 3)
    report = store.pruning.run()
    assert "size-prune under_limit" in str(report)
    assert "<table>" in report._repr_html_()
    data = report.to_dict()
    assert data["status"] == "under_limit" and isinstance(data["ran_at"], str)


def test_cli_prune(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from shared_core.cli import main

    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    texts = ("kiwi orchard visit", "the server runs in Frankfurt", "quarterly report is due",
             "dentist appointment on Tuesday", "the cat likes tuna")  # distinct: no near-duplicate merging
    for text in texts:
        assert runner.invoke(main, ["--db", db, "add", text]).exit_code == 0
    dry = runner.invoke(main, ["--db", db, "prune", "--dry-run", "--max-size", "1KB"])
    assert dry.exit_code == 0 and "would archive:" in dry.output
    done = runner.invoke(main, ["--db", db, "prune", "--max-size", "1KB", "--until-under", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["status"] == "pruned" and report["archived"] == 5
    assert "under_limit" in runner.invoke(main, ["--db", db, "prune"]).output
    bad = runner.invoke(main, ["--db", db, "prune", "--max-size", "lots"])
    assert bad.exit_code != 0 and "100MB" in bad.output


_RACER = """
import json, sys
from shared_core import ManualClock, MemoryStore
store = MemoryStore.open(sys.argv[1], clock=ManualClock("2026-01-01T05:00:00Z"),
                         config={"memory": {"schedule_timezone": "UTC", "prune_percent": 10.0,
                                            "max_size": int(sys.argv[2])}})
sys.stdin.readline()  # start together
report = store.pruning.run(if_due=True)
print(json.dumps({"status": report.status, "archived": report.archived}))
"""


def test_two_processes_racing_for_a_due_prune(tmp_path):
    import os
    import subprocess
    import sys

    clock = ManualClock("2026-01-01T00:00:00Z")
    path = str(tmp_path / "mem.db")
    with _store(path, clock) as setup:
        _fill(setup, 40)
        limit = _settled_size(setup) - 1
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, path, str(limit)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [p.communicate("go\n", timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    results = sorted((json.loads(out) for out, _ in outs), key=lambda r: r["status"])
    assert [r["status"] for r in results] == ["not_due", "pruned"]
    assert results[1]["archived"] == 4
    with _store(path, clock) as check:
        assert check.count() == 36 and check.archive.count() == 4

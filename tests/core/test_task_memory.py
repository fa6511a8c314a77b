"""Task memory (seed 000, layer 2): in process while running, one transaction on completion,
never lost (journal, flush on close, recovery after a crash)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shared_core import ManualClock, MemoryStore, NotFoundError
from shared_core.tasks import service as tasks_module

ROOT = Path(__file__).resolve().parents[2]


def _count(store, table, where="1", params=()):
    return store.db.scalar(f"SELECT count(*) FROM {table} WHERE {where}", params)


def test_complete_flushes_task_cycles_and_findings_with_the_seed_fields(store, clock):
    task = store.tasks.start("Add pagination to the orders API", category="api", session_id="s-1")
    c1 = task.cycle(0.62, "continue", input_tokens=1200, output_tokens=300, duration_ms=4100)
    f1 = task.finding("major", "correctness", "Off-by-one on the last page", description="page 3 repeats",
                      location="orders.py:88", fix="use >= instead of >")
    clock.advance(minutes=5)
    c2 = task.cycle(0.9, "accept", input_tokens=800, output_tokens=200, duration_ms=2500)
    task.resolve(f1)
    assert _count(store, "tasks") == 0 and _count(store, "iteration_cycles") == 0  # in process until completion
    outcome = task.complete(total_cost_usd=0.012)
    row = store.db.query("SELECT description, category, session_id, final_score, iterations, decision, total_tokens, "
                         "total_cost_usd, completed_at, status FROM tasks WHERE id = ?", (task.id,))[0]
    assert row == ("Add pagination to the orders API", "api", "s-1", 0.9, 2, "accept", 2500, 0.012,
                   "2026-01-01T00:05:00.000000Z", "completed")
    cycles = store.db.query("SELECT id, iteration, score, decision, input_tokens, output_tokens, duration_ms "
                            "FROM iteration_cycles WHERE task_id = ? ORDER BY iteration", (task.id,))
    assert cycles == [(c1.id, 1, 0.62, "continue", 1200, 300, 4100), (c2.id, 2, 0.9, "accept", 800, 200, 2500)]
    finding = store.db.query("SELECT cycle_id, severity, dimension, title, description, location, fix, resolved_in "
                             "FROM findings")[0]
    assert finding == (c1.id, "major", "correctness", "Off-by-one on the last page", "page 3 repeats",
                       "orders.py:88", "use >= instead of >", c2.id)
    assert _count(store, "task_journal") == 0
    record = store.tasks.get(task.id)
    assert record.scores == [0.62, 0.9] and record.findings[0].resolved_in == c2.id
    assert outcome.task.status == "completed" and record.status == "completed"


def test_every_step_is_journaled_until_the_flush(store):
    task = store.tasks.start("Refactor the billing module", skills=["code-review"])
    task.cycle(0.5)
    task.finding("minor", "style", "Long function")
    entries = [json.loads(e) for (e,) in store.db.query("SELECT entry FROM task_journal ORDER BY seq")]
    assert [e["op"] for e in entries] == ["start", "skill", "cycle", "finding"]
    task.complete()
    assert _count(store, "task_journal") == 0


def test_flush_is_one_transaction(store, monkeypatch):
    task = store.tasks.start("Write the release notes")
    task.cycle(0.7)
    task.finding("minor", "clarity", "Jargon in the intro")

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(store.kernel.memories, "write", broken)
    with pytest.raises(RuntimeError):
        task.complete()
    assert _count(store, "tasks") == 0 and _count(store, "iteration_cycles") == 0 and _count(store, "findings") == 0
    assert _count(store, "task_journal") == 3  # nothing lost, and the task is still running
    monkeypatch.undo()
    assert not task.finished
    task.complete()
    assert _count(store, "tasks") == 1 and _count(store, "findings") == 1


def test_leaving_the_block_unfinished_flushes_as_abandoned_or_failed(store):
    with store.tasks.start("Migrate the cron jobs") as task:
        task.cycle(0.4, "continue")
    assert store.tasks.get(task.id).status == "abandoned"
    with pytest.raises(KeyError):
        with store.tasks.start("Migrate the queue workers") as failing:
            failing.cycle(0.3)
            raise KeyError("boom")
    record = store.tasks.get(failing.id)
    assert record.status == "failed" and record.completed_at is None and record.iterations == 1
    assert store.learnings.list() == []  # unfinished tasks teach nothing


def test_closing_the_store_flushes_running_tasks(tmp_path, clock):
    path = tmp_path / "mem.db"
    store = MemoryStore.open(path, clock=clock)
    task = store.tasks.start("Tune the search ranking")
    task.cycle(0.66, "continue")
    store.close()
    with MemoryStore.open(path, clock=clock) as again:
        record = again.tasks.get(task.id)
        assert record.status == "abandoned" and record.scores == [0.66]


def test_a_crashed_process_is_recovered_from_the_journal(tmp_path):
    path = tmp_path / "crash.db"
    script = textwrap.dedent(f"""
        import os
        from shared_core import MemoryStore, ManualClock
        store = MemoryStore.open({str(path)!r}, clock=ManualClock("2026-01-01"))
        task = store.tasks.start("Port the importer to async", category="refactor", id="crashy")
        task.cycle(0.55, "continue", input_tokens=10, output_tokens=5)
        f = task.finding("blocker", "tests", "Event loop closed")
        task.cycle(0.7, "continue")
        task.resolve(f)
        os._exit(3)  # no close, no flush: the process dies here
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    with MemoryStore.open(path, clock=ManualClock("2026-01-01T00:01:00Z")) as store:
        record = store.tasks.get("crashy")  # store.tasks recovered it on first use
        assert record.status == "interrupted" and record.category == "refactor"
        assert record.scores == [0.55, 0.7] and record.total_tokens == 15
        assert record.findings[0].resolved_in == record.cycles[1].id
        assert _count(store, "task_journal") == 0
        assert store.tasks.recover() == []


def test_a_journal_from_another_machine_waits_until_stale(store, clock):
    task = store.tasks.start("Long task on a build server")
    task.cycle(0.5)
    store.db.execute("UPDATE task_journal SET owner = 'other-host:123:abcd'")
    task._done()  # this process lets go of it, as if it had never held it
    assert store.tasks.recover() == []
    clock.advance(hours=25)
    assert store.tasks.recover() == [task.id]
    assert store.tasks.get(task.id).status == "interrupted"


def test_a_forgotten_recorder_is_recoverable_in_the_same_process(store):
    task = store.tasks.start("Half-done chore")
    task.cycle(0.2)
    task_id = task.id
    store.tasks._recorders.discard(task)
    del task
    import gc

    gc.collect()
    assert task_id not in tasks_module._ACTIVE
    assert store.tasks.recover() == [task_id]


def test_completion_updates_skills_indexes_the_task_and_logs_usage(store):
    with store.tasks.start("Summarise the weekly metrics", skills=["sql", "charts"]) as task:
        task.cycle(0.8, "accept")
        task.complete()
    assert [s.skill_name for s in store.skills.rank("general")] == ["charts", "sql"]  # no category: "general"
    memory = store.get(task.id)
    assert memory.kind == "task" and memory.owner_id == task.id and "Summarise the weekly metrics" in memory.text
    assert store.search("weekly metrics", kind="task").ids == [task.id]
    (event,) = store.usage.events()
    assert (event.event_type, event.skills, event.score) == ("task", ("sql", "charts"), 0.8)


def test_complete_defaults_and_an_empty_task(store):
    task = store.tasks.start("Nothing happened")
    outcome = task.complete()
    assert outcome.task.iterations == 0 and outcome.task.final_score is None and outcome.task.total_tokens is None
    assert outcome.learnings.created == []
    with pytest.raises(ValueError, match="already completed"):
        task.cycle(0.5)


def test_bad_input_is_refused_clearly(store):
    with pytest.raises(ValueError, match="must not be empty"):
        store.tasks.start("   ")
    task = store.tasks.start("Check inputs", id="t-1")
    with pytest.raises(ValueError, match="already exists"):
        store.tasks.start("Again", id="t-1")
    with pytest.raises(ValueError, match="record a cycle first"):
        task.finding("blocker", "tests", "no cycle yet")
    with pytest.raises(ValueError, match="between 0 and 1"):
        task.cycle(1.5)
    with pytest.raises(ValueError, match="non-negative whole number"):
        task.cycle(0.5, input_tokens=-1)
    task.cycle(0.5)
    with pytest.raises(NotFoundError):
        task.resolve("nope")
    with pytest.raises(NotFoundError):
        task.finding("minor", "x", "y", cycle=7)
    store.add("a fact with a chosen id", id="taken")
    with pytest.raises(ValueError, match="already used by a memory"):
        store.tasks.start("Clash", id="taken")


def test_clock_going_backwards_is_harmless(store, clock):
    task = store.tasks.start("Time travel")
    task.cycle(0.5)
    clock.advance(days=-3)
    task.cycle(0.6, "accept")
    record = task.complete().task
    assert record.iterations == 2 and record.completed_at < record.created_at


def test_list_filters_and_namespaces(store):
    for i, category in enumerate(["api", "api", "docs"]):
        with store.tasks.start(f"task {i}", category=category, namespace="team:a") as t:
            t.cycle(0.9, "accept")
            t.complete()
    store.tasks.start("other team", namespace="team:b").complete()
    assert len(store.tasks.list(namespace="team:a")) == 3
    assert len(store.tasks.list(namespace="team:a", category="api")) == 2
    assert store.tasks.list(namespace="team:a", status="abandoned") == []
    with pytest.raises(NotFoundError):
        store.tasks.get(store.tasks.list(namespace="team:b")[0].id, namespace="team:a")


def test_erase_namespace_removes_tasks_cycles_findings_and_journal(store):
    with store.tasks.start("secret task", namespace="user:x") as t:
        t.cycle(0.9)
        t.finding("blocker", "privacy", "leak")
        t.finding("blocker", "privacy", "leak again")
        t.complete()
    store.tasks.start("still running", namespace="user:x").cycle(0.1)
    store.erase_namespace("user:x")
    for table in ("tasks", "iteration_cycles", "findings", "task_journal", "learnings", "usage_events"):
        assert _count(store, table) == 0, table


def test_a_failing_extraction_does_not_undo_the_completion(store, monkeypatch):
    def broken(record):
        raise RuntimeError("embedder offline")

    monkeypatch.setattr(store.learnings, "extract", broken)
    with store.tasks.start("Ship it") as task:
        task.cycle(0.9, "accept")
        outcome = task.complete()
    assert outcome.learnings.error == "RuntimeError: embedder offline"
    assert store.tasks.get(task.id).status == "completed"


def test_erasing_a_namespace_drops_its_running_tasks(store):
    task = store.tasks.start("private and unfinished", namespace="user:y")
    task.cycle(0.3)
    store.erase_namespace("user:y")
    with pytest.raises(ValueError, match="already erased"):
        task.cycle(0.4)
    assert store.tasks.close_all() == 0
    assert store.db.scalar("SELECT count(*) FROM tasks") == 0

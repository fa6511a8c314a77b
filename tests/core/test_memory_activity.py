"""A memory's access and feedback by day (memory_activity): written by access tracking and feedback,
bounded to the retention window, kept across archiving, gone with the memory or its namespace."""

from __future__ import annotations

from shared_core.memories.activity_repository import RETENTION_DAYS

ALICE, BOB = "user:alice", "user:bob"


def days(store, memory_id):
    with store.kernel.session():
        return [(d.day, d.accesses, d.reinforcements, d.demotions, d.score_delta)
                for d in store.kernel.memories.activity.days(memory_id)]


def rows(store, namespace):
    with store.kernel.session():
        return store.kernel.memories.activity.rows(namespace)


def test_searches_and_feedback_are_counted_per_day_on_the_store_clock(store, clock):
    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    cake = store.add("Alice bakes lemon cake", namespace=ALICE)
    store.search("Alice tea", namespace=ALICE)
    store.search("Alice tea", namespace=ALICE)
    store.reinforce(tea, namespace=ALICE)
    clock.advance(days=2)
    store.search("Alice tea", namespace=ALICE)
    store.demote(tea, namespace=ALICE)
    store.demote(tea, namespace=ALICE, weight=0.5)
    assert days(store, tea) == [("2026-01-01", 2, 1, 0, 3.0), ("2026-01-03", 1, 0, 2, -1.5)]
    assert [d[:2] for d in days(store, cake)] == [("2026-01-01", 2), ("2026-01-03", 1)]
    # the counters it sits beside agree
    assert store.get(tea, namespace=ALICE).access_count == 3


def test_reads_that_do_not_count_as_access_leave_no_trace(store):
    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    store.search("Alice tea", namespace=ALICE, track_access=False)
    store.get(tea, namespace=ALICE)
    assert days(store, tea) == []
    assert store.inspector.memory(tea, ALICE).activity == []


def test_the_log_keeps_the_retention_window_and_one_row_per_memory_and_day(store, clock):
    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    for _ in range(RETENTION_DAYS + 30):
        store.search("Alice tea", namespace=ALICE)
        store.search("oolong", namespace=ALICE)
        clock.advance(days=1)
    store.search("Alice tea", namespace=ALICE)
    kept = days(store, tea)
    assert len(kept) == RETENTION_DAYS and len({d[0] for d in kept}) == RETENTION_DAYS
    assert kept[-1] == (clock.now().date().isoformat(), 1, 0, 0, 0.0)
    assert all(d[1] == 2 for d in kept[:-1])
    # the inspector shows the same window
    assert [a.day for a in store.inspector.memory(tea, ALICE).activity] == [d[0] for d in kept]


def test_archiving_restoring_and_editing_keep_the_activity(store):
    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    store.search("Alice tea", namespace=ALICE)
    store.reinforce(tea, namespace=ALICE)
    before = days(store, tea)
    store.archive(tea, namespace=ALICE)
    assert days(store, tea) == before
    assert [a.accesses for a in store.inspector.memory(tea, ALICE).activity] == [1]
    store.archive.restore(tea, namespace=ALICE)
    assert days(store, tea) == before
    store.update(tea, text="Alice drinks jasmine tea", namespace=ALICE)  # an edit is the same memory
    store.add("Alice drinks green tea", id=tea, namespace=ALICE)  # and so is an upsert of its id
    assert days(store, tea) == before


def test_deleting_a_memory_deletes_its_activity(store):
    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    cake = store.add("Alice bakes lemon cake", namespace=ALICE)
    store.search("Alice", namespace=ALICE)
    store.reinforce(tea, namespace=ALICE)
    store.delete(tea, namespace=ALICE)
    assert days(store, tea) == []
    assert len(days(store, cake)) == 1
    store.archive(cake, namespace=ALICE)  # an archived memory's activity goes when the archive forgets it
    store.archive.erase(ALICE)
    assert days(store, cake) == [] and rows(store, ALICE) == 0


def test_erasing_a_namespace_erases_its_activity_and_nothing_else(store):
    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    gone = store.add("Alice once had a cat", namespace=ALICE)
    coffee = store.add("Bob drinks coffee", namespace=BOB)
    store.search("drinks", namespace=ALICE)
    store.search("Alice cat", namespace=ALICE)
    store.search("drinks", namespace=BOB)
    store.reinforce(tea, namespace=ALICE)
    store.archive(gone, namespace=ALICE)
    assert rows(store, ALICE) == 2 and rows(store, BOB) == 1
    report = store.erase_namespace(ALICE)
    assert report.complete, report
    assert rows(store, ALICE) == 0 and days(store, tea) == [] and days(store, gone) == []
    assert store.verify_erase(ALICE).complete
    assert [d[1] for d in days(store, coffee)] == [1]


def test_a_jsonl_backup_carries_the_activity_and_a_bad_one_says_what_is_wrong(store, tmp_path):
    import io
    import json

    from shared_core import MemoryStore
    from shared_core.portability import export_jsonl, import_jsonl

    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    store.search("Alice tea", namespace=ALICE)
    store.reinforce(tea, namespace=ALICE)
    backup = io.StringIO()
    assert export_jsonl(store, backup) == 1
    with MemoryStore.open(tmp_path / "restored.db", clock=store.clock) as other:
        assert import_jsonl(other, backup.getvalue().splitlines()).created == 1
        assert days(other, tea.id) == days(store, tea.id) == [("2026-01-01", 1, 1, 0, 3.0)]
        record = json.loads(backup.getvalue())
        record["id"], record["activity"][0]["accesses"] = "another", -2
        report = import_jsonl(other, [json.dumps(record)])
        assert report.created == 0 and "whole numbers of 0 or more" in report.errors[0][1]
        assert other.get_many(["another"]) == []  # nothing half-written

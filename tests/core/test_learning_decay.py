"""Confidence decay (seed 000): the seed's timeline, however often maintenance runs."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import ManualClock, MemoryStore
from shared_core.ranking import decayed_confidence, is_pruned, weeks_since_reinforced

# seed 000's example decay timeline: starting confidence 0.8, never reinforced
SEED_TIMELINE = [(0, 0.80, "Active"), (4, 0.65, "Active"), (8, 0.54, "Active"), (16, 0.36, "Active"),
                 (24, 0.24, "Active"), (32, 0.16, "Active"), (40, 0.11, "Active"), (44, 0.09, "Pruned")]


def seed_apply_decay(learnings, rate_per_week, now):
    """A line-by-line port of the seed's Rust ``apply_decay`` (multiplies in place)."""
    for learning in learnings:
        weeks_since_reinforced = (now - learning["last_used"]).days / 7.0
        decay = math.exp(-rate_per_week * weeks_since_reinforced)
        learning["confidence"] *= decay
    learnings[:] = [x for x in learnings if x["confidence"] >= 0.1]


@pytest.mark.parametrize(("weeks", "expected", "status"), SEED_TIMELINE)
def test_the_formula_reproduces_the_seed_table(weeks, expected, status):
    value = decayed_confidence(0.8, weeks_since_reinforced(weeks * 7), 0.05)
    assert round(value, 2) == expected
    assert is_pruned(value, 0.1) == (status == "Pruned")


@pytest.mark.parametrize("every_days", [None, 1, 7])
def test_the_store_reproduces_the_seed_table_however_often_maintenance_runs(every_days):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with MemoryStore.open(":memory:", clock=clock, config={}) as store:
        learning = store.learnings.add("Prefer small pull requests for the payments service.", "Heuristic")
        start = clock.now()
        day = 0
        for weeks, expected, status in SEED_TIMELINE:
            if every_days is None:  # once, at the row's age
                clock.set(start + timedelta(weeks=weeks))
                report = store.learnings.apply_decay()
            else:
                while day < weeks * 7:
                    day += every_days
                    clock.set(start + timedelta(days=min(day, weeks * 7)))
                    report = store.learnings.apply_decay()
                    if report.pruned:
                        break
            if status == "Active":
                assert round(store.learnings.get(learning.id).confidence, 2) == expected, weeks
                stored = store.db.scalar("SELECT confidence FROM learnings WHERE id = ?", (learning.id,))
                assert round(stored, 2) == expected
            else:
                assert report.pruned_ids == (learning.id,) and report.archived == 1
                archived = store.archive.get(learning.id)
                assert archived.archive_reason == "decayed" and archived.confidence < 0.1
                # pruned once it fell below 0.1: after week 40 (0.11), by week 44 (0.09); run daily, that
                # is day 292 (0.8 x exp(-0.05 x 292/7) = 0.0994), run once, at week 44 itself
                age = (clock.now() - start).days
                assert 40 * 7 < age <= 44 * 7
                if every_days is None:
                    assert round(archived.confidence, 2) == expected
                elif every_days == 1:
                    assert age == 292


def test_the_seeds_in_place_method_would_compound():
    now = ManualClock("2026-01-01").now()
    learnings = [{"confidence": 0.8, "last_used": now}]
    for week in range(1, 9):
        seed_apply_decay(learnings, 0.05, now + timedelta(weeks=week))
    # the numbers: weekly runs drive 0.8 to about 0.13 in 8 weeks, while the table says 0.54
    assert round(learnings[0]["confidence"], 2) == 0.13
    assert round(decayed_confidence(0.8, 8), 2) == 0.54


def test_running_twice_in_a_row_changes_nothing(store, clock):
    store.learnings.add("Keep the changelog in the same PR.", "Heuristic")
    clock.advance(weeks=5)
    first = store.learnings.apply_decay()
    second = store.learnings.apply_decay()
    assert first.updated == 1
    assert (second.updated, second.pruned, second.orphans_removed) == (0, 0, 0)


def test_empty_database(store):
    report = store.learnings.apply_decay()
    assert report.checked == 0 and report.updated == 0 and report.pruned == 0


def test_reinforcement_restarts_the_decay_clock(store, clock):
    learning = store.learnings.add("Write the migration and its rollback together.", "Heuristic")
    clock.advance(weeks=20)
    decayed = store.learnings.get(learning.id).confidence
    assert decayed == pytest.approx(0.8 * math.exp(-1.0))
    reinforced = store.learnings.reinforce(learning.id)
    assert reinforced.confidence == pytest.approx(decayed + 0.1) and reinforced.last_used == clock.now()
    clock.advance(weeks=4)
    assert store.learnings.get(learning.id).confidence == pytest.approx((decayed + 0.1) * math.exp(-0.2))


def test_pinned_learnings_do_not_decay(store, clock):
    learnings = [store.learnings.add(f"Pinned rule number {i} about {topic}.", pinned=True)
                 for i, topic in enumerate(["tests", "docs", "deploys"])]
    clock.advance(weeks=100)
    report = store.learnings.apply_decay()
    assert report.pruned == 0
    assert [store.learnings.get(x.id).confidence for x in learnings] == [0.8, 0.8, 0.8]


def test_clock_going_backwards_never_raises_confidence(store, clock):
    learning = store.learnings.add("Check the feature flag before the rollout.", "Heuristic")
    clock.advance(weeks=-3)
    assert store.learnings.get(learning.id).confidence == 0.8
    assert store.learnings.apply_decay().updated == 0


def test_pruning_can_delete_instead_of_archiving(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"memory": {"archive_pruned": False}}) as store:
        learning = store.learnings.add("An old lesson nobody needs.", "Heuristic")
        clock.advance(weeks=44)
        report = store.learnings.apply_decay()
        assert (report.pruned, report.deleted, report.archived) == (1, 1, 0)
        assert store.db.scalar("SELECT count(*) FROM learnings") == 0
        assert store.archive.count() == 0
        assert store.count(kind="learning") == 0 and learning.id not in store.recall("old lesson").ids


def test_a_pruned_learning_can_be_restored_with_a_fresh_clock(store, clock):
    learning = store.learnings.add("Rotate the signing keys yearly.", "Heuristic")
    clock.advance(weeks=44)
    store.learnings.apply_decay()
    with pytest.raises(KeyError):
        store.learnings.get(learning.id)
    restored = store.learnings.restore(learning.id)
    assert restored.confidence == 0.8 and restored.last_used == clock.now()
    assert store.learnings.apply_decay().pruned == 0


def test_a_learning_deleted_from_the_index_is_cleaned_up(store):
    learning = store.learnings.add("Temporary lesson.", "Heuristic")
    store.delete(learning.id)
    report = store.learnings.apply_decay()
    assert report.orphans_removed == 1
    assert store.db.scalar("SELECT count(*) FROM learnings") == 0


def test_decay_rate_and_threshold_are_configurable(clock):
    config = {"memory": {"learning_decay_rate": 0.1, "learning_prune_threshold": 0.5}}
    with MemoryStore.open(":memory:", clock=clock, config=config) as store:
        learning = store.learnings.add("Configurable decay.", "Heuristic")
        clock.advance(weeks=4)
        assert store.learnings.get(learning.id).confidence == pytest.approx(0.8 * math.exp(-0.4))
        clock.advance(weeks=1)  # 0.8 x exp(-0.5) = 0.485 < 0.5
        assert store.learnings.apply_decay().pruned == 1


@settings(max_examples=25, deadline=None)
@given(runs=st.lists(st.integers(min_value=0, max_value=400), max_size=12), end=st.integers(0, 400),
       reinforce_at=st.one_of(st.none(), st.integers(0, 400)))
def test_any_maintenance_schedule_gives_the_same_confidence(runs, end, reinforce_at):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with MemoryStore.open(":memory:", clock=clock, config={}) as store:
        learning = store.learnings.add("Schedule independence.", "Heuristic")
        start = clock.now()
        events = sorted([(day, "run") for day in runs if day <= end]
                        + ([(reinforce_at, "reinforce")] if reinforce_at is not None and reinforce_at <= end else []))
        base, anchor, pruned = 0.8, 0, False
        for day, what in events:
            clock.set(start + timedelta(days=day))
            if pruned:
                break
            if what == "reinforce":
                base = min(1.0, decayed_confidence(base, weeks_since_reinforced(day - anchor)) + 0.1)
                anchor = day
                store.learnings.reinforce(learning.id)
            else:
                pruned = bool(store.learnings.apply_decay().pruned)
        if pruned:
            return  # pruned by a run at or before `end`: the expected value there was below 0.1
        clock.set(start + timedelta(days=end))
        expected = decayed_confidence(base, weeks_since_reinforced(end - anchor))
        report = store.learnings.apply_decay()
        if is_pruned(expected, 0.1):
            assert report.pruned_ids == (learning.id,)
        else:
            assert store.learnings.get(learning.id).confidence == pytest.approx(expected)

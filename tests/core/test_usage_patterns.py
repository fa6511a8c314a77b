"""Usage events and pattern mining (seed 000), and skills proposed from confident patterns."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared_core import ManualClock, MemoryStore
from shared_core.ranking import combination_confidence, recurrence_confidence


def test_events_carry_the_seed_fields(store, clock):
    event_id = store.usage.log("task", description="Weekly report", category="reporting", channel="cli",
                               skills=["sql", "charts", "sql"], score=0.9, at="2026-01-05T09:30:00Z")
    (event,) = store.usage.events()
    assert event.id == event_id
    assert (event.event_type, event.channel, event.category, event.skills, event.score) == (
        "task", "cli", "reporting", ("sql", "charts"), 0.9)
    assert (event.day, event.hour, event.day_of_week) == ("2026-01-05", 9, 0)  # a Monday
    row = store.db.query("SELECT day, hour, day_of_week, skills_used FROM usage_events")[0]
    assert row == ("2026-01-05", 9, 0, '["sql", "charts"]')


def test_day_hour_and_weekday_follow_the_configured_time_zone(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"usage": {"timezone": "America/New_York"}}) as store:
        store.usage.log("task", at="2026-01-05T03:00:00Z")  # Sunday 22:00 in New York
        (event,) = store.usage.events()
        assert (event.day, event.hour, event.day_of_week) == ("2026-01-04", 22, 6)


def test_bad_events(store):
    with pytest.raises(ValueError, match="event_type"):
        store.usage.log("")
    with pytest.raises(ValueError, match="skills"):
        store.usage.log("task", skills="sql")


def test_formulas():
    assert recurrence_confidence(5, 7) == pytest.approx(5 / 7)
    assert recurrence_confidence(3, 0) == 0.0 and recurrence_confidence(9, 3) == 1.0
    assert combination_confidence(4, 5) == 0.8 and combination_confidence(1, 0) == 0.0


def _store(tmp_path, clock):
    return MemoryStore.open(tmp_path / "openkoi.db", clock=clock)


def test_a_daily_habit_is_detected_and_proposed_as_a_skill(tmp_path):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with _store(tmp_path, clock) as store:
        for day in range(6):
            store.usage.log("task", description=f"Triage the inbox (day {day})", category="triage",
                            at=clock.now() + timedelta(days=day, hours=8, minutes=10))
        clock.set("2026-01-06T12:00:00Z")
        report = store.usage.mine()
        (pattern,) = report.patterns
        assert pattern.pattern_type == "recurring_time" and pattern.frequency == "daily"
        assert pattern.description == "triage tasks daily around 08:00"
        assert pattern.sample_count == 6 and pattern.confidence == 1.0
        assert pattern.trigger == {"category": "triage", "hour": 8, "timezone": "UTC"}
        assert report.new == 1 and len(report.proposed) == 1
        path = tmp_path / "skills" / report.proposed[0]
        text = path.read_text()
        assert text.startswith("---\nname: triage-tasks-daily-around-08-00-") and f"pattern: {pattern.id}" in text
        assert "Triage the inbox (day 5)" in text
        (stored,) = store.usage.patterns()
        assert stored.status == "proposed" and stored.proposed_skill == report.proposed[0]
        assert [f.name for f in store.skills.files(origin="proposed")] == [] and store.skills.sync().added
        assert [f.origin for f in store.skills.files()] == ["proposed"]

        again = store.usage.mine()  # nothing changes the second time
        assert (again.new, again.changed, again.lapsed, again.proposed) == (0, 0, 0, [])


def test_a_weekly_habit_and_the_confidence_of_gaps(store, clock):
    start = clock.now()  # Thursday 2026-01-01
    for week in (0, 1, 3):  # missed week 2
        store.usage.log("task", category="reporting", at=start + timedelta(weeks=week, hours=16))
    clock.set(start + timedelta(weeks=3, hours=20))
    (pattern,) = store.usage.mine(propose=False).patterns
    assert pattern.frequency == "weekly" and pattern.description == "reporting tasks on Thursdays around 16:00"
    assert pattern.sample_count == 3 and pattern.confidence == pytest.approx(3 / 4)
    assert pattern.trigger["day_of_week"] == 3


def test_skill_combinations(store, clock):
    for i in range(5):
        store.usage.log("task", category="data", skills=["sql", "charts"], at=clock.now() + timedelta(hours=i * 5))
    store.usage.log("task", skills=["sql"], at=clock.now() + timedelta(hours=40))
    clock.advance(days=3)
    report = store.usage.mine(propose=False)
    combo = next(p for p in report.patterns if p.pattern_type == "skill_combination")
    assert combo.trigger == {"skills": ["charts", "sql"], "category": "data"}
    assert combo.sample_count == 5 and combo.confidence == pytest.approx(5 / 6)
    assert combo.description == "charts + sql used together for data tasks"


def test_too_few_samples_or_low_confidence_are_not_patterns(store, clock):
    store.usage.log("task", category="rare", at=clock.now())
    store.usage.log("task", category="rare", at=clock.now() + timedelta(days=1))
    clock.advance(days=2)
    assert store.usage.mine().patterns == []
    assert store.usage.mine().events == 2


def test_dismissed_patterns_stay_dismissed_and_stale_ones_lapse(tmp_path):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with _store(tmp_path, clock) as store:
        for day in range(3):
            store.usage.log("task", category="standup", at=clock.now() + timedelta(days=day, hours=9))
        clock.set("2026-01-03T12:00:00Z")
        (pattern,) = store.usage.mine().patterns
        assert pattern.status == "detected"  # only 3 samples: not proposed yet
        store.usage.dismiss(pattern.id)
        for day in range(3, 8):
            store.usage.log("task", category="standup", at=clock.now() + timedelta(days=day - 2, hours=-3))
        clock.set("2026-01-08T12:00:00Z")
        report = store.usage.mine()
        assert report.proposed == [] and report.patterns[0].status == "dismissed"
        clock.set("2026-03-01T12:00:00Z")  # the habit stopped
        store.usage.log("task", category="other", at=clock.now())
        store.db.execute("UPDATE usage_patterns SET status = 'detected'")
        assert store.usage.mine().lapsed == 1
        assert store.usage.patterns(status="lapsed")[0].id == pattern.id
    with pytest.raises(KeyError):
        with _store(tmp_path, clock) as store:
            store.usage.dismiss("pat-nope")


def test_clock_going_backwards_ignores_future_events(store, clock):
    for day in range(4):
        store.usage.log("task", category="sync", at=clock.now() + timedelta(days=day, hours=7))
    clock.set("2025-12-31T00:00:00Z")
    report = store.usage.mine()
    assert report.events == 0 and report.patterns == []


def test_erase_removes_events_patterns_and_proposed_files(tmp_path):
    clock = ManualClock("2026-01-01T00:00:00Z")
    with _store(tmp_path, clock) as store:
        for day in range(6):
            store.usage.log("task", category="journal", namespace="user:p",
                            at=clock.now() + timedelta(days=day, hours=21))
        clock.set("2026-01-06T23:00:00Z")
        (proposed,) = store.usage.mine().proposed
        assert (tmp_path / "skills" / proposed).exists()
        store.erase_namespace("user:p")
        assert not (tmp_path / "skills" / proposed).exists()
        assert store.db.scalar("SELECT count(*) FROM usage_events") == 0
        assert store.db.scalar("SELECT count(*) FROM usage_patterns") == 0


def test_empty_database(store):
    report = store.usage.mine()
    assert report.events == 0 and report.patterns == [] and report.proposed == []

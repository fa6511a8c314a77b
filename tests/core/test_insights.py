"""Insights (seed 003): deterministic ids, upsert with dedup, value score, weights, decay, trend."""

from __future__ import annotations

import math
import uuid
from datetime import timedelta

import pytest

from shared_core import Config, ManualClock, MemoryStore, NotFoundError
from shared_core.errors import ConfigError
from shared_core.insights import InsightData, insight_id
from shared_core.ranking import (
    boosted_weight,
    insight_decay_factor,
    insight_frequency_score,
    insight_freshness_score,
    insight_is_active,
    insight_relevance_score,
    insight_trend,
    insight_value_score,
    insight_weight,
)

# -- the formulas, against the seed's numbers ---------------------------------------------------


def test_value_score_weights_are_the_seeds():
    cfg = Config.from_dict({}).insights
    assert (cfg.frequency_weight, cfg.freshness_weight, cfg.relevance_weight, cfg.favorite_weight) == \
        (0.45, 0.25, 0.20, 0.10)
    full = insight_value_score(1.0, 1.0, 1.0, True)
    assert full.score == pytest.approx(1.0)
    assert insight_value_score(0.0, 0.0, 0.0, False).score == 0.0
    assert insight_value_score(1.0, 0.0, 0.0, False).score == pytest.approx(0.45)
    assert insight_value_score(0.0, 1.0, 0.0, False).score == pytest.approx(0.25)
    assert insight_value_score(0.0, 0.0, 1.0, False).score == pytest.approx(0.20)
    assert insight_value_score(0.0, 0.0, 0.0, True).score == pytest.approx(0.10)
    mixed = insight_value_score(0.5, 0.8, 0.75, False)
    assert mixed.score == pytest.approx(0.45 * 0.5 + 0.25 * 0.8 + 0.20 * 0.75)


@pytest.mark.parametrize("days, expected", [
    (0.0, 1.0), (0.99, 1.0), (1.0, 0.8), (6.99, 0.8), (7.0, 0.45), (29.99, 0.45), (30.0, 0.1), (400.0, 0.1),
    (-3.0, 1.0),  # a clock that went back: as fresh as can be
])
def test_freshness_bands(days, expected):
    # seed 003: <1 day 1.0, <7 days 0.8, <30 days 0.45; past 30 days is our documented 0.1
    assert insight_freshness_score(days) == expected


def test_relevance_is_importance_070_plus_urgency_030():
    cfg = Config.from_dict({}).insights
    imp, urg = cfg.importance_scale, cfg.urgency_scale
    assert imp == {"critical": 1.0, "high": 0.75, "medium": 0.5, "low": 0.25}
    assert urg == {"immediate": 1.0, "urgent": 0.75, "medium": 0.5, "low": 0.25}
    assert insight_relevance_score(imp["critical"], urg["immediate"]) == pytest.approx(1.0)
    assert insight_relevance_score(imp["low"], urg["immediate"]) == pytest.approx(0.25 * 0.7 + 0.3)
    assert insight_relevance_score(imp["high"], urg["low"]) == pytest.approx(0.75 * 0.7 + 0.25 * 0.3)


def test_frequency_is_log_scaled_to_the_maximum():
    assert insight_frequency_score(0) == 0.0
    assert insight_frequency_score(50) == pytest.approx(1.0)
    assert insight_frequency_score(500) == 1.0
    assert insight_frequency_score(7) == pytest.approx(math.log(8) / math.log(51))
    assert insight_frequency_score(9, max_accesses=9) == pytest.approx(1.0)


def test_boosts_multiply_and_cap_at_five():
    assert boosted_weight(1.0, 1.5) == 1.5  # favourite
    assert boosted_weight(1.5, 1.5) == 2.25
    assert boosted_weight(4.0, 1.5) == 5.0  # cap
    assert boosted_weight(1.0, 1.1) == pytest.approx(1.1)  # view
    assert boosted_weight(4.9, 1.1) == 5.0
    assert insight_weight(4.0, favorite_boost=1.5, view_boost=1.1) == 5.0


def test_decay_bands_and_floor():
    # 0.95 from day 7, 0.85 from day 14, 0.7 from day 30, once per day of inactivity
    assert insight_decay_factor(6.99) == 1.0
    assert insight_decay_factor(7) == pytest.approx(0.95)
    assert insight_decay_factor(13.5) == pytest.approx(0.95 ** 7)
    assert insight_decay_factor(14) == pytest.approx(0.95 ** 7 * 0.85)
    assert insight_decay_factor(29) == pytest.approx(0.95 ** 7 * 0.85 ** 16)
    assert insight_decay_factor(31) == pytest.approx(0.95 ** 7 * 0.85 ** 16 * 0.7 ** 2)
    assert insight_decay_factor(-5) == 1.0
    # read weekly instead: one step per band week
    assert insight_decay_factor(14, period_days=7) == pytest.approx(0.95 * 0.85)
    assert insight_decay_factor(35, period_days=7) == pytest.approx(0.95 * 0.85 ** 3 * 0.7)  # 7, 14, 21, 28, 35
    # the floor (0.3) holds, and never lifts a weight the user set below it
    assert insight_weight(1.0, decay_factor=insight_decay_factor(60)) == 0.3
    assert insight_weight(1.0, decay_factor=0.95) == 0.95
    assert insight_weight(0.2, decay_factor=0.5) == 0.2
    assert insight_weight(2.0, decay_factor=0.01, floor=0.3) == 0.3


@pytest.mark.parametrize("recent, previous, trend", [
    (5, 4, "rising"), (4, 5, "falling"), (10, 8, "rising"), (9, 8, "stable"), (8, 10, "falling"),
    (5, 5, "stable"), (0, 0, "stable"), (1, 0, "rising"), (0, 1, "falling"),
])
def test_trend_uses_the_25_percent_rule(recent, previous, trend):
    assert insight_trend(recent, previous) == trend


def test_active_means_any_access_in_30_days():
    assert insight_is_active(1) and not insight_is_active(0)


# -- records -------------------------------------------------------------------------------------


def test_id_is_deterministic_from_bot_and_dedupe_key():
    first = insight_id("default", "bot-1", "launch-date")
    assert first == insight_id("default", "bot-1", "launch-date")
    assert uuid.UUID(first).version == 5
    assert first != insight_id("default", "bot-2", "launch-date")
    assert first != insight_id("default", "bot-1", "other")
    assert first != insight_id("user:b", "bot-1", "launch-date")


def test_upsert_dedups_and_indexes(store, clock):
    first = store.insights.upsert("Launch date moved", "The launch moves to March 3", importance="high",
                                  urgency="urgent", task_label="decision", bot_id="bot-1",
                                  details=["said by Ann"], dedupe_key="launch-date")
    assert first.id == insight_id("default", "bot-1", "launch-date")
    memory = store.get(first.id)
    assert (memory.kind, memory.owner_id, memory.category, memory.importance) == ("insight", first.id, "decision", 0.75)
    assert store.insights.search("launch march")[0].insight.id == first.id
    clock.advance(hours=1)
    again = store.insights.upsert("Launch date moved", "The launch moves to March 3", importance="high",
                                  urgency="urgent", task_label="decision", bot_id="bot-1",
                                  details=["said by Ann"], dedupe_key="launch-date")
    assert again == store.insights.get(first.id) and again.updated_at == first.updated_at  # nothing changed
    clock.advance(hours=1)
    updated = store.insights.upsert("Launch date moved again", "Now March 10", importance="critical",
                                    urgency="immediate", bot_id="bot-1", dedupe_key="launch-date",
                                    details=["said by Bo", "said by Ann"], timeline=[{"at": "2026-01-01", "event": "moved"}])
    assert updated.id == first.id and updated.created_at == first.created_at and updated.updated_at == clock.now()
    assert updated.details == [{"text": "said by Ann"}, {"text": "said by Bo"}]
    assert updated.title == "Launch date moved again" and updated.importance == "critical"
    assert store.get(first.id).text == "Launch date moved again\nNow March 10"
    assert store.insights.count() == 1 and store.count(kind="insight") == 1
    other_bot = store.insights.upsert("Launch date moved", dedupe_key="launch-date", bot_id="bot-2")
    assert other_bot.id != first.id and store.insights.count() == 2


def test_dedupe_key_defaults_to_the_title(store):
    a = store.insights.upsert("Fix the login bug!")
    b = store.insights.upsert("fix the LOGIN bug", "more detail")
    assert a.id == b.id and b.dedupe_key == "fix-the-login-bug"
    assert store.insights.find("fix-the-login-bug").id == a.id


def test_bad_input_is_refused_with_a_hint(store):
    with pytest.raises(ValueError, match="critical, high, medium, low"):
        store.insights.upsert("x", importance="huge")
    with pytest.raises(ValueError, match="immediate, urgent, medium, low"):
        store.insights.upsert("x", urgency="later")
    with pytest.raises(ValueError, match="title"):
        store.insights.upsert("  ")
    with pytest.raises(TypeError, match="details"):
        store.insights.upsert("x", details="not a list")
    with pytest.raises(ValueError, match="JSON"):
        store.insights.upsert("x", details=[{"bad": float("nan")}])
    with pytest.raises(NotFoundError):
        store.insights.get("missing")
    insight = store.insights.upsert("x")
    for bad in (0, -1, 5.5, float("nan"), True):
        with pytest.raises(ValueError, match="multiplier"):
            store.insights.set_weight(insight.id, bad)
    with pytest.raises(ValueError, match="unknown insight fields"):
        store.insights.upsert_many([{"title": "y", "colour": "red"}])
    assert store.insights.count() == 1  # the failed batch wrote nothing


# -- weights from real events --------------------------------------------------------------------


def test_access_counts_trend_and_state_come_from_the_log(store, clock):
    insight = store.insights.upsert("Quarterly planning")
    assert store.insights.weights(insight.id).state == "dormant"
    start = clock.now()
    for day in (1, 2, 3, 4):  # 4 accesses in the "previous 7 days" window
        clock.set(start + timedelta(days=day))
        store.insights.view(insight.id)
    for day in (9, 10, 11, 12, 13):  # 5 in the last 7 days
        clock.set(start + timedelta(days=day))
        store.insights.view(insight.id)
    clock.set(start + timedelta(days=14))
    w = store.insights.weights(insight.id)
    assert (w.access_count_7d, w.previous_7d, w.access_count_30d) == (5, 4, 9)
    assert w.trend == "rising" and w.active and w.current_event_rank == 1
    assert store.insights.value(insight.id).frequency == pytest.approx(insight_frequency_score(9))
    clock.set(start + timedelta(days=20))  # last 7 days: 0, before: 5
    assert store.insights.weights(insight.id).trend == "falling"
    clock.set(start + timedelta(days=44))
    w = store.insights.weights(insight.id)
    assert (w.access_count_30d, w.active, w.trend) == (0, False, "stable")


def test_view_boost_only_after_a_day_of_inactivity(store, clock):
    insight = store.insights.upsert("Vendor contract renewal")
    clock.advance(hours=12)
    store.insights.view(insight.id)  # half a day after creation: no boost
    assert not store.insights.weights(insight.id).view_boost_active
    clock.advance(days=3)
    store.insights.view(insight.id)  # 3 days idle: x1.1 for 24 hours
    w = store.insights.weights(insight.id)
    assert w.view_boost_active and w.weight == pytest.approx(1.1)
    clock.advance(hours=2)
    store.insights.view(insight.id)  # viewed again soon: no new boost, the running one continues
    clock.advance(hours=21)
    assert store.insights.weights(insight.id).view_boost_active
    clock.advance(hours=2)
    assert store.insights.weights(insight.id).weight == 1.0


def test_favourite_boost_lasts_seven_days_and_scores(store, clock):
    insight = store.insights.upsert("Hiring plan")
    store.insights.set_weight(insight.id, 4.0)
    fav = store.insights.favorite(insight.id)
    assert fav.favorite and fav.favorited_at == clock.now()
    w = store.insights.weights(insight.id)
    assert w.favorite_boost_active and w.weight == 5.0  # min(5.0, 4.0 x 1.5)
    assert store.insights.value(insight.id).favorite == 1.0
    clock.advance(days=3)
    store.insights.favorite(insight.id)  # already a favourite: the boost does not restart
    clock.advance(days=3, hours=23)
    assert store.insights.weights(insight.id).weight == 5.0
    clock.advance(hours=1)  # 7 days after favouriting (its last access): boost over, first decay step
    w = store.insights.weights(insight.id)
    assert not w.favorite_boost_active and w.weight == pytest.approx(4.0 * 0.95)
    assert store.insights.value(insight.id).favorite == 1.0  # still a favourite, just no boost
    off = store.insights.favorite(insight.id, on=False)
    assert not off.favorite and store.insights.value(insight.id).favorite == 0.0


def test_decay_does_not_depend_on_how_often_maintenance_runs(clock):
    start = clock.now()
    other_clock = ManualClock(start)
    with MemoryStore.open(":memory:", clock=clock) as daily, MemoryStore.open(":memory:", clock=other_clock) as once:
        a = daily.insights.upsert("Idle insight")
        b = once.insights.upsert("Idle insight")
        for day in range(1, 41):
            clock.set(start + timedelta(days=day))
            daily.insights.maintain()
            if day in (10, 20, 40):
                other_clock.set(clock.now())
                wa, wb = daily.insights.weights(a.id), once.insights.weights(b.id)
                assert wa.weight == wb.weight
                expected = max(0.3, insight_decay_factor(day))
                assert wa.weight == pytest.approx(expected) and wa.days_inactive == day
        assert daily.insights.weights(a.id).weight == 0.3  # the floor


def test_rank_orders_by_value_times_weight(store, clock):
    low = store.insights.upsert("Low matter", importance="low", urgency="low")
    high = store.insights.upsert("Critical matter", importance="critical", urgency="immediate")
    mid = store.insights.upsert("Medium matter", task_label="bug_report")
    ranked = store.insights.rank()
    assert [r.insight.id for r in ranked] == [high.id, mid.id, low.id]
    assert [r.rank for r in ranked] == [1, 2, 3]
    assert ranked[0].score == pytest.approx(ranked[0].value.score * ranked[0].weights.weight)
    # the seed's value score of a new critical/immediate insight: fresh 1.0, relevance 1.0
    assert ranked[0].value.score == pytest.approx(0.25 + 0.20)
    store.insights.set_weight(low.id, 5.0)
    assert store.insights.rank()[0].insight.id == low.id
    store.insights.view(mid.id)
    assert [r.insight.id for r in store.insights.rank(state="active")] == [mid.id]
    assert store.insights.rank(state="active")[0].rank == 3
    assert [r.insight.id for r in store.insights.rank(task_label="bug_report")] == [mid.id]
    assert len(store.insights.rank(limit=2)) == 2
    assert "<table>" in store.insights.rank()._repr_html_()
    with pytest.raises(ValueError, match="state"):
        store.insights.rank(state="sleepy")


def test_empty_namespace(store):
    assert store.insights.rank() == [] and store.insights.list() == [] and store.insights.search("x") == []
    assert store.insights.maintain().removed_access_events == 0


def test_maintain_drops_old_access_events_and_is_idempotent(store, clock):
    insight = store.insights.upsert("Something")
    store.insights.view(insight.id)
    clock.advance(days=10)
    store.insights.view(insight.id)
    clock.advance(days=25)
    first = store.insights.maintain()
    assert first.removed_access_events == 1 and first.changed
    assert store.insights.maintain().removed_access_events == 0
    assert store.insights.weights(insight.id).access_count_30d == 1


def test_clock_going_backwards(store, clock):
    insight = store.insights.upsert("Time travel")
    clock.advance(days=5)
    store.insights.view(insight.id)
    seen = store.insights.get(insight.id).last_access_at
    clock.advance(days=-3)
    store.insights.view(insight.id)
    assert store.insights.get(insight.id).last_access_at == seen  # never moves back
    w = store.insights.weights(insight.id)
    # the boost the first view started (after 5 idle days) has not "begun" yet: it counts as running
    assert w.days_inactive == 0.0 and w.view_boost_active and w.weight == pytest.approx(1.1)
    assert store.insights.value(insight.id).freshness == 0.8  # 2 days old


def test_custom_scales_and_bad_settings():
    cfg = {"insights": {"importance_scale": {"critical": 1.0, "high": 0.9, "medium": 0.4, "low": 0.0}}}
    with MemoryStore.open(":memory:", config=cfg, clock=ManualClock("2026-01-01")) as store:
        insight = store.insights.upsert("x", importance="high", urgency="low")
        assert store.insights.value(insight.id).relevance == pytest.approx(0.9 * 0.7 + 0.25 * 0.3)
    with pytest.raises(ConfigError, match="importance_scale"):
        Config.from_dict({"insights": {"importance_scale": {"high": 2}}})
    with pytest.raises(ConfigError, match="needs a value for medium, low"):
        Config.from_dict({"insights": {"importance_scale": {"critical": 1.0, "high": 0.5}}})
    extra = {"critical": 1.0, "high": 0.8, "medium": 0.5, "low": 0.2, "trivial": 0.0}
    with MemoryStore.open(":memory:", config={"insights": {"importance_scale": extra}},
                          clock=ManualClock("2026-01-01")) as store:
        assert store.insights.upsert("y", importance="Trivial").importance == "trivial"
    with pytest.raises(ConfigError, match="decay_bands"):
        Config.from_dict({"insights": {"decay_bands": "weekly"}})
    with pytest.raises(ConfigError, match="access_log_days"):
        Config.from_dict({"insights": {"access_log_days": 7.0}})
    assert Config.from_dict({"insights": {"freshness_bands": [[2, 1.0], [1, 0.9]]}}).insights.freshness_bands == \
        ((1.0, 0.9), (2.0, 1.0))


# -- lifecycle with the rest of the store --------------------------------------------------------


def test_delete_and_erase_remove_every_trace(tmp_path, clock):
    path = tmp_path / "mem.db"
    with MemoryStore.open(path, clock=clock) as store:
        a = store.insights.upsert("Secret plan", "alpha", namespace="user:a")
        b = store.insights.upsert("Open plan", "beta", namespace="user:b")
        store.insights.view(a.id)
        store.insights.view(b.id)
        gone = store.insights.upsert("Gone soon", namespace="user:b")
        store.delete(gone.id)  # deleting the index entry deletes the insight
        with pytest.raises(NotFoundError):
            store.insights.get(gone.id)
        assert store.insights.delete(b.id) and not store.insights.delete(b.id)
        assert store.db.scalar("SELECT count(*) FROM insight_access WHERE insight_id = ?", (b.id,)) == 0
    with MemoryStore.open(path, clock=clock) as other:  # never touched .insights before erasing
        other.erase_namespace("user:a")
        assert other.db.scalar("SELECT count(*) FROM insights") == 0
        assert other.db.scalar("SELECT count(*) FROM insight_access") == 0
    if other.db.dialect == "sqlite":  # the file's bytes (PostgreSQL: test_postgres_backend.py)
        assert b"Secret plan" not in path.read_bytes()


def test_archived_insights_come_back_when_upserted(store):
    insight = store.insights.upsert("Budget review", "numbers for Q3")
    store.archive(insight.id, reason="size-prune")
    assert store.insights.get(insight.id).title == "Budget review"  # the record stays
    assert store.insights.search("budget") == []
    assert store.insights.upsert("Budget review", "numbers for Q3").id == insight.id  # unchanged: stays archived
    store.insights.upsert("Budget review", "numbers for Q3 and Q4")
    assert store.get(insight.id).text.endswith("Q4")
    assert [h.insight.id for h in store.insights.search("budget")] == [insight.id]
    assert store.archive.count() == 0


def test_search_logs_accesses(store):
    insight = store.insights.upsert("Database migration", "move to Postgres 17")
    assert store.insights.search("postgres")[0].insight.id == insight.id
    assert store.insights.weights(insight.id).access_count_7d == 1
    store.insights.search("postgres", track_access=False)
    assert store.insights.weights(insight.id).access_count_7d == 1


def test_upsert_many_and_insight_data(store):
    items = [InsightData("First", importance="high"), {"title": "Second", "taskLabel": "risk", "dedupeKey": "k2"}]
    first, second = store.insights.upsert_many(items, bot_id="b")
    assert second.task_label == "risk" and second.dedupe_key == "k2" and first.importance == "high"
    assert {i.title for i in store.insights.list()} == {"First", "Second"}
    assert store.insights.list(task_label="risk") == [second]


def test_cli_insights(tmp_path):
    import json

    from click.testing import CliRunner

    from shared_core.cli import main

    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    added = runner.invoke(main, ["--db", db, "insights", "add", "Launch moved", "to March 3", "--importance", "high",
                                 "--label", "decision"])
    assert added.exit_code == 0, added.output
    insight = added.output.strip()
    assert runner.invoke(main, ["--db", db, "insights", "view", insight]).exit_code == 0
    assert "favourite on" in runner.invoke(main, ["--db", db, "insights", "favorite", insight]).output
    top = runner.invoke(main, ["--db", db, "insights", "top"])
    assert "1." in top.output and "Launch moved" in top.output and "active" in top.output
    shown = json.loads(runner.invoke(main, ["--db", db, "insights", "show", insight]).output)
    assert shown["rank"] == 1 and shown["weights"]["favorite_boost_active"] is True
    assert insight in runner.invoke(main, ["--db", db, "insights", "search", "launch"]).output
    extracted = runner.invoke(main, ["--db", db, "insights", "extract", "--channel", "eng"],
                              input='We decided to ship on Monday.\n{"text": "Please review the PR by Friday", "person": "ann"}\n')
    assert extracted.exit_code == 0, extracted.output
    assert "Decision: We decided to ship on Monday" in extracted.output and "2 created" in extracted.output
    bad = runner.invoke(main, ["--db", db, "insights", "extract"], input="{not json\n")
    assert bad.exit_code != 0 and "line 1" in bad.output
    missing = runner.invoke(main, ["--db", db, "insights", "view", "nope"])
    assert missing.exit_code == 1 and "no insight" in missing.output

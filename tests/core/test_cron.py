"""The 5-field cron evaluator behind ``memory.prune_schedule`` (seed 002: "0 4 * * *")."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from shared_core import Config
from shared_core.errors import ConfigError
from shared_core.lifecycle.cron import CronSchedule, is_due, resolve_timezone

UTC = timezone.utc


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_seed_default_fires_daily_at_four():
    s = CronSchedule.parse("0 4 * * *")
    assert s.next_after(at("2026-01-01T03:59")) == at("2026-01-01T04:00")
    assert s.next_after(at("2026-01-01T04:00")) == at("2026-01-02T04:00")
    assert s.previous(at("2026-01-01T04:00")) == at("2026-01-01T04:00")
    assert s.previous(at("2026-01-01T03:59")) == at("2025-12-31T04:00")
    assert s.matches(at("2026-03-05T04:00")) and not s.matches(at("2026-03-05T04:01"))


@pytest.mark.parametrize("expr, after, expected", [
    ("*/15 * * * *", "2026-01-01T10:07", "2026-01-01T10:15"),
    ("0 9-17/4 * * *", "2026-01-01T09:00", "2026-01-01T13:00"),
    ("30 2 * * 1-5", "2026-01-02T03:00", "2026-01-05T02:30"),  # Fri 2 Jan -> Mon 5 Jan
    ("0 0 1 */3 *", "2026-02-10T00:00", "2026-04-01T00:00"),
    ("0 0 * * sun", "2026-01-01T00:00", "2026-01-04T00:00"),
    ("0 0 * * 7", "2026-01-01T00:00", "2026-01-04T00:00"),  # 7 is Sunday too
    ("0 12 * jan,jul mon", "2026-01-31T00:00", "2026-07-06T12:00"),
    ("5,10 8 * * *", "2026-01-01T08:05", "2026-01-01T08:10"),
    ("0 0 29 2 *", "2026-03-01T00:00", "2028-02-29T00:00"),
    ("0 6/6 * * *", "2026-01-01T06:00", "2026-01-01T12:00"),
    ("@hourly", "2026-01-01T10:07", "2026-01-01T11:00"),
    ("@daily", "2026-01-01T10:07", "2026-01-02T00:00"),
])
def test_next_fire_times(expr, after, expected):
    assert CronSchedule.parse(expr).next_after(at(after)) == at(expected)


def test_day_of_month_or_day_of_week_when_both_restricted():
    # Vixie cron: the 13th OR any Friday
    s = CronSchedule.parse("0 0 13 * 5")
    assert s.next_after(at("2026-01-10T00:00")) == at("2026-01-13T00:00")  # a Tuesday, by day of month
    assert s.next_after(at("2026-01-13T00:00")) == at("2026-01-16T00:00")  # the Friday after
    # a day field starting with * counts as unrestricted: every other day AND Fridays
    t = CronSchedule.parse("0 0 */2 * 5")
    assert t.next_after(at("2026-01-01T00:00")) == at("2026-01-09T00:00")


def test_previous_is_inverse_of_next():
    s = CronSchedule.parse("17 */5 3-20 * 1,3")
    when = at("2026-02-01T00:00")
    for _ in range(30):
        nxt = s.next_after(when)
        assert s.matches(nxt)
        assert s.previous(nxt) == nxt
        assert s.previous(nxt - timedelta(minutes=1)) == (when if s.matches(when) else s.previous(when))
        when = nxt


@pytest.mark.parametrize("expr, message", [
    ("0 4 * *", "five"),
    ("60 4 * * *", "minute"),
    ("0 24 * * *", "hour"),
    ("0 4 0 * *", "day of month"),
    ("0 4 * 13 *", "month"),
    ("0 4 * * 8", "day of week"),
    ("0 4 * * mon-sun-x", "day of week"),
    ("*/0 * * * *", "step"),
    ("5-1 * * * *", "backwards"),
    ("0 0 31 2 *", "never fire"),
    ("", "five fields"),
])
def test_bad_expressions_say_what_is_wrong(expr, message):
    with pytest.raises(ValueError, match=message):
        CronSchedule.parse(expr)


def test_is_due_means_a_fire_time_passed_since_the_last_run():
    s = CronSchedule.parse("0 4 * * *")
    assert is_due(s, None, at("2026-01-01T04:00"))
    assert is_due(s, at("2026-01-01T03:00"), at("2026-01-01T04:30"))
    assert not is_due(s, at("2026-01-01T04:10"), at("2026-01-01T23:00"))
    assert is_due(s, at("2026-01-01T04:10"), at("2026-01-02T04:00"))
    # the clock went back before the last run: never due
    assert not is_due(s, at("2026-01-05T04:10"), at("2026-01-03T05:00"))


def test_time_zones():
    berlin = resolve_timezone("Europe/Berlin")
    s = CronSchedule.parse("0 4 * * *")
    # 04:00 in Berlin is 03:00 UTC in winter and 02:00 UTC in summer
    assert s.next_after(at("2026-01-10T00:00"), berlin) == at("2026-01-10T03:00")
    assert s.next_after(at("2026-07-10T00:00"), berlin) == at("2026-07-10T02:00")
    assert resolve_timezone("UTC") is UTC
    local = resolve_timezone("local")
    assert s.next_after(at("2026-01-10T00:00"), local).astimezone(local).hour == 4
    with pytest.raises(ValueError, match="unknown time zone"):
        resolve_timezone("Mars/Olympus")


def test_config_rejects_bad_schedule_and_zone():
    with pytest.raises(ConfigError, match="prune_schedule|fields"):
        Config.from_dict({"memory": {"prune_schedule": "every day"}})
    with pytest.raises(ConfigError, match="time zone"):
        Config.from_dict({"memory": {"schedule_timezone": "Nowhere/Land"}})
    assert Config.from_dict({"memory": {"prune_schedule": "@weekly"}}).memory.prune_schedule == "@weekly"

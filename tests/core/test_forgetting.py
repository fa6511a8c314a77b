"""Seed 003's forgetting engine on raw messages: tiers, thresholds, grouping, summaries, links, lock."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from shared_core import MemoryStore, NotFoundError
from shared_core.embed import content_hash
from shared_core.lifecycle.forgetting import ForgettingReport, RuleBasedMemorySummarizer

IMPORTANT = "decision on the deadline and the risk of the urgent blocker"  # 5 keywords: importance 1


def _add(convs, text, day, minute=0, *, session="s", platform="slack", channel="eng", person=None, hour=10, **kw):
    return convs.append(session, "user", text, platform=platform, channel=channel, person=person,
                        sent_at=f"2026-01-{day:02d}T{hour:02d}:{minute:02d}:00Z", **kw)


def _snapshot(store):
    return (
        store.db.query("SELECT * FROM raw_messages ORDER BY id"),
        store.db.query("SELECT * FROM memory_summaries ORDER BY summary_id"),
        store.db.query("SELECT id, kind, content_hash FROM memory_chunks ORDER BY id"),
        store.db.query("SELECT id, archive_reason FROM memory_archive ORDER BY id"),
    )


def test_empty_store(store):
    report = store.forgetting.run()
    assert report.status == "ok" and not report.changed
    assert [t.tier for t in report.tiers] == ["short", "mid"] and report.summary_ids == []
    assert report.promoted == {"short->mid": 0, "mid->long": 0} and report.compressed == {"short": 0, "mid": 0}
    assert "<table>" in report._repr_html_() and report.to_dict()["status"] == "ok"
    assert store.forgetting.run_all() == []
    assert store.db.scalar("SELECT count(*) FROM run_locks") == 0  # released


def test_nothing_happens_before_the_maximum_age(store, clock):
    convs = store.conversations
    for i in range(4):
        _add(convs, f"plain message {i}", day=1, minute=i)
    clock.set("2026-01-08T09:59:00Z")  # 6 days 23:59 after the messages: not past 7 days
    report = store.forgetting.run()
    assert report.tiers[0].candidates == 0 and not report.changed


def test_short_to_mid_promotes_by_score_and_compresses_the_rest(store, clock):
    convs = store.conversations
    keep = _add(convs, IMPORTANT, day=1, minute=0)
    convs.get(keep.message_id)  # one access
    pinned = _add(convs, "a plain note to self", day=1, minute=1)
    convs.pin(pinned.message_id)
    low1 = _add(convs, "chatting about lunch options", day=1, minute=2)
    low2 = _add(convs, "coffee afterwards sounds good", day=1, minute=3)
    clock.set("2026-01-11T10:00:00Z")  # 10 days after
    # by hand: keep 0.35*(1-10/180) + 0.3*0.30103 + 0.25*1 + 0.1*0.25 = 0.6959 >= 0.65
    #          pinned 0.3306 + 0.025 + 0.3 = 0.6556 >= 0.65; the others 0.3306 + 0.025 = 0.3556
    assert store.forgetting.value(keep.message_id).total == pytest.approx(0.695865, abs=1e-5)
    assert store.forgetting.value(pinned.message_id).total == pytest.approx(0.655556, abs=1e-5)
    assert store.forgetting.value(low1.message_id).total == pytest.approx(0.355556, abs=1e-5)
    report = store.forgetting.run()
    short = report.tiers[0]
    assert (short.candidates, short.groups, short.promoted, short.compressed) == (4, 1, 2, 2)
    assert report.changed and re.fullmatch(r"memory_forgetting:default:\d+:[0-9a-f]{12}", report.lock_token)

    (summary_id,) = report.summary_ids
    summary = store.forgetting.summary(summary_id)
    assert re.fullmatch(r"ms_[0-9a-f]{16}", summary_id)
    assert (summary.summary_tier, summary.source_tier, summary.message_count) == ("L1", "short", 2)
    assert summary.source_record_ids == [low1.id, low2.id]
    assert summary.start_timestamp == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert summary.end_timestamp == datetime(2026, 1, 1, 23, 59, 59, 999000, tzinfo=timezone.utc)
    assert summary.dimensions == {"platform": "slack", "channel": "eng", "person": None, "botId": None}
    assert summary.keywords and summary.keywords_text == " ".join(summary.keywords)
    assert summary.summary_text.startswith("2 messages on slack in eng from 2026-01-01 10:02 to 2026-01-01 10:03 UTC")
    assert 0.0 <= summary.quality_score <= 1.0 and summary.key_points

    # both directions of the link, verbatim text kept, out of the live index, still keyword-searchable
    for low in (low1, low2):
        row = convs.get(low.message_id, track_access=False)
        assert row.summary_ref_id == summary_id and row.archived_at == clock.now() and row.compressed
        assert row.content == low.content and row.tier == "short"
        with pytest.raises(NotFoundError):
            store.get("msg:" + low.message_id)
        assert store.archive.get("msg:" + low.message_id).archive_reason == "compressed"
    assert [m.message_id for m in store.forgetting.sources(summary_id)] == [low1.message_id, low2.message_id]
    assert "msg:" + low1.message_id in store.search("lunch options", include_archive=True).ids
    assert "msg:" + low1.message_id not in store.search("lunch options").ids

    # the summary is indexed as kind "summary"
    chunk = store.get(summary_id)
    assert (chunk.kind, chunk.owner_id, chunk.source) == ("summary", summary_id, "forgetting")
    assert chunk.text == summary.summary_text and chunk.tags == summary.keywords

    # promoted ones moved up a tier, live, re-embedded with the new tier in their document
    for up in (keep, pinned):
        row = convs.get(up.message_id, track_access=False)
        assert row.tier == "mid" and row.archived_at is None and row.summary_ref_id is None
        doc = convs.embedding_document(row)
        assert "Tier: mid" in doc and row.embedding_content_hash == content_hash(doc)
    assert store.reembed() == 0


def test_groups_are_day_buckets_times_dimension_keys(store, clock):
    convs = store.conversations
    for i in range(3):
        _add(convs, f"eng message {i}", day=1, minute=i)
        _add(convs, f"random message {i}", day=1, minute=10 + i, channel="random")
        _add(convs, f"telegram message {i}", day=1, minute=20 + i, platform="telegram", channel=None, person="bob")
    _add(convs, "eng message next day", day=2, minute=0)
    _add(convs, "eng message next day again", day=2, minute=1)
    _add(convs, "bot says hi", day=1, minute=30, bot_id="b1")  # another dimension key: a group of one
    clock.set("2026-01-20T00:00:00Z")
    report = store.forgetting.run()
    short = report.tiers[0]
    assert (short.groups, short.groups_skipped, short.compressed) == (3, 2, 9)
    dims = sorted((s.dimensions["platform"], s.dimensions["channel"], s.dimensions["person"])
                  for s in store.forgetting.summaries())
    assert dims == [("slack", "eng", None), ("slack", "random", None), ("telegram", None, "bob")]
    assert all(s.message_count == 3 for s in store.forgetting.summaries())
    untouched = [m for m in convs.messages("s") if m.archived_at is None]
    assert sorted(m.content for m in untouched) == ["bot says hi", "eng message next day",
                                                    "eng message next day again"]


def test_mid_tier_groups_by_seven_day_buckets_and_compresses_into_l2(store, clock):
    convs = store.conversations
    # 2026-01-01 is a Thursday, like 1970-01-01: the epoch-aligned week runs Thursday to Wednesday
    days = (1, 1, 1, 3, 3, 3, 8, 8, 8)
    messages = [_add(convs, f"status update number {i} about the api", day=d, minute=i) for i, d in enumerate(days)]
    for m in messages:
        convs.set_importance(m.message_id, 0.5)
        for _ in range(5):
            convs.get(m.message_id)
    clock.set("2026-01-19T10:00:00Z")  # 11-18 days: 0.35*(1-18/180) + 0.3*0.778 + 0.125 + 0.025 >= 0.65
    first = store.forgetting.run()
    assert first.promoted == {"short->mid": 9, "mid->long": 0} and first.tiers[0].groups == 3
    clock.set("2026-06-20T10:00:00Z")  # 163-170 days: 0.35*(1-163/180) + 0.2334 + 0.15 = 0.416 < 0.45
    second = store.forgetting.run()
    mid = second.tiers[1]
    assert (mid.groups, mid.compressed, mid.promoted) == (2, 9, 0)
    summaries = sorted((store.forgetting.summary(s) for s in mid.summaries), key=lambda s: s.start_timestamp)
    assert [(s.summary_tier, s.source_tier, s.message_count) for s in summaries] == [("L2", "mid", 6), ("L2", "mid", 3)]
    assert summaries[0].start_timestamp == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert summaries[0].end_timestamp == datetime(2026, 1, 7, 23, 59, 59, 999000, tzinfo=timezone.utc)
    assert summaries[1].start_timestamp == datetime(2026, 1, 8, tzinfo=timezone.utc)
    assert store.forgetting.summaries(tier="L2") == summaries[::-1] and store.forgetting.summaries(tier="L1") == []


def test_a_record_old_enough_for_both_steps_moves_twice_in_one_run(store, clock):
    convs = store.conversations
    ids = [_add(convs, IMPORTANT + f" {i}", day=1, minute=i, pinned=True).message_id for i in range(3)]
    clock.set("2026-04-11T10:00:00Z")  # 100 days: 0.35*0.444 + 0.25 + 0.025 + 0.3 = 0.73
    report = store.forgetting.run()
    assert report.promoted == {"short->mid": 3, "mid->long": 3}
    assert {convs.get(i, track_access=False).tier for i in ids} == {"long"}
    assert not store.forgetting.run().changed


def test_running_twice_changes_nothing_the_second_time(store, clock):
    convs = store.conversations
    for day in (1, 2, 3):
        for i in range(4):
            m = _add(convs, IMPORTANT if i == 0 else f"day {day} chatter {i}", day=day, minute=i)
            if i == 0:
                convs.get(m.message_id)
    clock.set("2026-02-01T00:00:00Z")
    assert store.forgetting.run().changed
    before = _snapshot(store)
    again = store.forgetting.run()
    assert not again.changed and again.summary_ids == []
    assert _snapshot(store) == before


def test_candidate_limit_takes_whole_groups_oldest_first(clock):
    config = {"forgetting": {"max_candidates": 5}}
    with MemoryStore.open(":memory:", clock=clock, config=config) as store:
        convs = store.conversations
        for day in (1, 2, 3):
            for i in range(3):
                _add(convs, f"day {day} message {i}", day=day, minute=i)
        for i in range(8):
            _add(convs, f"busy day message {i}", day=5, minute=i, channel="busy")
        clock.set("2026-02-01T00:00:00Z")
        runs = []
        while True:
            report = store.forgetting.run()
            runs.append((report.tiers[0].candidates, report.tiers[0].groups, report.tiers[0].groups_deferred))
            if not report.changed:
                break
        # day 1 (3); then day 2 (3); then day 3 (3); then the busy group cut to its 5 oldest; then its last 3
        assert runs == [(3, 1, 3), (3, 1, 2), (3, 1, 1), (5, 1, 0), (3, 1, 0), (0, 0, 0)]
        assert store.db.scalar("SELECT count(*) FROM raw_messages WHERE archived_at IS NULL") == 0


def test_all_pinned_nothing_is_compressed(store, clock):
    convs = store.conversations
    for i in range(5):
        _add(convs, f"pinned note {i}", day=1, minute=i, pinned=True)
    clock.set("2026-08-01T00:00:00Z")  # 212 days: 0 + 0.025 + 0.3 = 0.325, below both thresholds
    report = store.forgetting.run()
    assert report.compressed == {"short": 0, "mid": 0} and report.promoted == {"short->mid": 5, "mid->long": 5}
    assert store.db.scalar("SELECT count(*) FROM memory_summaries") == 0


def test_without_pin_protection_the_formula_alone_decides(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"forgetting": {"protect_pinned": False}}) as store:
        for i in range(3):
            _add(store.conversations, f"pinned note {i}", day=1, minute=i, pinned=True)
        clock.set("2026-08-01T00:00:00Z")
        assert store.forgetting.run().compressed == {"short": 3, "mid": 0}


def test_clock_going_backwards(store, clock):
    convs = store.conversations
    for i in range(3):
        _add(convs, f"message {i}", day=10, minute=i)
    clock.set("2026-01-05T00:00:00Z")  # before the messages were sent
    report = store.forgetting.run()
    assert not report.changed and report.tiers[0].candidates == 0
    assert store.forgetting.value(convs.messages("s")[0]).recency == 1.0
    clock.set("2026-02-01T00:00:00Z")
    assert store.forgetting.run().compressed["short"] == 3
    clock.set("2026-01-02T00:00:00Z")
    assert not store.forgetting.run().changed


def test_dry_run_reports_without_writing(store, clock):
    convs = store.conversations
    for i in range(4):
        _add(convs, f"message {i}", day=1, minute=i)
    clock.set("2026-02-01T00:00:00Z")
    before = _snapshot(store)
    dry = store.forgetting.run(dry_run=True)
    assert dry.status == "dry_run" and dry.compressed == {"short": 4, "mid": 0} and len(dry.summary_ids) == 1
    assert _snapshot(store) == before
    real = store.forgetting.run()
    assert real.summary_ids == dry.summary_ids  # deterministic ms_<hash> ids


def test_deleting_a_compressed_message_updates_its_summary(store, clock):
    convs = store.conversations
    ids = [_add(convs, f"message {i} about rockets", day=1, minute=i).message_id for i in range(3)]
    clock.set("2026-02-01T00:00:00Z")
    (summary_id,) = store.forgetting.run().summary_ids
    convs.delete(ids[0])
    assert store.forgetting.summary(summary_id).message_count == 2
    assert store.db.scalar("SELECT count(*) FROM memory_archive WHERE id = ?", ("msg:" + ids[0],)) == 0
    convs.delete(ids[1])
    convs.delete(ids[2])
    with pytest.raises(NotFoundError):
        store.forgetting.summary(summary_id)
    with pytest.raises(NotFoundError):
        store.get(summary_id)


def test_namespaces_are_separate(store, clock):
    convs = store.conversations
    for i in range(3):
        _add(convs, f"alice message {i}", day=1, minute=i, session="a")
    convs.create_session("b", namespace="user:bob")
    for i in range(3):
        _add(convs, f"bob message {i}", day=1, minute=i, session="b")
    clock.set("2026-02-01T00:00:00Z")
    assert store.forgetting.run("user:bob").compressed["short"] == 3
    assert all(m.archived_at is None for m in convs.messages("a"))
    reports = store.forgetting.run_all()
    assert [(r.namespace, r.compressed["short"]) for r in reports] == [("default", 3), ("user:bob", 0)]


def test_summarizer_rules(clock):
    from shared_core.conversations.records import Message

    when = clock.now()
    messages = [
        Message(message_id=f"m{i}", session_id="s", seq=i, role="user", content=text, namespace="n", sent_at=when, id=i)
        for i, text in enumerate([
            "We reached a decision: the launch moves to 12 May.",
            "ok",
            "The incident report is due Friday, action item for Dana.",
            "lunch?",
        ], start=1)
    ]
    summary = RuleBasedMemorySummarizer().summarize(
        messages, summary_id="ms_x", namespace="n", source_tier="short", window_start=when, window_end=when,
        dimensions={"platform": "slack", "channel": "ops", "person": "dana", "bot_id": "b7"}, now=when,
    )
    assert summary.key_points == ["We reached a decision: the launch moves to 12 May.",
                                  "The incident report is due Friday, action item for Dana."]
    assert summary.keywords[:3] == ["decision", "action item", "incident"]  # in the seed's keyword order
    assert summary.summary_text.startswith("4 messages on slack in ops with dana via bot b7 from ")
    # quality: 0.5 x min(1, 2/3) + 0.5 x coverage (2 of 4 records hold a keyword or gave a key point)
    assert summary.quality_score == pytest.approx(0.5 * 2 / 3 + 0.5 * 2 / 4, abs=1e-4)
    assert summary.dimensions == {"platform": "slack", "channel": "ops", "person": "dana", "botId": "b7"}
    with pytest.raises(ValueError):
        RuleBasedMemorySummarizer().summarize([], summary_id="x", namespace="n", source_tier="short",
                                              window_start=when, window_end=when, dimensions={}, now=when)


def test_report_type(store):
    assert isinstance(store.forgetting.run(), ForgettingReport)
    with pytest.raises(ValueError):
        store.forgetting.summaries(tier="L4")

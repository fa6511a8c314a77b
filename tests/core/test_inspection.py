"""store.inspector: the overview, one memory's history, links and value curves, sessions."""

from __future__ import annotations

import math

import pytest

from shared_core.errors import NotFoundError
from shared_core.inspection import CURVE_DAYS

ALICE, BOB = "user:alice", "user:bob"


def test_overview_counts_kinds_archive_versions_and_growth(store, clock):
    old = store.add("Alice's timezone is Europe/Berlin", namespace=ALICE, category="profile")
    clock.advance(days=1)
    new = store.add("Alice's timezone is America/New_York", namespace=ALICE, category="profile")
    assert new.event == "superseded"
    gone = store.add("Alice once had a cat", kind="note", namespace=ALICE, pinned=True)
    store.archive(gone, namespace=ALICE)
    store.add("Bob likes coffee", namespace=BOB)
    overview = store.inspector.overview(ALICE)
    assert overview.live_by_kind == {"fact": 1}
    assert overview.archived_by_kind == {"note": 1}
    assert overview.superseded == 1 and overview.pinned == 0  # the pinned note is in the archive now
    assert [(g.added, g.total) for g in overview.growth] == [(1, 1), (2, 3)]
    assert overview.file_bytes is None and overview.maintenance.last_run_at is None
    store.maintain()
    after = store.inspector.overview(ALICE, with_store=True)
    assert after.maintenance.status == "ran" and after.maintenance.steps[0]["name"] == "recover_tasks"
    assert all(step["summary"] for step in after.maintenance.steps)
    assert all(step["summary"] is None for step in store.inspector.overview(ALICE).maintenance.steps)
    assert old in {v.id for v in store.inspector.memory(new, ALICE).history}


def test_history_says_what_replaced_a_fact_and_why(store, clock):
    old = store.add("Alice's timezone is Europe/Berlin", namespace=ALICE, category="profile")
    clock.advance(days=3)
    new = store.add("Alice's timezone is America/New_York", namespace=ALICE, category="profile")
    first, second = store.inspector.memory(old, ALICE).history
    assert (first.id, first.superseded_by, first.reason, first.current) == (old, new, "rule", False)
    assert (second.id, second.current, second.valid_to) == (new, True, None)
    assert first.valid_to == clock.now()
    assert store.inspector.memory(store.add("Alone", namespace=ALICE), ALICE).history == []


def test_links_stay_in_the_namespace_and_name_the_other_memory(store):
    tea = store.add("Alice drinks oolong tea", namespace=ALICE)
    cake = store.add("Alice bakes lemon cake with her tea", namespace=ALICE)
    for _ in range(2):
        store.search("Alice tea", namespace=ALICE)
    (link,) = store.inspector.memory(tea, ALICE).links
    assert (link.memory_id, link.text, link.strength) == (cake, "Alice bakes lemon cake with her tea", 2.0)
    with pytest.raises(NotFoundError):
        store.inspector.memory(tea, BOB)


def test_the_rank_curve_fades_and_stops_at_the_ttl(store, clock):
    memory = store.add("Staging is down for maintenance", namespace=ALICE, ttl=30 * 86400)
    store.reinforce(memory, namespace=ALICE)
    (curve,) = store.inspector.memory(memory, ALICE).curves
    assert curve.measure == "rank" and curve.ends_at_day == pytest.approx(30)
    values = [p.value for p in curve.points]
    assert values[0] == pytest.approx(math.exp(0.6))  # score +3, just hit
    assert values == sorted(values, reverse=True)
    assert [p.value for p in curve.points if p.day >= 30] == [0.0] * len([p for p in curve.points if p.day >= 30])
    assert curve.points[-1].day == CURVE_DAYS
    pinned = store.add("Never forget: the on-call phone is 555-0100", namespace=ALICE, pinned=True)
    assert store.inspector.memory(pinned, ALICE).curves[0].protected


def test_a_learning_shows_its_confidence_crossing_the_prune_threshold(store):
    learning = store.learnings.add("Run the linter before committing", namespace=ALICE, confidence=0.3)
    detail = store.inspector.memory(learning.id, ALICE)
    rank, confidence = detail.curves
    assert confidence.measure == "confidence" and confidence.threshold == 0.1
    # 0.3 x exp(-0.05 x weeks) < 0.1 from about 22 weeks (154 days) on
    assert confidence.crosses_at_day == pytest.approx(155, abs=5)
    assert confidence.points[0].value == pytest.approx(0.3)


def test_a_message_shows_its_forgetting_value_against_its_tier(store):
    session = store.conversations.create_session("s1", namespace=ALICE)
    message = store.conversations.append(session.id, "user", "Deadline for the incident report is Friday",
                                         namespace=ALICE)
    detail = store.inspector.memory(f"msg:{message.message_id}", ALICE)
    assert not detail.editable and detail.owner_domain == "conversations"
    assert detail.provenance.session_id == "s1"
    value = next(c for c in detail.curves if c.measure == "value")
    assert value.threshold == store.config.forgetting.short_to_mid_threshold
    assert value.crosses_at_day == pytest.approx(store.config.forgetting.short_max_age_days)
    assert value.points[0].value == pytest.approx(store.forgetting.value(message).total)
    assert value.points[-1].value < value.points[0].value


def test_sessions_list_and_show_their_messages_in_order(store):
    session = store.conversations.create_session("s1", namespace=ALICE, channel="slack")
    store.conversations.append(session.id, "user", "first", namespace=ALICE)
    store.conversations.append(session.id, "assistant", "second", namespace=ALICE)
    store.conversations.create_session("s2", namespace=BOB)
    (view,) = store.inspector.sessions(ALICE)
    assert (view.id, view.messages, view.channel) == ("s1", 2, "slack")
    detail = store.inspector.session("s1", ALICE)
    assert [m["content"] for m in detail.messages] == ["first", "second"]
    with pytest.raises(NotFoundError):
        store.inspector.session("s2", ALICE)


def test_the_docs_opening_example_prints_what_it_says(tmp_path, monkeypatch, capsys):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "inspector.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", doc, flags=re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENKOI_DATA", str(tmp_path / "data"))
    exec(compile(example, "inspector.md", "exec"), {"__name__": "docs_inspector_example"})  # noqa: S102
    printed = capsys.readouterr().out.splitlines()
    promised = [line[2:] for line in example.splitlines() if line.startswith("# ")]
    assert printed == promised

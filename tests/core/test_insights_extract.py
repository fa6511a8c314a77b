"""Extracting insights from messages: through a text model, or by rules without one (seed 003)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import pytest

from shared_core.insights import insight_id
from shared_core.insights.extract import batches, normalise_messages, rule_based_insights
from shared_core.llm import FunctionModel

CHAT = [
    {"text": "Morning all! How was the weekend?", "person": "ann", "timestamp": 1767261600000},
    {"text": "We decided to go with Postgres for the event store.", "person": "bo", "timestamp": 1767261660000},
    {"text": "Please send the security review by Friday. It is a blocker.", "person": "ann",
     "timestamp": "2026-01-01T10:05:00Z"},
    {"text": "Can you update the onboarding docs? No rush.", "person": "cy"},
    {"text": "The outage report is due today, asap!", "person": "bo"},
    {"text": "haha nice", "person": "cy"},
]


# -- rules ------------------------------------------------------------------------------------------


def test_rules_find_decisions_deadlines_and_action_items():
    found = {i.task_label: i for i in rule_based_insights(normalise_messages(CHAT, platform="slack", channel="eng"))}
    assert set(found) == {"decision", "deadline", "action_item"}
    decision = found["decision"]
    assert decision.title == "Decision: We decided to go with Postgres for the event store"
    assert (decision.importance, decision.urgency) == ("high", "medium")
    assert decision.details[0]["person"] == "bo" and decision.details[0]["platform"] == "slack"
    assert decision.timeline[0]["at"] == "2026-01-01T10:01:00.000000Z" and decision.timeline[0]["by"] == "bo"


def test_rule_levels():
    def one(text):
        (item,) = rule_based_insights(normalise_messages([text]))
        return item.task_label, item.importance, item.urgency

    assert one("Please send the security review by Friday.") == ("deadline", "critical", "urgent")
    assert one("Please send the review by Friday. It blocks the release, it is a blocker.")[1] == "critical"
    assert one("The outage report is due today, asap!") == ("deadline", "critical", "immediate")
    assert one("Can you update the onboarding docs? No rush.") == ("action_item", "low", "low")
    assert one("I'll follow up with the vendor tomorrow") == ("action_item", "medium", "urgent")
    assert one("Deadline for the grant is 2026-03-01") == ("deadline", "high", "urgent")
    assert one("The team agreed on a four-day week") == ("decision", "high", "medium")
    assert rule_based_insights(normalise_messages(["lunch was great", "ok", "see you"])) == []


def test_rule_extraction_upserts_and_dedups(store, clock):
    first = store.insights.extract(CHAT, platform="slack", channel="eng", bot_id="b")
    assert first.method == "rules" and first.created == 4 and not first.warnings  # 1 decision, 2 deadlines, 1 action
    assert store.insights.count() == 4 and store.count(kind="insight") == 4
    again = store.insights.extract(CHAT, platform="slack", channel="eng", bot_id="b")
    assert again.created == 0 and again.unchanged == 4 and store.insights.count() == 4
    # the same decision seen again later: one insight, its details and timeline grow
    clock.advance(days=1)
    later = store.insights.extract([{"text": "We decided to go with Postgres for the event store.", "person": "dee"}],
                                   platform="slack", channel="eng", bot_id="b")
    assert later.updated == 1
    (decision,) = store.insights.list(task_label="decision")
    assert [d.get("person") for d in decision.details] == ["bo", "dee"] and len(decision.timeline) == 2
    assert store.insights.search("postgres event store")[0].insight.id == decision.id


def test_messages_in_many_shapes():
    @dataclass
    class Msg:
        content: str
        sender: str
        ts: float

    found = normalise_messages(["plain text", {"content": "dict", "userId": 7, "ts": 1767225600},
                                Msg("object", "eve", 1767225600000), {"text": "   "}])
    assert [m.text for m in found] == ["plain text", "dict", "object"]
    assert found[1].person == "7" and found[1].timestamp == found[2].timestamp
    with pytest.raises(ValueError, match="text"):
        normalise_messages([{"body": "no text field"}])
    with pytest.raises(ValueError, match="timestamp"):
        normalise_messages([{"text": "x", "timestamp": "yesterday"}])
    assert normalise_messages("one message")[0].text == "one message"


def test_empty_input(store):
    result = store.insights.extract([])
    assert result.insights == [] and result.created == 0 and not result.warnings


# -- the model ---------------------------------------------------------------------------------------


def _model(answer, calls):
    def complete(prompt, max_tokens):
        calls.append((prompt, max_tokens))
        return answer(prompt) if callable(answer) else answer

    return FunctionModel(complete, name="fake")


def test_model_extraction_groups_by_platform_and_channel(store):
    calls = []

    def answer(prompt):
        channel = "eng" if "Channel: eng" in prompt else "ops"
        return "Here you go:\n```json\n" + json.dumps({"insights": [
            {"title": f"{channel} decision", "description": "They chose Postgres", "importance": "HIGH",
             "urgency": "urgent", "task_label": "decision", "dedupe_key": f"{channel}-db",
             "details": ["chosen by bo"], "timeline": [{"at": "2026-01-01T10:00:00Z", "event": "decided"}]},
        ]}) + "\n```"

    store.text_model = _model(answer, calls)
    messages = [{"text": "we pick postgres", "channel": "eng"}, {"text": "disk alert", "channel": "ops"},
                {"text": "agreed", "channel": "eng"}]
    result = store.insights.extract(messages, platform="slack", bot_id="bot-1")
    assert result.method == "model" and result.created == 2 and not result.warnings
    assert len(calls) == 2 and all(max_tokens == store.config.insights.extract_max_tokens for _, max_tokens in calls)
    eng = store.insights.get(insight_id("default", "bot-1", "eng-db"))
    assert (eng.importance, eng.urgency, eng.task_label, eng.platform, eng.channel) == \
        ("high", "urgent", "decision", "slack", "eng")
    assert eng.details == [{"text": "chosen by bo"}] and eng.timeline[0]["event"] == "decided"
    assert "we pick postgres" in calls[0][0] and "agreed" in calls[0][0] and "disk alert" not in calls[0][0]


def test_questionable_items_are_fixed_or_skipped_with_warnings(store):
    answer = json.dumps([
        {"title": "Good one", "importance": "enormous", "urgency": "whenever"},
        {"description": "no title"},
        "not an object",
        {"title": "Second good one"},
    ])
    store.text_model = _model(answer, [])
    result = store.insights.extract(["something happened"])
    assert result.created == 2
    assert store.insights.find("good-one").importance == "medium"
    assert len(result.warnings) == 4 and any("no title" in w for w in result.warnings)


@pytest.mark.parametrize("answer", ["I could not find anything.", "", '{"foo": 1}', '{"insights": "none"}'])
def test_bad_model_output_stores_nothing_and_warns(store, caplog, answer):
    store.text_model = _model(answer, [])
    with caplog.at_level(logging.WARNING, logger="openkoi.insights"):
        result = store.insights.extract(CHAT)
    assert result.insights == [] and store.insights.count() == 0
    assert len(result.warnings) == 1 and "nothing stored" in result.warnings[0]
    assert "nothing stored" in caplog.text


def test_a_failing_model_never_raises(store):
    def boom(prompt, max_tokens):
        raise TimeoutError("the model server went away")

    store.text_model = FunctionModel(boom)
    result = store.insights.extract(CHAT)
    assert result.insights == [] and "TimeoutError" in result.warnings[0]


def test_use_model_switch(store):
    calls = []
    store.text_model = _model('{"insights": []}', calls)
    rules = store.insights.extract(CHAT, use_model=False)
    assert rules.method == "rules" and rules.created == 4 and calls == []
    store.text_model = None
    with pytest.raises(ValueError, match="no text model"):
        store.insights.extract(CHAT, use_model=True)


def test_long_conversations_are_split_into_batches(clock):
    from shared_core import MemoryStore

    with MemoryStore.open(":memory:", clock=clock, config={"insights": {"extract_prompt_tokens": 40}}) as store:
        calls = []
        store.text_model = _model('{"insights": []}', calls)
        store.insights.extract([f"message number {i} with a few words in it" for i in range(12)] + ["x" * 2000])
        assert len(calls) > 3
        assert all("message number 0 " not in p for p, _ in calls[1:])
    parts = batches(normalise_messages(["a" * 400, "b c d", "e f g"]), 20)
    assert len(parts[0][0].text) < 400 and sum(len(p) for p in parts) == 3

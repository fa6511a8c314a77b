"""Working memory (seed 001): last 20 in full, past 40 the older ones summarised, system + summary + recent."""

from __future__ import annotations

import json

import pytest

from shared_core import ConfigError, MemoryStore
from shared_core.conversations.working import SUMMARY_HEADER
from shared_core.llm import FunctionModel
from shared_core.tokens import count_tokens


def _fill(convs, n, session="s", start=0):
    for i in range(start, start + n):
        role = "user" if i % 2 == 0 else "assistant"
        convs.append(session, role, f"Message {i}: we talked about topic number {i}.")


def test_up_to_forty_messages_nothing_is_summarised(store):
    convs = store.conversations
    _fill(convs, 40)
    wm = convs.working_memory("s")
    assert wm.summary is None and len(wm.messages) == 40 and wm.total_messages == 40
    assert convs.working_summaries("s") == []
    assert wm.to_messages() == [m.to_chat() for m in wm.messages]


def test_past_forty_older_messages_fold_into_a_summary_and_twenty_stay(store):
    convs = store.conversations
    _fill(convs, 41)
    wm = convs.working_memory("s")
    assert wm.summary is not None
    assert (wm.summary.first_seq, wm.summary.last_seq, wm.summary.message_count) == (1, 21, 21)
    assert [m.seq for m in wm.messages] == list(range(22, 42)) and len(wm.messages) == 20
    assert wm.summary.method == "extractive" and wm.summary.token_count == count_tokens(wm.summary.summary)
    # the window then grows back to 40 before the next summary
    _fill(convs, 20, start=41)
    wm = convs.working_memory("s")
    assert wm.summary.last_seq == 21 and len(wm.messages) == 40
    _fill(convs, 1, start=61)
    wm = convs.working_memory("s")
    assert (wm.summary.first_seq, wm.summary.last_seq, wm.summary.message_count) == (1, 42, 42)
    assert [m.seq for m in wm.messages] == list(range(43, 63))
    assert [w.last_seq for w in convs.working_summaries("s")] == [21, 42]
    row = store.db.query("SELECT session_id, namespace, method FROM working_memory_summaries ORDER BY last_seq")
    assert row == [("s", "default", "extractive"), ("s", "default", "extractive")]


def test_the_model_sees_system_then_summary_then_recent(store):
    convs = store.conversations
    _fill(convs, 45)
    context = convs.context("s", system="You are a helpful assistant.")
    assert context[0] == {"role": "system", "content": "You are a helpful assistant."}
    assert context[1]["role"] == "system" and context[1]["content"].startswith(SUMMARY_HEADER + "\n")
    assert [c["content"] for c in context[2:]] == [m.content for m in convs.messages("s", last=20)]
    text = convs.working_memory("s").render(system="sys")
    assert text.startswith("system: sys\n\nsystem: " + SUMMARY_HEADER)
    assert "<table>" in convs.working_memory("s")._repr_html_()


def test_extractive_summary_keeps_the_informative_sentences(store):
    convs = store.conversations
    convs.append("s", "user", "Hi!")
    convs.append("s", "assistant", "Hello, how can I help?")
    convs.append("s", "user", "My name is Priya and I live in Lisbon.")
    convs.append("s", "user", "The deadline for the Atlas migration is 14 March.")
    convs.append("s", "assistant", "Ok.")
    convs.append("s", "user", "I prefer tea over coffee.")
    _fill(convs, 40, start=10)
    summary = convs.working_memory("s").summary.summary
    assert "Priya" in summary and "Lisbon" in summary and "14 March" in summary and "tea over coffee" in summary
    assert "Hi!" not in summary and "- assistant: Ok." not in summary
    assert count_tokens(summary) <= store.config.context.summary_tokens


def test_a_text_model_writes_the_summary_when_its_answer_is_usable(store):
    prompts = []

    def answer(prompt, max_tokens):
        prompts.append((prompt, max_tokens))
        return json.dumps({"summary": "The user discussed 21 topics."})

    store.text_model = FunctionModel(answer)
    _fill(store.conversations, 41)
    wm = store.conversations.working_memory("s")
    assert wm.summary.summary == "The user discussed 21 topics." and wm.summary.method == "model"
    prompt, budget = prompts[0]
    assert budget == 500 and "Message 0:" in prompt and "Message 20:" in prompt and "Message 21:" not in prompt
    # the next summary gets the previous one in its prompt
    _fill(store.conversations, 21, start=41)
    store.conversations.working_memory("s")
    assert "The user discussed 21 topics." in prompts[1][0]


@pytest.mark.parametrize(
    "reply",
    [
        "",  # empty
        '{"summary": ',  # broken JSON
        '{"text": "no summary key"}',  # wrong shape
        '{"summary": "   "}',  # empty summary
        "word " * 1200,  # far over the budget
        RuntimeError("model down"),  # the call itself fails
    ],
)
def test_bad_model_output_falls_back_to_the_extractive_summary(store, reply):
    def answer(prompt, max_tokens):
        if isinstance(reply, Exception):
            raise reply
        return reply

    store.text_model = FunctionModel(answer)
    _fill(store.conversations, 41)
    wm = store.conversations.working_memory("s")
    assert wm.summary.method == "extractive" and "topic number" in wm.summary.summary
    assert store.conversations.count("s") == 41  # nothing lost


def test_plain_text_answers_are_accepted(store):
    store.text_model = FunctionModel(lambda prompt, budget: "They covered many topics, one per message.")
    _fill(store.conversations, 41)
    assert store.conversations.working_memory("s").summary.summary == "They covered many topics, one per message."


def test_deleting_a_summarised_message_drops_the_summaries_that_mention_it(store):
    convs = store.conversations
    _fill(convs, 41)
    first = convs.working_memory("s").summary
    assert first is not None
    victim = convs.messages("s")[4]
    convs.delete(victim.message_id)
    assert convs.working_summaries("s") == []
    wm = convs.working_memory("s", summarize=False)
    assert wm.summary is None and len(wm.messages) == 40
    wm = convs.working_memory("s")  # 40 outside: not due
    assert wm.summary is None
    convs.append("s", "user", "one more")
    wm = convs.working_memory("s")
    assert wm.summary is not None and "Message 4:" not in wm.summary.summary


def test_deleting_a_recent_message_keeps_the_summary(store):
    convs = store.conversations
    _fill(convs, 41)
    convs.working_memory("s")
    convs.delete_last("s")
    assert len(convs.working_summaries("s")) == 1


def test_force_summarises_early_and_unknown_sessions_are_empty(store):
    convs = store.conversations
    _fill(convs, 25)
    assert convs.summarize_working("s") is None
    forced = convs.summarize_working("s", force=True)
    assert forced is not None and forced.last_seq == 5
    assert convs.summarize_working("nope") is None
    wm = convs.working_memory("nope")
    assert wm.summary is None and wm.messages == [] and wm.to_messages("sys") == [{"role": "system", "content": "sys"}]


def test_settings_are_configurable_and_validated(clock):
    with MemoryStore.open(":memory:", clock=clock,
                          config={"context": {"working_keep": 2, "working_summarize_after": 4}}) as store:
        _fill(store.conversations, 5)
        wm = store.conversations.working_memory("s")
        assert wm.summary.last_seq == 3 and [m.seq for m in wm.messages] == [4, 5]
    with pytest.raises(ConfigError, match="working_summarize_after"):
        MemoryStore.open(":memory:", config={"context": {"working_keep": 40, "working_summarize_after": 20}})

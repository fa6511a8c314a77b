"""Part 4: one context manager, three presets; facts are stored before anything is compacted."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from shared_core import ConfigError, MemoryStore
from shared_core.context import COMPACTED_HEADER, ContextPolicy, count_message_tokens
from shared_core.context.messages import as_turns
from shared_core.llm import FunctionModel
from shared_core.tokens import count_tokens

# (statement, question, what the answer must contain); distinct subjects, no two alike
PLANTED = [
    ("My cat's name is Whiskerino.", "What is my cat's name?", "Whiskerino"),
    ("My dog is called Biscuit.", "What is my dog called?", "Biscuit"),
    ("I live in Lisbon.", "Where do I live?", "Lisbon"),
    ("My sister's name is Ilse.", "What is my sister's name?", "Ilse"),
    ("I work at Acme Robotics.", "Where do I work?", "Acme Robotics"),
    ("My favourite colour is teal.", "What is my favourite colour?", "teal"),
    ("I'm allergic to peanuts.", "What am I allergic to?", "peanuts"),
    ("My timezone is Europe/Berlin.", "What is my timezone?", "Europe/Berlin"),
    ("I prefer window seats on long flights.", "Which seats do I prefer on flights?", "window seats"),
    ("I speak Dutch and Portuguese.", "Which languages do I speak?", "Dutch and Portuguese"),
    ("My wife is a pediatric nurse.", "What does my wife do as a nurse?", "pediatric nurse"),
    ("I drive a blue Volvo.", "Which car do I drive?", "Volvo"),
    ("My dentist is called Okafor.", "What is my dentist called?", "Okafor"),
    ("I was born in 1987.", "In which year was I born?", "1987"),
    ("I have two daughters.", "How many daughters do I have?", "two daughters"),
    ("We decided to use Postgres for the billing service.", "Which database did we decide on for billing?",
     "Postgres"),
    ("The deadline for the Atlas migration is 14 March.", "When is the deadline for the Atlas migration?", "14 March"),
    ("My son's name is Tomas.", "What is my son's name?", "Tomas"),
    ("I play the cello.", "Which instrument do I play, the cello?", "cello"),
    ("I moved to Porto in 2021.", "When did I move to Porto?", "2021"),
    ("My manager is called Renata.", "Who is my manager?", "Renata"),
    ("I hate cilantro.", "Do I hate cilantro?", "cilantro"),
    ("My laptop is a ThinkPad X1.", "Which laptop do I have?", "ThinkPad"),
    ("Our production server runs on Hetzner in Falkenstein.", "Where does our production server run?", "Hetzner"),
    ("My gym is in Alvalade.", "Where is my gym?", "Alvalade"),
    ("I'm a vegetarian.", "Am I a vegetarian?", "vegetarian"),
    ("My bike is a Brompton.", "What bike do I ride?", "Brompton"),
    ("My mother lives in Ghent.", "Where does my mother live?", "Ghent"),
    ("I enjoy jazz concerts.", "Do I enjoy jazz?", "jazz"),
    ("My passport expires in 2029.", "When does my passport expire?", "2029"),
]

FILLER_USER = [
    "Can you explain how topic {i} works in more detail?",
    "What would you suggest for step {i}?",
    "That makes sense, go on.",
    "I think I might look into option {i} someday.",
    "Hmm, not sure about that one.",
    "Please summarise point {i} again.",
    "Thanks, that helps a lot.",
    "Is number {i} really the best choice?",
]
FILLER_ASSISTANT = "Sure. Part {i} depends on the setup; I would start small, measure, and then adjust the plan."


def _conversation(planted=PLANTED, every=6):
    """User and assistant turns with one planted fact every ``every`` turns, starting early."""
    turns = []
    pending = list(planted)
    for i in range(len(planted) * every + 12):
        if i % every == 1 and pending:
            statement = pending.pop(0)[0]
            turns.append({"role": "user", "content": f"Oh, by the way: {statement} Anyway."})
        else:
            turns.append({"role": "user", "content": FILLER_USER[i % len(FILLER_USER)].format(i=i)})
        turns.append({"role": "assistant", "content": FILLER_ASSISTANT.format(i=i)})
    return turns


def _run(manager, turns, session_id="chat", system="You are a helpful assistant."):
    chat = [{"role": "system", "content": system}]
    results = []
    for turn in turns:
        chat.append(turn)
        result = manager.manage(chat, session_id=session_id)
        results.append(result)
        chat = result.messages
    return chat, results


def test_presets_take_the_seed_numbers_from_config(store):
    cfg = store.config.context
    openkoi = ContextPolicy.preset("openkoi", cfg)
    assert (openkoi.split_ratio, openkoi.keep_last, openkoi.flush_at) == (2 / 3, None, None)
    assert openkoi.compact_threshold == int(0.7 * cfg.window_tokens) and openkoi.summary_tokens == 500
    motoko = ContextPolicy.preset("openmotoko", cfg)
    assert (motoko.keep_last, motoko.max_messages, motoko.split_ratio) == (20, 40, None)
    fleet = ContextPolicy.preset("fleet", cfg, window_tokens=1000)
    assert (fleet.flush_threshold, fleet.compact_threshold, fleet.keep_last) == (600, 700, 4)
    assert ContextPolicy.preset("openkoi", cfg, max_tokens=1234).compact_threshold == 1234
    assert ContextPolicy.preset("openkoi", cfg, keep_last=3).split_ratio is None
    assert fleet.describe() == "fleet: compact past 700 tokens, keep the last 4, flush facts from 600 tokens"
    with pytest.raises(ValueError, match="exactly one"):
        ContextPolicy(split_ratio=None, keep_last=None)
    with pytest.raises(ValueError, match="unknown preset"):
        ContextPolicy.preset("turbo")
    with pytest.raises(TypeError, match="unknown policy settings"):
        ContextPolicy.preset("fleet", window=3)
    with pytest.raises(ValueError, match="compact_at"):
        ContextPolicy(compact_at=1.5)
    with pytest.raises(ConfigError, match="flush_at"):
        MemoryStore.open(":memory:", config={"context": {"flush_at": 0}})
    with pytest.raises(ConfigError, match="preset"):
        MemoryStore.open(":memory:", config={"context": {"preset": "turbo"}})


def test_the_default_preset_is_configurable(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"context": {"preset": "fleet", "keep_last": 6}}) as store:
        manager = store.memory_manager.context_manager()
        assert manager.policy.name == "fleet" and manager.policy.keep_last == 6


def test_token_counts_use_the_shared_counter_plus_overhead(store):
    messages = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": [{"type": "text",
                                                                                              "text": "hi"}]}]
    assert count_message_tokens(messages) == count_tokens("hello there") + count_tokens("hi") + 8
    manager = store.memory_manager.context_manager("fleet", window_tokens=100)
    status = manager.status(messages)
    assert status.tokens == count_message_tokens(messages) and status.window_tokens == 100
    assert status.ratio == pytest.approx(status.tokens / 100) and not status.compact_due
    with pytest.raises(TypeError, match="list of messages"):
        manager.status("hello")
    with pytest.raises(ValueError, match="role"):
        manager.status([{"content": "no role"}])


def test_openkoi_splits_at_two_thirds_and_keeps_system_prompt_first(store):
    chat = [{"role": "system", "content": "You are terse."}]
    chat += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Line {i} of a long and winding chat."}
             for i in range(9)]
    tokens = count_message_tokens(chat)
    manager = store.memory_manager.context_manager("openkoi", max_tokens=tokens, summary_tokens=60)
    assert not manager.status(chat).compact_due  # seed 000: compaction when the total *exceeds* max_tokens
    manager = store.memory_manager.context_manager("openkoi", max_tokens=tokens - 1, summary_tokens=60)
    assert manager.status(chat).compact_due
    result = manager.manage(chat, session_id="s")
    assert result.action == "compact" and result.compacted == 6  # seed 000: len * 2 / 3 of the 9
    assert result.messages[0] is chat[0]
    assert result.messages[1]["role"] == "system"
    assert result.messages[1]["content"].startswith(COMPACTED_HEADER + "\n")
    assert result.messages[2:] == chat[7:] and all(a is b for a, b in zip(result.messages[2:], chat[7:], strict=True))
    assert result.kept == [0, 7, 8, 9] and result.summary_position == 1
    assert result.summary_message == result.messages[1]
    assert result.tokens_after == count_message_tokens(result.messages) < result.tokens_before


def test_fleet_flushes_at_sixty_percent_then_compacts_at_seventy_keeping_four(store):
    manager = store.memory_manager.context_manager("fleet", window_tokens=400, summary_tokens=60)
    chat = [{"role": "user", "content": "My cat's name is Whiskerino."}]
    actions = []
    for i in range(40):
        chat.append({"role": "assistant" if i % 2 == 0 else "user", "content": f"Filler sentence number {i} here."})
        state = manager.status(chat, session_id="f")
        result = manager.manage(chat, session_id="f")
        actions.append(result.action)
        if result.action == "flush":
            assert state.tokens >= 240 and not state.compact_due and result.messages == chat
        if result.action == "compact":
            assert state.tokens > 280
            assert result.messages[1:] == chat[-4:] and len(result.messages) == 5
        chat = result.messages
    assert "flush" in actions and "compact" in actions
    assert actions.index("flush") < actions.index("compact")
    cycles = "".join(a[0] for a in actions if a != "none").split("c")
    assert all(c.count("f") <= 1 for c in cycles)  # one proactive flush per fill of the window
    events = store.memory_manager.context_events("f")
    assert {e.action for e in events} == {"flush", "compact"}
    assert len(store.memory_manager.compactions("f")) == actions.count("compact")
    facts = store.list(kind="fact")
    assert [f.text for f in facts] == ["The user's cat's name is Whiskerino."]
    assert facts[0].source == "extraction" and facts[0].session_id == "f" and facts[0].score == 0
    # the flush read the fact; no later flush or compaction read that message again (no reinforcement)


def test_openmotoko_compacts_past_forty_messages_keeping_twenty(store):
    manager = store.memory_manager.context_manager("openmotoko")
    chat = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i}."} for i in range(40)]
    assert manager.manage(chat, session_id="m").action == "none"
    chat.append({"role": "user", "content": "Message 40."})
    result = manager.manage(chat, session_id="m")
    assert result.action == "compact" and result.compacted == 21
    assert result.messages[1:] == chat[21:] and len(result.messages) == 21


def test_a_tool_result_stays_with_its_call(store):
    manager = store.memory_manager.context_manager("fleet", window_tokens=10_000, keep_last=2)
    chat = [{"role": "user", "content": "Find me a flight."},
            {"role": "assistant", "content": "", "tool_calls": [{"name": "search", "args": {"to": "LIS"}, "id": "c1"}]},
            {"role": "tool", "content": "TP1351 at 07:40", "tool_call_id": "c1"},
            {"role": "assistant", "content": "TP1351 leaves at 07:40."}]
    result = manager.compact(chat, session_id="t", force=True)
    # keep_last=2 would start the recent part with the tool result: the split moves before its call
    assert result.messages[1:] == chat[1:]
    assert result.compacted == 1


def test_nothing_to_compact_and_not_due_leave_the_messages_alone(store):
    manager = store.memory_manager.context_manager("fleet", window_tokens=10_000)
    chat = [{"role": "user", "content": "hi"}]
    result = manager.compact(chat)
    assert result.action == "none" and result.reason == "not due" and result.messages == chat
    result = manager.compact(chat, force=True)
    assert result.action == "none" and "nothing old enough" in result.reason


def test_repeated_compaction_folds_the_previous_summary(store):
    manager = store.memory_manager.context_manager("fleet", window_tokens=300, summary_tokens=60)
    chat = [{"role": "user", "content": "My dog is called Biscuit."}]
    chat += [{"role": "assistant", "content": f"Reply {i} with several words in it."} for i in range(12)]
    first = manager.compact(chat, session_id="r", force=True)
    assert sum(1 for m in first.messages if isinstance(m, dict) and m["content"].startswith(COMPACTED_HEADER)) == 1
    chat = first.messages + [{"role": "user", "content": f"More {i} words now."} for i in range(8)]
    second = manager.compact(chat, session_id="r", force=True)
    summaries = [m for m in second.messages if isinstance(m, dict) and m["content"].startswith(COMPACTED_HEADER)]
    assert len(summaries) == 1 and "Biscuit" in summaries[0]["content"]
    records = store.memory_manager.compactions("r")
    assert [r.id for r in records] == [second.compaction_id, first.compaction_id]
    assert records[0].summary == second.summary and records[0].fact_ids == []
    assert records[1].fact_ids == [f.id for f in first.facts] and len(first.facts) == 1


def test_summaries_are_stored_as_memories_of_the_session_before_compacting(store):
    manager = store.memory_manager.context_manager("fleet", window_tokens=300, summary_tokens=60,
                                                   namespace="user:ana")
    chat = [{"role": "user", "content": "I live in Lisbon."}]
    chat += [{"role": "assistant", "content": f"Reply {i} with several words in it."} for i in range(12)]
    result = manager.compact(chat, session_id="sum", force=True)
    memory = store.get(result.summary_id)
    assert memory.kind == "summary" and memory.session_id == "sum" and memory.namespace == "user:ana"
    assert memory.text == result.summary and memory.metadata["summary_type"] == "compaction"
    assert memory.metadata["message_count"] == result.compacted and memory.metadata["policy"] == "fleet"
    # compacting the same messages again (a retry) replaces that summary, never duplicates it
    again = manager.compact(chat, session_id="sum", force=True)
    assert again.summary_id == result.summary_id and store.count(kind="summary", namespace="user:ana") == 1


def test_nothing_is_discarded_when_storing_facts_fails(store, monkeypatch):
    manager = store.memory_manager.context_manager("fleet", window_tokens=100)
    chat = [{"role": "user", "content": "My cat's name is Whiskerino."}]
    chat += [{"role": "assistant", "content": f"Reply {i} with several words in it."} for i in range(12)]
    original = list(chat)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store.memory_manager.facts, "store_facts", broken)
    with pytest.raises(OSError, match="disk full"):
        manager.manage(chat, session_id="x")
    assert chat == original
    assert store.count(kind="summary") == 0 and store.memory_manager.compactions("x") == []
    monkeypatch.undo()
    result = manager.manage(chat, session_id="x")  # the next turn stores the facts, then compacts
    assert result.action == "compact" and [f.text for f in result.facts] == ["The user's cat's name is Whiskerino."]


def test_any_message_form_is_read_and_returned_as_given(store):
    class LangChainLike:
        def __init__(self, type_, content):
            self.type, self.content, self.id = type_, content, None

    class LlamaRole:
        value = "user"

    llama_like = SimpleNamespace(role=LlamaRole(), content="I speak Dutch.")
    stored = store.conversations.append("conv", "user", "My dog is called Biscuit.")
    chat = [LangChainLike("system", "be brief"), LangChainLike("human", "I live in Lisbon."), llama_like, stored]
    chat += [LangChainLike("ai", f"Answer number {i} with a few words.") for i in range(10)]
    turns = as_turns(chat)
    assert [t.role for t in turns[:4]] == ["system", "user", "user", "user"]
    manager = store.memory_manager.context_manager("fleet", window_tokens=10_000, keep_last=3)
    result = manager.compact(chat, session_id="forms", force=True)
    assert result.messages[0] is chat[0] and all(a is b for a, b in zip(result.messages[2:], chat[-3:], strict=True))
    assert sorted(f.text for f in result.facts) == ["The user lives in Lisbon.", "The user speaks Dutch.",
                                                    "The user's dog is called Biscuit."]
    with pytest.raises(TypeError, match="cannot read a message"):
        manager.status([42])


def test_many_planted_facts_survive_repeated_compaction_and_are_recalled_from_a_fresh_store(tmp_path, clock):
    """Seed 004's "cat's name is Whiskerino" test, thirty times over, through many compactions."""
    path = tmp_path / "memory.db"
    turns = _conversation()
    with MemoryStore.open(path, clock=clock) as store:
        manager = store.memory_manager.context_manager("fleet", namespace="user:priya", window_tokens=900)
        chat, results = _run(manager, turns, session_id="long-chat")
        compactions = [r for r in results if r.action == "compact"]
        assert len(compactions) >= 10
        assert all(r.tokens_after < manager.policy.compact_threshold for r in compactions)
        final_text = "\n".join(m["content"] for m in chat if isinstance(m, dict))
        early = [statement for statement, _, _ in PLANTED[:20]]
        assert not any(f"by the way: {s}" in final_text for s in early)  # their messages were compacted away
    with MemoryStore.open(path, clock=clock) as fresh:  # a new process: only what was stored remains
        facts = fresh.list(kind="fact", namespace="user:priya")
        assert len(facts) == len(PLANTED)  # precision: no filler sentence became a fact
        assert {f.source for f in facts} == {"extraction"} and {f.session_id for f in facts} == {"long-chat"}
        for _statement, question, answer in PLANTED:
            found = fresh.memory_manager.recall_facts(question, namespace="user:priya", limit=3)
            assert any(answer in hit.text for hit in found.hits), (question, [h.text for h in found.hits])
        memory_md = fresh.memory_manager.workspace("user:priya").read("MEMORY.md")
        assert all(answer in memory_md for _, _, answer in PLANTED)
        assert fresh.count(kind="summary", namespace="user:priya") == len(compactions)


def test_the_planted_facts_also_survive_with_a_text_model(tmp_path, clock):
    """A model that reads only the messages it is told to read for facts, and summarises."""
    planted = PLANTED[:8]
    statements = {s: s for s, _, _ in planted}
    calls = []

    def model(prompt, max_tokens):
        section = prompt.split("Messages to read for facts:\n", 1)[1]
        facts = [s.replace("My ", "The user's ").replace("I live", "The user lives").replace("I work", "The user works")
                 .replace("I'm", "The user is").replace("I prefer", "The user prefers").replace("I speak", "The user speaks")
                 for s in statements if s in section]
        calls.append(len(facts))
        answer = {"facts": facts}
        if '"summary"' in prompt:
            answer["summary"] = f"The user mentioned {len(facts)} things."
        return json.dumps(answer)

    with MemoryStore.open(tmp_path / "m.db", clock=clock, text_model=FunctionModel(model)) as store:
        manager = store.memory_manager.context_manager("fleet", window_tokens=700)
        _, results = _run(manager, _conversation(planted), session_id="model-chat")
        assert sum(r.action == "compact" for r in results) >= 3
        assert {r.method for r in results if r.action != "none"} == {"model"}
        assert sum(calls) == len(planted)  # each statement was offered for facts exactly once
    with MemoryStore.open(tmp_path / "m.db", clock=clock) as fresh:
        for _, question, answer in planted:
            found = fresh.memory_manager.recall_facts(question, limit=3)
            assert any(answer in hit.text for hit in found.hits), question


def test_extracted_facts_get_categories_and_go_through_dedup(store):
    manager = store.memory_manager.context_manager("fleet", window_tokens=10_000, keep_last=1)
    chat = [{"role": "user", "content": "My cat's name is Whiskerino."}, {"role": "assistant", "content": "Nice."}]
    first = manager.compact(chat, session_id="a", force=True)
    assert [(f.event, f.category) for f in first.facts] == [("created", "pets")]
    other = store.memory_manager.context_manager("fleet", window_tokens=10_000, keep_last=1)
    again = other.compact([{"role": "user", "content": "my cat's name is Whiskerino"},
                           {"role": "assistant", "content": "I know."}], session_id="b", force=True)
    assert [f.event for f in again.facts] == ["reinforced"] and again.facts[0].id == first.facts[0].id
    assert store.count(kind="fact") == 1


def test_memory_md_is_written_only_when_a_workspace_is_configured(file_store, store):
    chat = [{"role": "user", "content": "I live in Lisbon."}, {"role": "assistant", "content": "Noted."}]
    assert store.memory_manager.workspace() is None  # ':memory:' stores write no files by default
    store.memory_manager.context_manager("fleet", keep_last=1).compact(chat, session_id="m", force=True)
    manager = file_store.memory_manager.context_manager("fleet", keep_last=1)
    manager.compact(chat, session_id="m", force=True)
    text = manager.workspace.read("MEMORY.md")
    assert re.search(r"## From session m \(2026-01-01\)\n\n- The user lives in Lisbon\.\n", text)
    none = file_store.memory_manager.context_manager("fleet", keep_last=1, workspace=False)
    assert none.workspace is None


def test_end_of_a_list_conversation_stores_facts_and_a_session_summary(store):
    manager = store.memory_manager.context_manager("fleet", namespace="n")
    chat = [{"role": "user", "content": "I play the cello."}, {"role": "assistant", "content": "Lovely."}]
    ended = manager.end(chat, session_id="thread-7")
    assert [f.text for f in ended.facts] == ["The user plays the cello."]
    summary = store.get(ended.summary_id)
    assert summary.kind == "summary" and summary.metadata["summary_type"] == "session_end"
    assert summary.session_id == "thread-7" and "cello" in summary.text
    assert manager.end(chat, session_id="thread-7").facts == []  # already read: nothing twice


def test_erasing_a_namespace_removes_the_bookkeeping(store):
    manager = store.memory_manager.context_manager("fleet", namespace="gone", window_tokens=300, summary_tokens=60)
    chat = [{"role": "user", "content": "I live in Lisbon."}]
    chat += [{"role": "assistant", "content": f"Reply {i} with several words in it."} for i in range(12)]
    manager.flush(chat, session_id="e")
    manager.compact(chat, session_id="e", force=True)
    keep = store.memory_manager.context_manager("fleet", namespace="kept")
    keep.flush(chat, session_id="k")
    store.erase_namespace("gone")
    for table in ("context_extracted", "context_events"):
        assert store.db.scalar(f"SELECT count(*) FROM {table} WHERE namespace = 'gone'") == 0
        assert store.db.scalar(f"SELECT count(*) FROM {table} WHERE namespace = 'kept'") > 0
    assert store.count(namespace="gone") == 0 and store.memory_manager.compactions("e", namespace="gone") == []


def test_the_module_examples_run():
    import doctest

    import shared_core.category_search
    import shared_core.context

    assert doctest.testmod(shared_core.context).failed == 0
    assert doctest.testmod(shared_core.category_search).failed == 0

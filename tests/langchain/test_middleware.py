"""OpenKoiMemoryMiddleware: memory in the system prompt, write-then-compact, transcripts, learnings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver

from langchain_openkoi import OpenKoiChatMessageHistory, OpenKoiMemoryMiddleware
from shared_core import ContextPolicy
from shared_core.chat_keys import session_id as chat_session
from shared_core.tokens import count_tokens


class RecordingModel(GenericFakeChatModel):
    """Replies with the scripted messages and keeps every message list it was called with."""

    calls: list = []

    def __init__(self, replies: list, **kwargs: Any) -> None:
        super().__init__(messages=iter(replies), **kwargs)
        self.calls = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    @property
    def system_prompts(self) -> list[str]:
        return [call[0].text for call in self.calls if call and isinstance(call[0], SystemMessage)]


def _thread(name: str) -> dict:
    return {"configurable": {"thread_id": name}}


def _failing_tool(handled: bool) -> StructuredTool:
    def fetch_weather(city: str) -> str:
        raise ToolException(f"weather service timed out for {city}") if handled else ValueError("socket closed")

    return StructuredTool.from_function(fetch_weather, name="fetch_weather", description="Weather for a city.",
                                        handle_tool_error=handled)


def test_recalled_facts_join_the_system_prompt(store):
    store.add("The user's cat is called Whiskerino", namespace="user:ana")
    store.add("The user's cat is called Rex", namespace="user:bob")
    model = RecordingModel([AIMessage("Whiskerino!")])
    agent = create_agent(model, [], system_prompt="You are helpful.",
                         middleware=[OpenKoiMemoryMiddleware(store, namespace="user:ana")])
    agent.invoke({"messages": [HumanMessage("What is my cat called?")]})
    prompt = model.system_prompts[0]
    assert prompt.startswith("You are helpful.\n\n## Memory")
    assert "- The user's cat is called Whiskerino" in prompt and "Rex" not in prompt


def test_workspace_files_and_corrections_join_the_system_prompt(file_store):
    workspace = file_store.memory_manager.workspace("user:ana")
    workspace.init()
    workspace.file("SOUL.md").write_text("# Soul\n\nAnswer like a patient librarian.\n", encoding="utf-8")
    model = RecordingModel([AIMessage("Sorry, Ana."), AIMessage("Hello again, Ana.")])
    agent = create_agent(model, [], checkpointer=InMemorySaver(),
                         middleware=[OpenKoiMemoryMiddleware(file_store, namespace="user:ana")])
    agent.invoke({"messages": [HumanMessage("Actually, my name is Ana.")]}, _thread("w"))
    assert "Answer like a patient librarian." in model.system_prompts[0]  # SOUL.md, read before the first call
    assert "The user's name is Ana." in workspace.read("learnings/corrections.md")  # found after the run
    agent.invoke({"messages": [HumanMessage("Who am I?")]}, _thread("w"))
    assert "Corrections from the user" in model.system_prompts[1] and "Ana" in model.system_prompts[1]


def test_memory_budget_and_block_system_prompts(store):
    for i in range(30):
        store.add(f"The user's project number {i} is called Apollo {i}", namespace="u")
    model = RecordingModel([AIMessage("ok")])
    base = SystemMessage([{"type": "text", "text": "Cached instructions.", "cache_control": {"type": "ephemeral"}}])
    agent = create_agent(model, [], system_prompt=base,
                         middleware=[OpenKoiMemoryMiddleware(store, namespace="u", memory_tokens=60)])
    agent.invoke({"messages": [HumanMessage("Which projects is the user on?")]})
    system = model.calls[0][0]
    assert system.content[0] == base.content[0]  # the caller's blocks are kept as they were
    added = system.content[1]["text"]
    assert added.startswith("## Memory") and "Apollo" in added
    assert count_tokens(added) <= 60


def test_without_memory_the_prompt_is_untouched(store):
    model = RecordingModel([AIMessage("ok"), AIMessage("ok")])
    agent = create_agent(model, [], system_prompt="Plain.", middleware=[OpenKoiMemoryMiddleware(store)])
    agent.invoke({"messages": [HumanMessage("hello there")]})
    store.add("The user likes jazz")
    off = create_agent(model, [], system_prompt="Plain.", middleware=[OpenKoiMemoryMiddleware(store, inject=False)])
    off.invoke({"messages": [HumanMessage("music the user likes")]})
    assert model.system_prompts == ["Plain.", "Plain."]


def test_the_transcript_is_stored_once_and_facts_after_the_run(store):
    model = RecordingModel([AIMessage("Nice to meet you."), AIMessage("Lisbon, you said.")])
    agent = create_agent(model, [], checkpointer=InMemorySaver(),
                         middleware=[OpenKoiMemoryMiddleware(store, namespace="user:priya")])
    agent.invoke({"messages": [HumanMessage("Hi, my name is Priya and I live in Lisbon.")]}, _thread("t-1"))
    facts = sorted(m.text for m in store.list(namespace="user:priya", kind="fact"))
    assert facts == ["The user lives in Lisbon.", "The user's name is Priya."]
    assert {m.session_id for m in store.list(namespace="user:priya", kind="fact")} == {chat_session("user:priya", "t-1")}
    agent.invoke({"messages": [HumanMessage("Where do I live?")]}, _thread("t-1"))
    stored = store.conversations.messages(chat_session("user:priya", "t-1"), namespace="user:priya")
    assert [(m.role, m.content) for m in stored] == [
        ("user", "Hi, my name is Priya and I live in Lisbon."), ("assistant", "Nice to meet you."),
        ("user", "Where do I live?"), ("assistant", "Lisbon, you said."),
    ]  # each message once, although the state was seen before every model call and after each run
    # the thread reads back as LangChain messages, the same ones the graph holds
    state = agent.get_state(_thread("t-1")).values["messages"]
    assert OpenKoiChatMessageHistory("t-1", store, namespace="user:priya").messages == state
    assert len(store.list(namespace="user:priya", kind="fact")) == 2  # the second run found nothing new


def test_compaction_rewrites_the_state_after_storing_facts_and_summary(store):
    replies = [AIMessage(f"Answer {i}: here is a fairly long reply about the topic you asked for.") for i in range(8)]
    model = RecordingModel(replies)
    middleware = OpenKoiMemoryMiddleware(store, namespace="u", context="fleet", window_tokens=260)
    agent = create_agent(model, [], system_prompt="Be brief.", checkpointer=InMemorySaver(), middleware=[middleware])
    agent.invoke({"messages": [HumanMessage("My dog is called Biscuit.")]}, _thread("long"))
    for i in range(7):
        agent.invoke({"messages": [HumanMessage(f"Tell me more about subject number {i}, please.")]}, _thread("long"))
    state = agent.get_state(_thread("long")).values["messages"]
    head = state[0]
    assert isinstance(head, SystemMessage) and head.text.startswith("[Compacted history]")
    assert head.additional_kwargs == {"lc_source": "openkoi.compaction"}
    assert len(state) < 16  # the checkpointed thread stays within the window
    assert store.memory_manager.compactions(chat_session("u", "long"), namespace="u")  # logged, the summary first
    assert "The user's dog is called Biscuit." in [m.text for m in store.list(namespace="u", kind="fact")]
    assert store.list(namespace="u", kind="summary")
    # the model saw the compacted list, and the summary only once (not again in the system prompt)
    last = model.calls[-1]
    assert last[1].text.startswith("[Compacted history]")
    assert "Summary of this conversation" not in last[0].text
    # the transcript keeps every message; the summary message is not part of it
    stored = store.conversations.messages(chat_session("u", "long"))
    assert len(stored) == 16 and not any(m.content.startswith("[Compacted history]") for m in stored)


def test_tool_failures_become_learnings_in_later_prompts(store):
    handled = _failing_tool(handled=True)
    model = RecordingModel([
        AIMessage("", tool_calls=[{"name": "fetch_weather", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"}]),
        AIMessage("The weather service is down."),
    ])
    agent = create_agent(model, [handled], middleware=[OpenKoiMemoryMiddleware(store, namespace="u")])
    result = agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]})
    assert [m for m in result["messages"] if isinstance(m, ToolMessage)][0].status == "error"
    learning = store.learnings.list(namespace="u")[0]
    assert learning.type.value == "AntiPattern" and "fetch_weather" in learning.content
    assert "timed out for Oslo" in learning.content and '"city": "Oslo"' in learning.content
    # the second model call already knows (the first had no memory to add, so no system prompt)
    first, second = model.calls
    assert not isinstance(first[0], SystemMessage)
    assert "fetch_weather" in second[0].text and "timed out" in second[0].text

    raising = _failing_tool(handled=False)
    model = RecordingModel([
        AIMessage("", tool_calls=[{"name": "fetch_weather", "args": {"city": "Rome"}, "id": "c2", "type": "tool_call"}]),
    ])
    agent = create_agent(model, [raising], middleware=[OpenKoiMemoryMiddleware(store, namespace="v")])
    with pytest.raises(ValueError, match="socket closed"):
        agent.invoke({"messages": [HumanMessage("Weather in Rome?")]})
    assert "socket closed" in store.learnings.list(namespace="v")[0].content  # recorded, then re-raised


@dataclass
class UserContext:
    user_id: str


def test_namespace_from_the_runtime_context(store):
    store.add("The user's favourite colour is teal", namespace="memories.ana.")
    model = RecordingModel([AIMessage("Teal."), AIMessage("No idea.")])
    middleware = OpenKoiMemoryMiddleware(store, namespace=lambda runtime: ("memories", runtime.context.user_id))
    agent = create_agent(model, [], middleware=[middleware], context_schema=UserContext)
    agent.invoke({"messages": [HumanMessage("What is my favourite colour?")]}, context=UserContext("ana"))
    agent.invoke({"messages": [HumanMessage("What is my favourite colour?")]}, context=UserContext("ben"))
    assert "teal" in model.system_prompts[0] and model.system_prompts[1:] == []
    with pytest.raises(TypeError, match="namespace"):
        middleware.remember([HumanMessage("x")], session_id="s")


def test_sessions_without_a_checkpointer(store):
    model = RecordingModel([AIMessage("one"), AIMessage("two"), AIMessage("three")])
    agent = create_agent(model, [], middleware=[OpenKoiMemoryMiddleware(store, namespace="u")])
    agent.invoke({"messages": [HumanMessage("first run")]})
    agent.invoke({"messages": [HumanMessage("second run")]})
    sessions = store.conversations.session_ids(namespace="u")
    assert len(sessions) == 2 and all(s.startswith(chat_session("u", "run-")) for s in sessions)
    fixed = create_agent(model, [], middleware=[OpenKoiMemoryMiddleware(store, namespace="w", session_id="desk")])
    fixed.invoke({"messages": [HumanMessage("third run")]})
    assert [m.content for m in OpenKoiChatMessageHistory("desk", store, namespace="w").messages] == ["third run", "three"]


async def test_async_agents_use_the_async_hooks(store):
    store.add("The user's cat is called Whiskerino", namespace="u")
    model = RecordingModel([AIMessage("Whiskerino.")])
    agent = create_agent(model, [], checkpointer=InMemorySaver(),
                         middleware=[OpenKoiMemoryMiddleware(store, namespace="u")])
    await agent.ainvoke({"messages": [HumanMessage("My dog is called Rex. What is my cat called?")]}, _thread("a"))
    assert "Whiskerino" in model.system_prompts[0]
    assert [m.content for m in store.conversations.messages(chat_session("u", "a"))][-1] == "Whiskerino."
    assert "The user's dog is called Rex." in [m.text for m in store.list(namespace="u", kind="fact")]


def test_end_conversation_and_switches(store):
    model = RecordingModel([AIMessage("Noted.")])
    middleware = OpenKoiMemoryMiddleware(store, namespace="u", extract_facts=False, compact=False)
    agent = create_agent(model, [], checkpointer=InMemorySaver(), middleware=[middleware])
    agent.invoke({"messages": [HumanMessage("I prefer window seats.")]}, _thread("trip"))
    assert store.list(namespace="u", kind="fact") == []  # extraction was off
    ended = middleware.end_conversation("trip")
    assert [f.text for f in ended.facts] == ["The user prefers window seats."] and ended.summary_id
    assert store.conversations.session(chat_session("u", "trip")).ended_at is not None


def test_bad_configuration(store):
    with pytest.raises(ValueError, match="unknown preset"):
        OpenKoiMemoryMiddleware(store, context="giant")
    with pytest.raises(ValueError, match="unknown preset"):  # checked at once, also for per-user namespaces
        OpenKoiMemoryMiddleware(store, context="giant", namespace=lambda runtime: "u")
    with pytest.raises(ValueError, match="window_tokens must be a positive"):
        OpenKoiMemoryMiddleware(store, context="fleet", window_tokens=0)
    with pytest.raises(ValueError, match="window_tokens applies to presets"):
        OpenKoiMemoryMiddleware(store, context=ContextPolicy(keep_last=2, split_ratio=None), window_tokens=10)
    with pytest.raises(ValueError, match="memory_tokens"):
        OpenKoiMemoryMiddleware(store, memory_tokens=-1)
    with pytest.raises(ValueError, match="session_id"):
        OpenKoiMemoryMiddleware(store, session_id=" ")
    with pytest.raises(TypeError, match="MemoryStore"):
        OpenKoiMemoryMiddleware("agent.db")


def test_tool_artifacts_that_are_not_json_do_not_stop_the_agent(store):
    from langchain_core.documents import Document
    from langchain_core.tools import tool

    @tool(response_format="content_and_artifact")
    def search_docs(query: str) -> tuple[str, dict]:
        """Search the handbook."""
        return "found one", {"docs": [Document("Deploy on Tuesdays")], "score": float("nan"), "raw": object()}

    model = RecordingModel([
        AIMessage("", tool_calls=[{"name": "search_docs", "args": {"query": "deploy"}, "id": "c1", "type": "tool_call"}]),
        AIMessage("Deploys are on Tuesdays."),
    ])
    agent = create_agent(model, [search_docs],  # no checkpointer: it could not serialise object() either
                         middleware=[OpenKoiMemoryMiddleware(store, namespace="u", session_id="docs")])
    agent.invoke({"messages": [HumanMessage("When do we deploy?")]})
    tool_message = OpenKoiChatMessageHistory("docs", store, namespace="u").messages[2]
    artifact = tool_message.artifact
    assert tool_message.content == "found one" and artifact["score"] is None
    assert artifact["docs"][0]["page_content"] == "Deploy on Tuesdays"  # pydantic objects as their dump
    assert artifact["raw"].startswith("<object object")

"""End to end: a langchain v1 agent remembers across a restart (seed 004's cat-name test).

Two sessions, each with fresh objects on the same file: an OpenKoiStore (the agent's
LangGraph store), the memory tools, a LangMem-style tool using ``get_store()``, the
SQLite checkpointer for thread state and, in the second test, OpenKoiMemoryMiddleware.
The fake chat model emits the tool calls a real model would.
"""

from __future__ import annotations

import hashlib
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool, ToolException, tool
from langgraph.config import get_store

from langchain_openkoi import (
    OpenKoiChatMessageHistory,
    OpenKoiMemoryMiddleware,
    OpenKoiSaver,
    OpenKoiStore,
    create_memory_tools,
)
from langchain_openkoi.tools import TOOL_NAMES
from shared_core import HashingEmbedder, MemoryStore

USER = ("memories", "alice")


class ScriptedChatModel(GenericFakeChatModel):
    """Replies with the scripted messages in order; tools are accepted and ignored."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


@tool
def remember_preference(content: str) -> str:
    """Save a preference of the user (LangMem-style: the graph's store, through get_store())."""
    key = hashlib.sha1(content.encode()).hexdigest()[:12]
    get_store().put(USER, key, {"content": content})
    return f"saved preference {key}"


@tool
def search_preferences(query: str) -> str:
    """Search the user's saved preferences."""
    return "\n".join(item.value["content"] for item in get_store().search(USER, query=query, limit=3))


def _call(name: str, args: dict, call_id: str) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _agent(path, script):
    store = OpenKoiStore(path)
    saver = OpenKoiSaver(store)
    tools = [*create_memory_tools(store, namespace=USER, include=TOOL_NAMES), remember_preference, search_preferences]
    model = ScriptedChatModel(messages=iter(script))
    agent = create_agent(model, tools, system_prompt="You remember things.", store=store, checkpointer=saver)
    return agent, store, saver


def _tool_results(result) -> dict[str, str]:
    return {m.name: m.content for m in result["messages"] if isinstance(m, ToolMessage)}


def test_memory_survives_a_restart(tmp_path):
    path = tmp_path / "agent.db"
    first_thread = {"configurable": {"thread_id": "session-1"}}

    agent, store, saver = _agent(path, [
        AIMessage("", tool_calls=[
            _call("memory_save", {"content": "The user's cat is called Whiskerino", "category": "pets"}, "c1"),
            _call("remember_preference", {"content": "Alice prefers oolong tea"}, "c2"),
        ]),
        AIMessage("Noted: Whiskerino, and oolong tea."),
    ])
    result = agent.invoke({"messages": [HumanMessage("My cat's name is Whiskerino. I like oolong tea.")]}, first_thread)
    results = _tool_results(result)
    assert results["memory_save"].startswith("Saved [id:") and results["memory_save"].endswith(" in pets")
    assert results["remember_preference"].startswith("saved preference")
    assert result["messages"][-1].content == "Noted: Whiskerino, and oolong tea."
    saver.close()
    store.close()

    # === chat reset: new process-like objects, a new thread ===
    agent, store, saver = _agent(path, [
        AIMessage("", tool_calls=[
            _call("memory_recall", {"query": "name of the user's cat"}, "c3"),
            _call("search_preferences", {"query": "tea"}, "c4"),
        ]),
        AIMessage("Your cat is Whiskerino and you like oolong tea."),
        AIMessage("", tool_calls=[_call("memory_reinforce", {"id": "placeholder"}, "c5")]),
        AIMessage("Glad it helped."),
    ])
    result = agent.invoke({"messages": [HumanMessage("What is my cat's name?")]}, {"configurable": {"thread_id": "s2"}})
    results = _tool_results(result)
    assert "Whiskerino" in results["memory_recall"] and "[id:" in results["memory_recall"]
    # every item of the namespace, ranked: the preference matches, the fact memory_save wrote is an item too
    assert results["search_preferences"].splitlines() == ["Alice prefers oolong tea",
                                                          "The user's cat is called Whiskerino"]
    assert result["messages"][-1].content == "Your cat is Whiskerino and you like oolong tea."

    # the model's tool errors come back as messages, not exceptions
    follow_up = agent.invoke({"messages": [HumanMessage("Thanks!")]}, {"configurable": {"thread_id": "s2"}})
    error = [m for m in follow_up["messages"] if isinstance(m, ToolMessage) and m.name == "memory_reinforce"][-1]
    assert error.status == "error" and "no memory with id 'placeholder'" in error.content

    # the first session's thread state is in the same file
    history = agent.get_state(first_thread).values["messages"]
    assert history[0].content.startswith("My cat's name is Whiskerino") and len(history) == 5
    assert store.list_namespaces() == [USER]
    saver.close()
    store.close()


class RecordingChatModel(ScriptedChatModel):
    """Also keeps the messages of every call (the system prompt the middleware built is the first)."""

    calls: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _weather(city: str) -> str:
    raise ToolException(f"weather service timed out for {city}")


weather = StructuredTool.from_function(_weather, name="fetch_weather", description="The weather in a city.",
                                       handle_tool_error=True)


def _memory_agent(path, script):
    store = OpenKoiStore(path)
    saver = OpenKoiSaver(store)
    model = RecordingChatModel(messages=iter(script))
    model.calls = []
    agent = create_agent(
        model, [*create_memory_tools(store, namespace=USER, include=TOOL_NAMES), weather], system_prompt="You remember things.",
        store=store, checkpointer=saver, middleware=[OpenKoiMemoryMiddleware(store, namespace=USER)],
    )
    return agent, model, store, saver


def test_the_middleware_remembers_across_a_restart(tmp_path):
    path = tmp_path / "agent.db"
    # the file records the hashing embedder: for the static one "The user's cat is called Whiskerino"
    # (saved by the model) and the extracted "The user's cat is Whiskerino." are near-duplicates of
    # one subject, so the second becomes the first's new version, and the sources checked below differ
    MemoryStore.open(path, embedder=HashingEmbedder()).close()

    # === run 1: the user tells things; the model saves one fact itself and hits a broken tool ===
    agent, model, store, saver = _memory_agent(path, [
        AIMessage("", tool_calls=[
            _call("memory_save", {"content": "The user's cat is called Whiskerino", "category": "pets"}, "c1"),
            _call("fetch_weather", {"city": "Lisbon"}, "c2"),
        ]),
        AIMessage("Noted, Priya. The weather service is down right now."),
    ])
    agent.invoke({"messages": [HumanMessage("Hi! My name is Priya and I live in Lisbon. My cat is Whiskerino. "
                                            "What's the weather?")]}, {"configurable": {"thread_id": "s1"}})
    core = store.memory_store
    facts = {m.text: m.source for m in core.list(namespace="memories.alice.", kind="fact")}
    assert facts["The user's name is Priya."] == "extraction"  # read from the conversation after the run
    assert facts["The user lives in Lisbon."] == "extraction"
    assert facts["The user's cat is called Whiskerino"] == "memory_save"  # the model's own tool call
    workspace = core.memory_manager.workspace("memories.alice.")
    assert "[memory_save] The user's cat is called Whiskerino" in workspace.read(workspace.daily_log())
    assert "weather service timed out" in workspace.read("learnings/errors.md")
    saver.close()
    store.close()

    # === restart: new objects on the same file, a new thread ===
    agent, model, store, saver = _memory_agent(path, [
        AIMessage("", tool_calls=[_call("memory_recall", {"query": "name of the user's cat"}, "c3")]),
        AIMessage("You are Priya from Lisbon, and your cat is Whiskerino."),
    ])
    result = agent.invoke({"messages": [HumanMessage("What's my name, and where do I live?")]},
                          {"configurable": {"thread_id": "s2"}})
    system = model.calls[0][0]
    assert isinstance(system, SystemMessage) and system.text.startswith("You remember things.\n\n")
    assert "- The user's name is Priya." in system.text  # told in run 1, injected in run 2
    assert "- The user lives in Lisbon." in system.text
    assert "fetch_weather" in system.text and "timed out" in system.text  # the learning from run 1's failure
    assert "Whiskerino" in _tool_results(result)["memory_recall"]
    # run 1's conversation is in the file too: the transcript, and the checkpointed thread
    transcript = OpenKoiChatMessageHistory("s1", store, namespace=USER).messages
    assert transcript == agent.get_state({"configurable": {"thread_id": "s1"}}).values["messages"]
    saver.close()
    store.close()

"""Isolation: a secret Alice told is never reachable by Bob through a LangChain or LangGraph door.

Each door is tried with namespace templates (LangChain's ``{user_id}``, LangMem's
``{langgraph_user_id}``, filled from the run's config or its runtime context) and with plain
per-user namespaces. Every check has its control: the same call as Alice finds the secret, so
an empty answer for Bob means isolation, not a search that finds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.store.base import InvalidNamespaceError

from langchain_openkoi import (
    OpenKoiChatMessageHistory,
    OpenKoiMemoryMiddleware,
    OpenKoiRetriever,
    OpenKoiStore,
    OpenKoiVectorStore,
    create_memory_tools,
)
from langchain_openkoi.tools import TOOL_NAMES
from shared_core.namespaces import NamespaceTemplateError

SECRET = "Alice's locker code is 4711"
TEMPLATES = [("memories", "{user_id}"), ("memories", "{langgraph_user_id}"), "user:{user_id}"]


def _config(user: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": f"thread-{user}"}}


def _namespace(template: Any, user: str) -> Any:
    """The namespace a plain (non-template) setup gives each user: what the template would fill to."""
    if isinstance(template, str):
        return template.replace("{user_id}", user)
    return tuple(part.replace("{user_id}", user).replace("{langgraph_user_id}", user) for part in template)


class ScriptedModel(GenericFakeChatModel):
    """Replies from a script and keeps each call's system prompt."""

    prompts: list = []

    def __init__(self, replies: list, **kwargs: Any) -> None:
        super().__init__(messages=iter(replies), **kwargs)
        self.prompts = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(messages[0].text if messages and isinstance(messages[0], SystemMessage) else "")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@dataclass
class UserContext:
    user_id: str


def _tool(tools: list, name: str):
    return next(t for t in tools if t.name == name)


@pytest.mark.parametrize("template", TEMPLATES, ids=["user_id", "langgraph_user_id", "string"])
def test_memory_tools_fill_the_template_per_call(store, template):
    tools = create_memory_tools(store, namespace=template, include=TOOL_NAMES)
    saved = _tool(tools, "memory_save").invoke({"content": SECRET}, config=_config("alice"))
    assert saved.startswith("Saved [id:")
    assert store.namespaces().keys() == {_core(template, "alice")}  # never the template literally
    for name, args in [("memory_search", {"query": "locker code"}), ("memory_recall", {"query": "locker code"}),
                       ("memory_query", {"query": "locker code"})]:
        assert "4711" in _tool(tools, name).invoke(args, config=_config("alice")), name  # the control
        assert "4711" not in _tool(tools, name).invoke(args, config=_config("bob")), name
    mid = saved.split("[id:")[1].split("]")[0]
    for name in ("memory_reinforce", "memory_demote"):
        message = _tool(tools, name).invoke(
            {"type": "tool_call", "name": name, "args": {"id": mid}, "id": "c1"}, config=_config("bob"))
        assert message.status == "error" and "no memory" in message.content  # Bob cannot touch it by id
    assert store.get(mid).score == 0
    # a run without the value is refused with what to pass, and stores nothing
    refused = _tool(tools, "memory_save").invoke(
        {"type": "tool_call", "name": "memory_save", "args": {"content": "orphan"}, "id": "c2"})
    assert refused.status == "error" and "user_id" in refused.content and "configurable" in refused.content
    assert store.count(namespace=None, kind="fact", namespace_prefix="") == 1


def _core(template: Any, user: str) -> str:
    from shared_core.namespaces import as_namespace

    return as_namespace(_namespace(template, user))


@pytest.mark.parametrize("plain", [False, True], ids=["template", "plain"])
def test_an_agent_with_tools_and_middleware_keeps_users_apart(store, plain):
    """The agent's tools write Alice's secret; Bob's run sees it neither in the prompt nor through a tool."""
    template = ("memories", "{user_id}")

    def agent_for(user: str, replies: list):
        namespace = _namespace(template, user) if plain else template
        model = ScriptedModel(replies)
        agent = create_agent(model, create_memory_tools(store, namespace=namespace),
                             middleware=[OpenKoiMemoryMiddleware(store, namespace=namespace)],
                             context_schema=UserContext)
        return agent, model

    agent, _ = agent_for("alice", [
        AIMessage("", tool_calls=[{"name": "memory_save", "args": {"content": SECRET}, "id": "s1"}]),
        AIMessage("Saved."),
    ])
    agent.invoke({"messages": [HumanMessage("Remember my locker code 4711")]}, _config("alice"),
                 context=UserContext("alice"))

    def ask(user: str) -> tuple[str, str]:
        agent, model = agent_for(user, [
            AIMessage("", tool_calls=[{"name": "memory_search", "args": {"query": "locker code"}, "id": "q1"}]),
            AIMessage("Done."),
        ])
        result = agent.invoke({"messages": [HumanMessage("What is my locker code?")]},
                              {"configurable": {"thread_id": f"ask-{user}"}}, context=UserContext(user))
        found = next(m.content for m in result["messages"] if isinstance(m, ToolMessage))
        return model.prompts[0], found

    prompt, found = ask("alice")
    assert "4711" in prompt and "4711" in found  # the control: Alice's own run sees it
    prompt, found = ask("bob")
    assert "4711" not in prompt and "4711" not in found
    assert not any("{" in name for name in store.namespaces())


def test_the_langgraph_store_never_takes_a_template_literally(store):
    graph = OpenKoiStore(store=store)
    graph.put(("memories", "alice"), "locker", {"content": SECRET})
    assert graph.search(("memories", "alice"), query="locker code")[0].key == "locker"  # the control
    assert all("4711" not in str(item.value) for item in graph.search(("memories", "bob"), query="locker code"))
    assert graph.get(("memories", "bob"), "locker") is None
    for call in (lambda: graph.put(("memories", "{user_id}"), "k", {"content": "x"}),
                 lambda: graph.search(("memories", "{langgraph_user_id}"), query="locker"),
                 lambda: graph.get(("memories", "{user_id}"), "locker")):
        with pytest.raises(InvalidNamespaceError, match="template"):
            call()
    # the fact a tool saved for Alice is an item of her namespace, and only of hers
    tools = create_memory_tools(graph, namespace=("memories", "{user_id}"))
    _tool(tools, "memory_save").invoke({"content": "Alice's bike lock code is 1234"}, config=_config("alice"))
    assert "1234" in str([i.value for i in graph.search(("memories", "alice"), query="bike lock code")])
    assert "1234" not in str([i.value for i in graph.search(("memories", "bob"), query="bike lock code")])


@pytest.mark.parametrize("template", TEMPLATES, ids=["user_id", "langgraph_user_id", "string"])
def test_the_retriever_fills_the_template_from_the_run(store, template):
    store.add(SECRET, namespace=_core(template, "alice"))
    retriever = OpenKoiRetriever(store=store, namespace=template, k=5)
    assert "4711" in retriever.invoke("locker code", _config("alice"))[0].page_content  # the control
    assert all("4711" not in d.page_content for d in retriever.invoke("locker code", _config("bob")))
    with pytest.raises(NamespaceTemplateError, match="user_id"):
        retriever.invoke("locker code")
    # inside a chain, the run's config reaches it too
    chain = RunnableLambda(lambda q: retriever.invoke(q))
    assert chain.invoke("locker code", _config("alice"))[0].page_content == SECRET
    assert chain.invoke("locker code", _config("bob")) == []


def test_the_retriever_reads_a_plain_tuple_as_one_namespace(store):
    store.add(SECRET, namespace="memories.alice.")
    store.add("Bob's locker code is 1111", namespace="bob")
    alice = OpenKoiRetriever(store=store, namespace=("memories", "alice"), k=5)
    assert [d.page_content for d in alice.invoke("locker code")] == [SECRET]
    bob = OpenKoiRetriever(store=store, namespace=("memories", "bob"), k=5)
    assert bob.invoke("locker code") == []  # ("memories", "bob") is not the two namespaces "memories" and "bob"


def test_the_vector_store_fills_the_template_inside_a_run(store):
    vs = OpenKoiVectorStore(store=store, namespace=("docs", "{user_id}"))
    RunnableLambda(lambda text: vs.add_texts([text])).invoke(SECRET, _config("alice"))
    search = RunnableLambda(lambda q: vs.similarity_search(q, k=5))
    assert [d.page_content for d in search.invoke("locker code", _config("alice"))] == [SECRET]  # the control
    assert search.invoke("locker code", _config("bob")) == []
    with pytest.raises(NamespaceTemplateError, match="user_id"):
        vs.similarity_search("locker code")
    assert store.namespaces().keys() == {"docs.alice."}


def test_two_users_histories_under_one_session_id(store):
    alice = OpenKoiChatMessageHistory("chat_history", store, namespace=("chats", "alice"))
    bob = OpenKoiChatMessageHistory("chat_history", store, namespace=("chats", "bob"))
    alice.add_messages([HumanMessage(SECRET)])
    bob.add_messages([HumanMessage("Bob says hi")])  # never fails: Bob's key is his own session
    assert [m.content for m in alice.messages] == [SECRET]
    assert [m.content for m in bob.messages] == ["Bob says hi"]
    # Bob's own message may come back as a weak match by meaning; Alice's never does
    assert all(SECRET not in hit.text for hit in store.search("locker code", namespace="chats.bob.", kind="message"))
    with pytest.raises(NamespaceTemplateError, match="history_factory_config"):
        OpenKoiChatMessageHistory("chat_history", store, namespace=("chats", "{user_id}"))
    inside = RunnableLambda(lambda _: OpenKoiChatMessageHistory("chat_history", store, namespace=("chats", "{user_id}"))
                            .messages)
    assert [m.content for m in inside.invoke(None, _config("bob"))] == ["Bob says hi"]


def test_two_users_middleware_threads_under_one_thread_id(store):
    """Two users' agents that both use thread id "1" keep their own transcripts, and neither fails."""
    for user, said in [("alice", SECRET), ("bob", "My bike is blue")]:
        model = ScriptedModel([AIMessage("Noted.")])
        agent = create_agent(model, [], middleware=[OpenKoiMemoryMiddleware(store, namespace=("memories", user))])
        agent.invoke({"messages": [HumanMessage(said)]}, {"configurable": {"thread_id": "1"}})
    bob = OpenKoiChatMessageHistory("1", store, namespace=("memories", "bob"))
    assert [m.content for m in bob.messages] == ["My bike is blue", "Noted."]
    assert "4711" not in str(store.search("locker code 4711", namespace="memories.bob.", kind=None))

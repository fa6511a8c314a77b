"""OpenKoiChatMessageHistory: every message type round-trips exactly, through store.conversations."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_openkoi import OpenKoiChatMessageHistory, OpenKoiStore
from shared_core import MemoryStore
from shared_core.chat_keys import session_id as chat_session


def every_kind_of_message() -> list:
    return [
        SystemMessage("You are terse.", id="sys-1"),
        HumanMessage("My cat is called Miso.", id="h-1", name="priya", additional_kwargs={"lang": "en"}),
        HumanMessage([{"type": "text", "text": "What is this?"},
                      {"type": "image", "url": "https://example.org/cat.png", "mime_type": "image/png"}]),
        AIMessage(
            "", id="run-1", name="assistant",
            tool_calls=[{"name": "lookup", "args": {"q": "Miso", "n": [1, 2]}, "id": "call-1", "type": "tool_call"}],
            invalid_tool_calls=[{"name": "broken", "args": "{not json", "id": "call-2", "error": "bad JSON",
                                 "type": "invalid_tool_call"}],
            usage_metadata={"input_tokens": 12, "output_tokens": 3, "total_tokens": 15,
                            "input_token_details": {"cache_read": 4}},
            response_metadata={"model_name": "fake-1", "finish_reason": "tool_calls", "logprobs": None},
            additional_kwargs={"refusal": None, "nested": {"a": [1, 2.5, True]}},
        ),
        ToolMessage("Miso is a cat", tool_call_id="call-1", name="lookup", artifact={"rows": [1, 2]}, id="t-1"),
        ToolMessage("lookup failed", tool_call_id="call-2", status="error"),
        FunctionMessage('{"ok": true}', name="legacy_fn"),
        ChatMessage("Looks fine to me.", role="critic"),
        AIMessageChunk("partial", id="chunk-1"),
        HumanMessageChunk("typing"),
        AIMessage([{"type": "text", "text": "Here you go."}, {"type": "reasoning", "reasoning": "thought"}]),
        HumanMessage(""),
        HumanMessage([]),
    ]


def test_every_message_type_round_trips_exactly(store):
    history = OpenKoiChatMessageHistory("chat-1", store)
    original = every_kind_of_message()
    history.add_messages(original)
    back = history.messages
    assert back == original
    assert [type(m) for m in back] == [type(m) for m in original]
    # and after reopening the file: nothing lived only in this process
    assert OpenKoiChatMessageHistory("chat-1", store).messages == original


def test_roles_and_core_fields_are_readable_by_others(store):
    OpenKoiChatMessageHistory("chat-1", store).add_messages(every_kind_of_message())
    stored = store.conversations.messages(chat_session("default", "chat-1"))  # the key, in its namespace
    assert [m.role for m in stored] == ["system", "user", "user", "assistant", "tool", "tool", "function", "critic",
                                        "assistant", "user", "assistant", "user", "user"]
    call = stored[3]
    assert call.tool_calls == [{"name": "lookup", "args": {"q": "Miso", "n": [1, 2]}, "id": "call-1",
                                "type": "tool_call"}]
    assert call.additional_kwargs == {"refusal": None, "nested": {"a": [1, 2.5, True]}}
    assert stored[4].tool_call_id == "call-1" and stored[4].name == "lookup"
    assert stored[1].content == "My cat is called Miso." and stored[2].content == "What is this?"
    # LangChain's own fields stay out of the embedding document (metadata keys starting with "__")
    assert "fake-1" not in store.conversations.embedding_document(call)
    hits = store.search("Miso cat", kind="message")
    assert {h.memory.owner_id for h in hits} >= {stored[1].message_id, stored[4].message_id}


def test_messages_written_by_other_frameworks_read_as_langchain_messages(store):
    convs = store.conversations
    convs.append("mixed", "user", "hi")
    convs.append("mixed", "assistant", "",
                 tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}])
    convs.append("mixed", "tool", "done", tool_call_id="c1", name="f")
    convs.append("mixed", "developer", "be careful")
    convs.append("mixed", "narrator", "meanwhile", additional_kwargs={"scene": 2})
    convs.append("mixed", "assistant", [{"block_type": "text", "text": "from LlamaIndex"}])
    got = OpenKoiChatMessageHistory("mixed", store).messages
    assert [type(m).__name__ for m in got] == ["HumanMessage", "AIMessage", "ToolMessage", "SystemMessage",
                                               "ChatMessage", "AIMessage"]
    assert got[1].tool_calls == [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]
    assert got[2].tool_call_id == "c1" and got[4].role == "narrator" and got[4].additional_kwargs == {"scene": 2}
    assert got[5].content == "from LlamaIndex"
    assert got[0].id == convs.messages("mixed")[0].message_id


def test_add_messages_is_one_transaction(file_store, monkeypatch):
    history = OpenKoiChatMessageHistory("chat-1", file_store)
    history.add_messages([HumanMessage("first")])
    memories = file_store.kernel.memories
    real_write = memories.write
    calls = []

    def failing_write(item, **kwargs):
        calls.append(item)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real_write(item, **kwargs)

    monkeypatch.setattr(memories, "write", failing_write)
    with pytest.raises(RuntimeError, match="disk full"):
        history.add_messages([HumanMessage("second"), AIMessage("third")])
    monkeypatch.undo()
    assert [m.content for m in history.messages] == ["first"]  # neither of the two
    assert len(file_store.conversations.transcript(history.stored_session_id)) == 1


def test_namespaces_and_clear(store):
    alice = OpenKoiChatMessageHistory("shared-id", store, namespace=("users", "alice"))
    alice.add_message(HumanMessage("hello from alice"))
    assert store.conversations.session(alice.stored_session_id).namespace == "users.alice."
    bob = OpenKoiChatMessageHistory("shared-id", store, namespace="user:bob")
    assert bob.messages == []  # the key is per namespace: Bob's "shared-id" is a session of his own ...
    bob.add_message(HumanMessage("hello from bob"))
    assert (alice.stored_session_id, bob.stored_session_id) == ("users.alice./shared-id", "user:bob/shared-id")
    assert [m.content for m in alice.messages] == ["hello from alice"]  # ... and never meets Alice's
    assert [m.content for m in bob.messages] == ["hello from bob"]
    alice.clear()
    assert alice.messages == [] and store.search("alice", kind="message", namespace="users.alice.") == []
    assert [m.content for m in bob.messages] == ["hello from bob"]
    alice.add_message(AIMessage("again"))
    assert [m.content for m in alice.messages] == ["again"]


async def test_async_twins(store):
    history = OpenKoiChatMessageHistory("async-chat", store)
    await history.aadd_messages([HumanMessage("one"), AIMessage("two")])
    assert [m.content for m in await history.aget_messages()] == ["one", "two"]
    await history.aclear()
    assert await history.aget_messages() == []


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_works_under_runnable_with_message_history(store):
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are a helpful assistant."),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ])
    seen = []

    class Recording(FakeListChatModel):
        def _call(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(messages)
            return super()._call(messages, stop=stop, run_manager=run_manager, **kwargs)

    chain = RunnableWithMessageHistory(
        prompt | Recording(responses=["Hi Priya!", "Your name is Priya."]),
        lambda session_id: OpenKoiChatMessageHistory(session_id, store, namespace="user:priya"),
        input_messages_key="question", history_messages_key="history",
    )
    config = {"configurable": {"session_id": "conv-1"}}
    assert chain.invoke({"question": "I'm Priya."}, config).content == "Hi Priya!"
    assert chain.invoke({"question": "What's my name?"}, config).content == "Your name is Priya."
    assert [m.content for m in seen[1][1:3]] == ["I'm Priya.", "Hi Priya!"]  # the history went into the prompt
    stored = store.conversations.messages(chat_session("user:priya", "conv-1"), namespace="user:priya")
    assert [(m.role, m.content) for m in stored] == [("user", "I'm Priya."), ("assistant", "Hi Priya!"),
                                                     ("user", "What's my name?"),
                                                     ("assistant", "Your name is Priya.")]


def test_a_window_compacts_after_storing_the_facts(store):
    history = OpenKoiChatMessageHistory("long", store, namespace="u", context="fleet", window_tokens=300)
    history.add_messages([SystemMessage("You are brief."), HumanMessage("My cat is called Miso.")])
    views = []
    for i in range(12):
        history.add_messages([HumanMessage(f"Tell me about topic number {i} please."),
                              AIMessage(f"Topic {i} is a long answer with many words in it.")])
        views.append(history.messages)
    compacted = [i for i, view in enumerate(views) if view[1].content.startswith("[Compacted history]")]
    assert compacted, "the conversation never reached the window"
    view = views[compacted[0]]
    assert view[0] == SystemMessage("You are brief.")  # the leading system prompt stays in front
    assert view[1].additional_kwargs == {"lc_source": "openkoi.compaction"}
    assert "The user's cat is called Miso." in view[1].content
    k = compacted[0]
    assert view[2:] == [HumanMessage(f"Tell me about topic number {k - 1} please."),  # fleet keeps the last 4
                        AIMessage(f"Topic {k - 1} is a long answer with many words in it."),
                        HumanMessage(f"Tell me about topic number {k} please."),
                        AIMessage(f"Topic {k} is a long answer with many words in it.")]
    # write-then-compact: the fact is in the database, the summary is a memory of the session
    assert store.memory_manager.recall_facts("cat", namespace="u").hits[0].text == "The user's cat is called Miso."
    assert store.list(namespace="u", kind="summary")
    # nothing was deleted: the session still holds every message; only the window moved
    convs, sid = store.conversations, history.stored_session_id
    assert convs.count(sid) == 26 and convs.count(sid, active=False) > 0
    # the latest view folds the earlier summary into the next one
    last = views[-1]
    assert last[1].content.startswith("[Compacted history]") and "Miso" in last[1].content
    assert len(last) <= 2 + 4 + 4
    history.clear()
    assert history.messages == []
    history.add_message(HumanMessage("fresh start"))
    assert [m.content for m in history.messages] == ["fresh start"]  # no summary of the cleared conversation


def test_nothing_leaves_the_window_when_storing_facts_fails(store, monkeypatch):
    history = OpenKoiChatMessageHistory("long", store, context="fleet", window_tokens=200)
    history.add_messages([HumanMessage(f"My note number {i} is about gardening and tomatoes.") for i in range(20)])

    def broken(*args, **kwargs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(type(store.memory_manager.facts), "store_facts", broken)
    with pytest.raises(RuntimeError, match="locked"):
        _ = history.messages
    assert store.conversations.count(history.stored_session_id, active=True) == 20


def test_bad_input_is_refused_clearly(store, tmp_path):
    history = OpenKoiChatMessageHistory("chat", store)
    with pytest.raises(ValueError, match="not JSON serializable.*convert that value"):
        history.add_message(ToolMessage("r", tool_call_id="c", artifact=object()))
    with pytest.raises(ValueError, match="RemoveMessage"):
        history.add_message(RemoveMessage(id="x"))
    with pytest.raises(TypeError, match="LangChain message"):
        history.add_messages(["just text"])
    assert history.messages == []
    with pytest.raises(ValueError, match="session_id"):
        OpenKoiChatMessageHistory("", store)
    with pytest.raises(ValueError, match="window_tokens applies"):
        OpenKoiChatMessageHistory("chat", store, window_tokens=1000)
    with pytest.raises(ValueError, match="unknown preset"):
        OpenKoiChatMessageHistory("chat", store, context="huge")
    with OpenKoiChatMessageHistory("chat", path=tmp_path / "h.db") as owned:
        owned.add_message(HumanMessage("kept"))
    with MemoryStore.open(tmp_path / "h.db") as reopened:
        assert [m.content for m in OpenKoiChatMessageHistory("chat", reopened).messages] == ["kept"]
    graph = OpenKoiStore(store=store)  # any openkoi adapter stands for its store
    assert OpenKoiChatMessageHistory("chat", graph).memory_store is store

"""OpenKoiChatStore (BaseChatStore): round trips, the list operations, memory buffers, persistence."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import (
    AudioBlock,
    CacheControl,
    CachePoint,
    ChatMessage,
    CitableBlock,
    CitationBlock,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    VideoBlock,
)
from llama_index.core.bridge.pydantic import BaseModel
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore

from llama_index_openkoi import OpenKoiChatStore


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int


def every_kind_of_message() -> list[ChatMessage]:
    """One message per shape LlamaIndex gives a ChatMessage (blocks, kwargs, roles)."""
    return [
        ChatMessage(role=MessageRole.SYSTEM, content="You are a careful assistant."),
        ChatMessage(role=MessageRole.USER, content="What is in this picture and this file?",
                    additional_kwargs={"session_id": "s-1", "nested": {"list": [1, 2.5, None, True], "s": "ü"}}),
        ChatMessage(role=MessageRole.USER, blocks=[
            TextBlock(text="Describe these:"),
            ImageBlock(url="https://img.example/cat.png", detail="high"),
            ImageBlock(image=b"\x89PNG\r\n\x1a\n fake png bytes", image_mimetype="image/png"),
            AudioBlock(audio=b"RIFF fake wav", format="wav"),
            DocumentBlock(data=b"%PDF-1.4 fake", title="report.pdf", document_mimetype="application/pdf"),
            VideoBlock(url="https://video.example/clip.mp4", fps=24),
            VideoBlock(video=b"\x00\x00\x00 fake mp4", video_mimetype="video/mp4"),
            TextBlock(text="Thanks!"),
        ]),
        ChatMessage(role=MessageRole.ASSISTANT, blocks=[
            ThinkingBlock(content="The user wants captions.", num_tokens=5),
            ToolCallBlock(tool_call_id="call_1", tool_name="caption", tool_kwargs={"n": 2}),
        ]),
        ChatMessage(role=MessageRole.ASSISTANT, content="",
                    additional_kwargs={"tool_calls": [{"id": "call_2", "type": "function",
                                                       "function": {"name": "lookup", "arguments": "{\"q\": 1}"}}]}),
        ChatMessage(role=MessageRole.TOOL, content="A cat on a sofa.",
                    additional_kwargs={"tool_call_id": "call_1", "name": "caption"}),
        ChatMessage(role=MessageRole.ASSISTANT, blocks=[
            CitableBlock(title="Wiki", source="https://wiki.example/cat", content=[TextBlock(text="cats purr")]),
            CitationBlock(cited_content=TextBlock(text="cats purr"), source="https://wiki.example/cat",
                          title="Wiki", additional_location_info={"page": 2}),
            CachePoint(cache_control=CacheControl(type="ephemeral")),
            TextBlock(text="It is a cat (a purring one)."),
        ], additional_kwargs={"usage": Usage(prompt_tokens=3, completion_tokens=4)}),
        ChatMessage(role=MessageRole.ASSISTANT, content=None),
        ChatMessage(role=MessageRole.DEVELOPER, content="be brief"),
        ChatMessage(role=MessageRole.CHATBOT, content="a"),
        ChatMessage(role=MessageRole.MODEL, content="b"),
        ChatMessage(role=MessageRole.FUNCTION, content="c"),
    ]


def as_stored(message: ChatMessage) -> ChatMessage:
    """What any JSON chat store gives back: pydantic objects in additional_kwargs become dicts."""
    return ChatMessage.model_validate(message.model_dump(mode="json"))


@pytest.fixture
def chat_store(store):
    return OpenKoiChatStore(store)


def test_every_block_and_kwarg_round_trips(chat_store):
    messages = every_kind_of_message()
    for message in messages:
        chat_store.add_message("chat", message)
    assert chat_store.get_messages("chat") == [as_stored(m) for m in messages]
    chat_store.set_messages("again", messages)
    assert chat_store.get_messages("again") == [as_stored(m) for m in messages]
    # the usage object came back as the dict LlamaIndex's own JSON stores keep
    assert chat_store.get_messages("chat")[6].additional_kwargs["usage"] == {"prompt_tokens": 3, "completion_tokens": 4}


def test_messages_live_in_the_core(store, chat_store):
    chat_store.add_message("chat", ChatMessage(role="user", content="The staging database lives in Oslo"))
    chat_store.add_message("chat", ChatMessage(role="assistant", blocks=[
        TextBlock(text="Noted."), ImageBlock(url="https://img.example/oslo.png")]))
    chat_store.add_message("chat", ChatMessage(role="tool", content="ok", additional_kwargs={"tool_call_id": "c9"}))
    assert chat_store.session_id("chat") == "default/chat"  # keys are scoped by namespace
    stored = store.conversations.messages(chat_store.session_id("chat"))
    assert [m.role for m in stored] == ["user", "assistant", "tool"]
    assert stored[0].raw_content == "The staging database lives in Oslo"  # a lone text block is plain text
    assert stored[1].content == "Noted." and stored[1].content_blocks[1]["url"] == "https://img.example/oslo.png"
    assert stored[2].tool_call_id == "c9"
    assert store.conversations.embedding_document(stored[1]).splitlines()[3] == "Media: https://img.example/oslo.png"
    hits = store.search("staging database Oslo", kind="message")
    assert hits and hits[0].memory.owner_id == stored[0].message_id


def test_tool_calls_are_searchable_and_readable_by_other_frameworks(store, chat_store):
    chat_store.add_message("chat", ChatMessage(role="assistant", blocks=[
        ToolCallBlock(tool_call_id="call_7", tool_name="search_flights", tool_kwargs={"to": "LIS"})]))
    (stored,) = store.conversations.messages(chat_store.session_id("chat"))
    assert stored.tool_calls == [{"name": "search_flights", "args": {"to": "LIS"}, "id": "call_7"}]
    assert "msg:" + stored.message_id in store.search("search_flights LIS", kind="message").ids
    # read back, the ToolCallBlock is there and additional_kwargs gained nothing
    (message,) = chat_store.get_messages("chat")
    assert message.additional_kwargs == {} and isinstance(message.blocks[0], ToolCallBlock)


def test_messages_written_by_other_frameworks_read_as_chat_messages(store, chat_store):
    convs = store.conversations
    convs.append("shared", "user", [{"type": "text", "text": "What is this?"},
                                    {"type": "image_url", "image_url": {"url": "https://img.example/a.png"}}])
    convs.append("shared", "assistant", "", tool_calls=[{"name": "look", "args": {}, "id": "c1"}])
    convs.append("shared", "tool", "a cat", tool_call_id="c1", name="look")
    convs.append("shared", "human", "hi")
    user, assistant, tool, human = chat_store.get_messages("shared")
    assert user.blocks[0] == TextBlock(text="What is this?") and str(user.blocks[1].url) == "https://img.example/a.png"
    assert assistant.additional_kwargs == {"tool_calls": [{"name": "look", "args": {}, "id": "c1"}]}
    assert tool.additional_kwargs == {"tool_call_id": "c1", "name": "look"} and tool.content == "a cat"
    assert human.role == MessageRole.USER
    convs.append("odd", "critic", "too long")
    with pytest.raises(ValueError, match="role 'critic'.*store.conversations"):
        chat_store.get_messages("odd")


def test_list_operations(chat_store):
    a, b, c = (ChatMessage(role="user", content=t) for t in "abc")
    assert chat_store.get_messages("k") == [] and chat_store.get_keys() == []
    assert chat_store.delete_messages("k") is None
    assert chat_store.delete_last_message("k") is None and chat_store.delete_message("k", 0) is None
    chat_store.add_message("k", a)
    chat_store.add_message("k", c)
    chat_store.add_message("k", b, idx=1)  # insert, as SimpleChatStore does
    chat_store.add_message("k", ChatMessage(role="system", content="first"), idx=0)
    assert [m.content for m in chat_store.get_messages("k")] == ["first", "a", "b", "c"]
    assert chat_store.delete_last_message("k").content == "c"
    chat_store.set_messages("other", [c])
    assert chat_store.get_keys() == ["k", "other"]
    assert [m.content for m in chat_store.delete_messages("k")] == ["first", "a", "b"]
    assert chat_store.get_messages("k") == [] and chat_store.get_keys() == ["other"]
    chat_store.set_messages("other", [])
    assert chat_store.get_keys() == []
    with pytest.raises(TypeError, match="ChatMessage"):
        chat_store.add_message("k", {"role": "user", "content": "x"})


@pytest.mark.parametrize("idx", [0, 1, 3, 4, -1, -2, -5, 5, 9])
def test_delete_message_takes_a_list_position_like_simple_chat_store(chat_store, idx):
    messages = [ChatMessage(role="user", content=str(i)) for i in range(5)]
    simple = SimpleChatStore()
    simple.set_messages("k", list(messages))
    chat_store.set_messages("k", messages)
    try:
        expected = simple.delete_message("k", idx)
    except IndexError:  # list.pop(-6) and below; we answer None, as for positions past the end
        expected = None
    assert chat_store.delete_message("k", idx) == expected
    assert [m.content for m in chat_store.get_messages("k")] == [m.content for m in simple.get_messages("k")]


async def test_async_twins(chat_store):
    await chat_store.aset_messages("k", [ChatMessage(role="user", content="a")])
    await chat_store.async_add_message("k", ChatMessage(role="assistant", content="b"))
    await chat_store.async_add_message("k", ChatMessage(role="system", content="s"), 0)
    assert [m.content for m in await chat_store.aget_messages("k")] == ["s", "a", "b"]
    assert (await chat_store.adelete_message("k", 0)).content == "s"
    assert (await chat_store.adelete_last_message("k")).content == "b"
    assert await chat_store.aget_keys() == ["k"]
    assert [m.content for m in await chat_store.adelete_messages("k")] == ["a"]
    assert await chat_store.aget_keys() == []


def test_namespaces_keep_keys_apart(store):
    alice = OpenKoiChatStore(store, namespace="user:alice")
    bob = OpenKoiChatStore(store, namespace="user:bob")
    alice.add_message("chat-a", ChatMessage(role="user", content="I am Alice"))
    bob.add_message("chat-b", ChatMessage(role="user", content="I am Bob"))
    assert alice.get_keys() == ["chat-a"] and bob.get_keys() == ["chat-b"]
    assert bob.get_messages("chat-a") == [] and bob.delete_messages("chat-a") is None
    bob.add_message("chat-a", ChatMessage(role="user", content="Bob's own chat-a"))  # his key, his session
    assert [m.content for m in alice.get_messages("chat-a")] == ["I am Alice"]
    assert [m.content for m in bob.get_messages("chat-a")] == ["Bob's own chat-a"]
    assert bob.get_keys() == ["chat-a", "chat-b"]
    store.erase_namespace("user:alice")
    assert alice.get_keys() == [] and bob.get_keys() == ["chat-a", "chat-b"]


def test_two_users_default_chat_memory_buffers_work_side_by_side(store):
    """Issue 21: the second user's buffer failed with "session 'chat_history' belongs to namespace 'user:ann'"."""
    ann = ChatMemoryBuffer.from_defaults(chat_store=OpenKoiChatStore(store, namespace="user:ann"))
    bob = ChatMemoryBuffer.from_defaults(chat_store=OpenKoiChatStore(store, namespace="user:bob"))
    ann.put(ChatMessage(role="user", content="I am Ann"))
    bob.put(ChatMessage(role="user", content="I am Bob"))
    assert [m.content for m in ann.get_all()] == ["I am Ann"]
    assert [m.content for m in bob.get_all()] == ["I am Bob"]
    assert ann.chat_store.get_keys() == bob.chat_store.get_keys() == ["chat_history"]
    assert ann.chat_store.session_id("chat_history") == "user:ann/chat_history"


def test_a_session_another_door_wrote_reads_under_its_plain_key(store):
    store.conversations.append("trip", "user", "Book the 08:15 ferry", namespace="user:ann")
    ann = OpenKoiChatStore(store, namespace="user:ann")
    assert ann.session_id("trip") == "trip" and ann.get_keys() == ["trip"]
    ann.add_message("trip", ChatMessage(role="assistant", content="Booked."))
    assert [m.content for m in store.conversations.messages("trip")] == ["Book the 08:15 ferry", "Booked."]
    bob = OpenKoiChatStore(store, namespace="user:bob")
    assert bob.get_messages("trip") == [] and bob.session_id("trip") == "user:bob/trip"


def test_chat_memory_buffer_persists_across_processes(tmp_path):
    path = tmp_path / "chat.db"
    first = OpenKoiChatStore.from_path(path)
    memory = ChatMemoryBuffer.from_defaults(chat_store=first, chat_store_key="user-1", token_limit=40)
    memory.put(ChatMessage(role="user", content="My name is Priya and I live in Lisbon."))
    memory.put(ChatMessage(role="assistant", content="Hello Priya!"))
    for i in range(6):
        memory.put(ChatMessage(role="user", content=f"Filler message number {i} with several words in it."))
    assert len(memory.get_all()) == 8
    window = memory.get()
    assert 0 < len(window) < 8 and window[-1].content.startswith("Filler message number 5")  # the token window
    first.close()

    second = OpenKoiChatStore.from_path(path)
    again = ChatMemoryBuffer.from_defaults(chat_store=second, chat_store_key="user-1", token_limit=40)
    assert [m.content for m in again.get_all()][:2] == ["My name is Priya and I live in Lisbon.", "Hello Priya!"]
    again.reset()
    assert again.get_all() == [] and second.get_keys() == []
    second.close()


def test_chat_summary_memory_buffer(chat_store):
    memory = ChatSummaryMemoryBuffer.from_defaults(chat_store=chat_store, chat_store_key="k", llm=MockLLM(),
                                                   token_limit=30)
    for i in range(8):
        memory.put(ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"Turn {i}: " + "words " * 8))
    history = memory.get()
    assert history[0].role == MessageRole.SYSTEM  # the older turns, summarised by the (mock) LLM
    assert chat_store.get_messages("k") == history  # the buffer rewrote the stored history
    assert len(history) < 8

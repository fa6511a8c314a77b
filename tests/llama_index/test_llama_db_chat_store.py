"""OpenKoiDBChatStore (AsyncDBChatStore) and llama_index.core.memory.Memory on it.

The conformance tests run the same expectations against LlamaIndex's own
``SQLAlchemyChatStore`` (in-memory SQLite), so they hold of the reference implementation.
"""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

from llama_index_openkoi import OpenKoiDBChatStore

ACTIVE, ARCHIVED = MessageStatus.ACTIVE, MessageStatus.ARCHIVED


def _msgs(*texts: str) -> list[ChatMessage]:
    return [ChatMessage(role="user" if i % 2 == 0 else "assistant", content=t) for i, t in enumerate(texts)]


def _texts(messages):
    return [m.content for m in messages]


@pytest.fixture(params=["openkoi", "sqlalchemy"])
def db_store(request, store):
    if request.param == "openkoi":
        return OpenKoiDBChatStore(store)
    return SQLAlchemyChatStore(table_name="conformance", async_database_uri="sqlite+aiosqlite:///:memory:")


async def test_add_get_count_by_status(db_store):
    assert await db_store.get_messages("k") == [] and await db_store.count_messages("k") == 0
    await db_store.add_message("k", ChatMessage(role="user", content="a"))
    await db_store.add_messages("k", _msgs("b", "c"))
    await db_store.add_message("k", ChatMessage(role="user", content="old"), status=ARCHIVED)
    assert _texts(await db_store.get_messages("k")) == ["a", "b", "c"]
    assert _texts(await db_store.get_messages("k", status=ARCHIVED)) == ["old"]
    assert _texts(await db_store.get_messages("k", status=None)) == ["a", "b", "c", "old"]
    assert await db_store.count_messages("k") == 3
    assert await db_store.count_messages("k", status=ARCHIVED) == 1
    assert await db_store.count_messages("k", status=None) == 4
    assert _texts(await db_store.get_messages("k", limit=2, offset=1)) == ["b", "c"]
    assert _texts(await db_store.get_messages("k", status=None, offset=3)) == ["old"]


async def test_archive_then_delete_oldest(db_store):
    await db_store.add_messages("k", _msgs("1", "2", "3", "4", "5"))
    assert _texts(await db_store.archive_oldest_messages("k", 2)) == ["1", "2"]
    assert _texts(await db_store.get_messages("k")) == ["3", "4", "5"]
    assert _texts(await db_store.get_messages("k", status=ARCHIVED)) == ["1", "2"]
    assert _texts(await db_store.delete_oldest_messages("k", 2)) == ["3", "4"]  # the oldest *active* ones
    assert _texts(await db_store.get_messages("k", status=None)) == ["1", "2", "5"]
    assert await db_store.archive_oldest_messages("nope", 3) == []
    assert await db_store.delete_oldest_messages("nope", 3) == []


async def test_set_and_delete_by_status(db_store):
    await db_store.add_messages("k", _msgs("1", "2"))
    await db_store.set_messages("k", _msgs("x", "y"), status=ARCHIVED)  # replaces everything
    assert await db_store.get_messages("k") == []
    assert _texts(await db_store.get_messages("k", status=ARCHIVED)) == ["x", "y"]
    await db_store.add_messages("k", _msgs("z"))
    await db_store.delete_messages("k", status=ARCHIVED)
    assert _texts(await db_store.get_messages("k", status=None)) == ["z"]
    await db_store.delete_messages("k")
    assert await db_store.get_messages("k", status=None) == []


async def test_keys(db_store):
    await db_store.add_messages("a", _msgs("1"))
    await db_store.add_messages("b", _msgs("2"), status=ARCHIVED)
    assert sorted(await db_store.get_keys()) == ["a", "b"]
    await db_store.delete_messages("a")
    assert await db_store.get_keys() == ["b"]


async def test_blocks_and_kwargs_round_trip(db_store):
    message = ChatMessage(role="user", blocks=[TextBlock(text="see"), ImageBlock(url="https://img.example/x.png")],
                          additional_kwargs={"trace": {"id": 7, "tags": ["a"]}})
    await db_store.add_message("k", message)
    await db_store.archive_oldest_messages("k", 1)
    assert await db_store.get_messages("k", status=ARCHIVED) == [message]


async def test_delete_message_is_a_position_among_active_messages(store):
    """Unlike SQLAlchemyChatStore, whose idx is its table's row id (see chat_store.py)."""
    chat = OpenKoiDBChatStore(store)
    await chat.add_messages("k", _msgs("1", "2", "3", "4"))
    await chat.archive_oldest_messages("k", 1)
    active = await chat.get_messages("k")
    assert (await chat.delete_message("k", 1)) == active[1]  # "3": the second *active* message
    assert _texts(await chat.get_messages("k", status=None)) == ["1", "2", "4"]
    assert (await chat.delete_message("k", -1)).content == "4"
    assert await chat.delete_message("k", 5) is None and await chat.delete_message("nope", 0) is None
    reference = SQLAlchemyChatStore(table_name="ids", async_database_uri="sqlite+aiosqlite:///:memory:")
    await reference.add_messages("other", _msgs("first row"))
    await reference.add_messages("k", _msgs("a", "b"))
    assert await reference.delete_message("k", 0) is None  # no row 0: its idx is not a position
    assert (await reference.delete_message("k", 3)).content == "b"  # row 3 of the table


async def test_bad_arguments(store):
    chat = OpenKoiDBChatStore(store)
    with pytest.raises(ValueError, match="unknown message status"):
        await chat.get_messages("k", status="deleted")
    with pytest.raises(ValueError, match="ACTIVE or ARCHIVED"):
        await chat.add_message("k", ChatMessage(role="user", content="x"), status=None)
    with pytest.raises(ValueError, match="non-negative"):
        await chat.archive_oldest_messages("k", -1)
    with pytest.raises(TypeError, match="ChatMessage"):
        await chat.add_messages("k", ["hello"])


def test_memory_keeps_its_history_in_the_file(tmp_path):
    path = tmp_path / "memory.db"
    chat = OpenKoiDBChatStore.from_path(path)
    memory = Memory.from_defaults(session_id="trip", chat_store=chat, token_limit=120, chat_history_token_ratio=0.5,
                                  token_flush_size=30)
    for i in range(10):
        memory.put(ChatMessage(role="user", content=f"Question {i}: which ferry leaves after the {i}th bell?"))
        memory.put(ChatMessage(role="assistant", content=f"Answer {i}: the one from pier {i}."))
    window = memory.get()
    assert 0 < len(window) < 20 and window[-1].content == "Answer 9: the one from pier 9."
    assert len(memory.get_all()) == 20
    archived = chat.client.conversations.messages(chat.session_id("trip"), active=False)
    assert archived and archived[0].content.startswith("Question 0")  # flushed, not lost
    chat.close()

    reopened = OpenKoiDBChatStore.from_path(path)
    again = Memory(session_id="trip", sql_store=reopened, token_limit=120)  # the field Memory declares
    assert [m.content for m in again.get()] == [m.content for m in window]
    assert len(again.get_all()) == 20 and len(again.get_all(status=MessageStatus.ARCHIVED)) == 20 - len(window)
    again.reset()
    assert again.get_all() == []
    reopened.close()


async def test_memory_async_api(store):
    chat = OpenKoiDBChatStore(store)
    memory = Memory.from_defaults(session_id="s", chat_store=chat)
    await memory.aput_messages(_msgs("hello", "hi there"))
    await memory.aset(_msgs("replaced"))
    assert _texts(await memory.aget()) == ["replaced"]
    assert store.conversations.count(chat.session_id("s")) == 1

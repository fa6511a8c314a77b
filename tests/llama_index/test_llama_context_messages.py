"""The core's context manager reads LlamaIndex chat messages as they are (what the memory block will call)."""

from __future__ import annotations

from llama_index.core.llms import ChatMessage, MessageRole

from shared_core import MemoryStore


def test_flushing_llama_index_messages_and_reading_the_addendum(clock):
    with MemoryStore.open(":memory:", clock=clock) as store:
        leaving = [ChatMessage(role=MessageRole.USER, content="I live in Lisbon and I speak Dutch."),
                   ChatMessage(role=MessageRole.ASSISTANT, content="Noted.")]
        manager = store.memory_manager.context_manager("fleet", namespace="u")
        flushed = manager.flush(leaving, session_id="chat-1")  # a memory block's aput: messages leaving the window
        assert [f.text for f in flushed.facts] == ["The user lives in Lisbon.", "The user speaks Dutch."]
        assert manager.flush(leaving, session_id="chat-1").facts == []  # read once
        text = store.memory_manager.build_context("chat-1", "where do I live?", 300, namespace="u").render()
        assert "The user lives in Lisbon." in text

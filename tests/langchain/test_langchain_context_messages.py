"""The core's context manager reads LangChain messages as they are (what the agent middleware will call)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage


def test_write_then_compact_over_langchain_messages(store):
    messages = [SystemMessage("You are brief."), HumanMessage("My cat is called Miso.", id="h1"),
                AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "cats"}, "id": "c1"}]),
                ToolMessage("nothing found", tool_call_id="c1")]
    messages += [AIMessage(f"Answer {i} with a handful of words in it.") for i in range(12)]
    manager = store.memory_manager.context_manager("fleet", namespace="u", window_tokens=150)
    result = manager.manage(messages, session_id="thread-1")
    assert result.action == "compact" and [f.text for f in result.facts] == ["The user's cat is called Miso."]
    # the middleware's rebuild: its own SystemMessage for the summary, its own objects for the rest
    rebuilt = list(result.messages)
    rebuilt[result.summary_position] = SystemMessage(result.summary_message["content"])
    assert isinstance(rebuilt[0], SystemMessage) and rebuilt[0] is messages[0]
    assert rebuilt[1].content.startswith("[Compacted history]\n")
    assert rebuilt[2:] == messages[-4:] and all(m is messages[i] for m, i in zip(rebuilt[2:], result.kept[1:], strict=True))
    addendum = store.memory_manager.build_context("thread-1", "what is my cat called?", 500, namespace="u")
    assert "Miso" in addendum.render()

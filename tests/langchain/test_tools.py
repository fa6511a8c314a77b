"""The memory tools: seed 002's five and seed 004's three, bound to a store and namespace."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import ToolCall

from langchain_openkoi import OpenKoiStore, create_memory_tools
from langchain_openkoi.tools import TOOL_NAMES, format_hits


@pytest.fixture
def tools(store):
    return {tool.name: tool for tool in create_memory_tools(store, namespace="user:alice")}


def _id(text: str) -> str:
    return re.search(r"\[id:([^\]]+)\]", text).group(1)


def _call(tool, **args):
    return tool.invoke(ToolCall(name=tool.name, args=args, id="call-1", type="tool_call"))


def test_all_tools_have_names_schemas_and_descriptions(tools):
    assert tuple(tools) == TOOL_NAMES
    for tool in tools.values():
        assert len(tool.description) > 40
        assert all(field.description for field in tool.args_schema.model_fields.values())


def test_store_query_reinforce_demote_update(tools, store):
    stored = tools["memory_store"].invoke({"content": "Payment API HMAC signature: no trailing empty string",
                                           "tags": "payments, hmac, api"})
    mid = _id(stored)
    memory = store.get(mid, namespace="user:alice")
    assert memory.tags == ["payments", "hmac", "api"] and memory.kind == "fact"
    found = tools["memory_query"].invoke({"query": "payment hmac signature", "limit": 3})
    assert found.startswith(f"[id:{mid}] Payment API HMAC") and "tags payments, hmac, api" in found
    assert tools["memory_reinforce"].invoke({"id": f"[id:{mid}]"}) == f"Reinforced [id:{mid}]: score now +3"
    assert tools["memory_demote"].invoke({"id": f"id:{mid}"}) == f"Demoted [id:{mid}]: score now +2"
    updated = tools["memory_update"].invoke({"id": mid, "content": "Payment API HMAC: omit the empty body string"})
    assert updated == f"Updated [id:{mid}] Payment API HMAC: omit the empty body string"
    assert store.get(mid).score == 2 and store.get(mid).tags == ["payments", "hmac", "api"]
    again = tools["memory_store"].invoke({"content": "Payment API HMAC: omit the empty body string"})
    assert again.startswith(f"Already remembered, reinforced instead: [id:{mid}]")
    assert tools["memory_query"].invoke({"query": "kubernetes"}).startswith("No memories matched")


def test_errors_come_back_as_error_tool_messages(tools, store):
    other = store.add("Bob's secret", namespace="user:bob")
    for name in ("memory_reinforce", "memory_demote"):
        message = _call(tools[name], id=other)
        assert message.status == "error" and "no memory with id" in message.content
    message = _call(tools["memory_update"], id="missing", content="x")
    assert message.status == "error" and message.content.startswith("Error: no memory")
    message = _call(tools["memory_store"], content="   ")
    assert message.status == "error" and "empty" in message.content
    assert store.get(other).score == 0


def test_save_and_recall_with_categories(store):
    saved = []
    tools = {t.name: t for t in create_memory_tools(
        store, namespace=("memories", "alice"), on_save=saved.append,
        categorize=lambda text: "pets" if "cat" in text.lower() else None,
    )}
    first = tools["memory_save"].invoke({"content": "The user's cat is called Whiskerino"})
    assert first.endswith(" in pets") and saved[0].text == "The user's cat is called Whiskerino"
    tools["memory_save"].invoke({"content": "The user's dog is called Rex", "category": "pets"})
    tools["memory_save"].invoke({"content": "The user works on the billing team", "category": "work"})
    assert saved[-1].namespace == "memories.alice." and saved[-1].category == "work"
    recalled = tools["memory_recall"].invoke({"query": "what is the cat called", "category": "pets", "limit": 2})
    lines = recalled.splitlines()
    assert "Whiskerino" in lines[0] and "category pets" in lines[0] and len(lines) == 2
    assert "Whiskerino" in tools["memory_recall"].invoke({"query": "Whiskerino"})
    fallback = tools["memory_recall"].invoke({"query": "billing team", "category": "pets"})
    assert "billing team" in fallback  # category first, then the flat fallback
    again = tools["memory_save"].invoke({"content": "The user's cat is called Whiskerino"})
    assert again.startswith("Already known, reinforced")


def test_memory_search_spans_every_kind(store):
    tools = {t.name: t for t in create_memory_tools(store, namespace="team", include=["memory_search"])}
    store.add("Runbook: restart the ingest workers", kind="document", namespace="team")
    store.add("Ingest workers leak memory after a week", kind="learning", namespace="team")
    store.add("ingest workers elsewhere", namespace="other")
    store.add('{"note": "ingest workers, stored with index=False"}', namespace="team", kind="langgraph_item_unindexed")
    found = tools["memory_search"].invoke({"query": "ingest workers"})
    assert {"document", "learning"} <= {line.split("(")[-1].split(";")[0] for line in found.splitlines()}
    assert "elsewhere" not in found and "index=False" not in found


def test_bad_configuration(store):
    with pytest.raises(ValueError, match="unknown memory tools"):
        create_memory_tools(store, include=["memory_forget"])
    with pytest.raises(ValueError, match="namespace"):
        create_memory_tools(store, namespace="")
    with pytest.raises(TypeError):
        create_memory_tools("not a store")


def test_tools_over_a_langgraph_store_and_formatting(store):
    graph = OpenKoiStore(store=store)
    tools = create_memory_tools(graph, namespace=("users", "alice"), include=["memory_store", "memory_query"])
    assert [t.name for t in tools] == ["memory_store", "memory_query"]
    mid = _id(tools[0].invoke({"content": "Alice likes oolong"}))
    assert store.get(mid).namespace == "users.alice."
    assert format_hits([]) == ""
    hit = store.search("oolong", namespace="users.alice.")[0]
    assert format_hits([hit]) == f"[id:{mid}] Alice likes oolong (fact; score {hit.score:.3f})"

"""The memory tools: seed 002's five and seed 004's three, bound to a store and namespace."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import ToolCall

from langchain_openkoi import OpenKoiStore, create_memory_tools
from langchain_openkoi.tools import TOOL_NAMES, format_hits


@pytest.fixture
def tools(store):
    return {tool.name: tool for tool in create_memory_tools(store, namespace="user:alice", include=TOOL_NAMES)}


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
        store, namespace=("memories", "alice"), on_save=saved.append, include=["memory_save", "memory_recall"],
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


def test_memory_save_also_writes_the_workspace_daily_log(file_store):
    tools = {t.name: t for t in create_memory_tools(file_store, namespace="user:priya", include=TOOL_NAMES)}
    saved = tools["memory_save"].invoke({"content": "The user's cat is called Whiskerino"})
    assert saved.endswith(" in pets")  # categorised by the core on add
    workspace = file_store.memory_manager.workspace("user:priya")
    log = workspace.read("memory/2026-01-01.md")
    assert "- 00:00 [memory_save] The user's cat is called Whiskerino" in log
    assert file_store.get(_id(saved)).source == "memory_save"
    # the day's log is indexed with the workspace, so memory_search finds the line there too
    found = tools["memory_search"].invoke({"query": "Whiskerino", "limit": 10})
    kinds = {line.split("(")[-1].split(";")[0] for line in found.splitlines()}
    assert {"fact", "workspace"} <= kinds


def test_memory_search_covers_hand_written_workspace_files(file_store):
    tools = {t.name: t for t in create_memory_tools(file_store, namespace="user:priya", include=["memory_search"])}
    workspace = file_store.memory_manager.workspace("user:priya")
    workspace.init()  # the seed's files, from short templates
    workspace.file("USER.md").write_text("# User\n\nPriya is a night-shift nurse in Lisbon.\n", encoding="utf-8")
    found = tools["memory_search"].invoke({"query": "night-shift nurse"})
    best = found.split("\n[id:")[0]  # a workspace chunk keeps its line breaks
    assert best.startswith("[id:ws_") and "Priya is a night-shift nurse in Lisbon." in best and "(workspace;" in best
    # another namespace's workspace stays out
    other = {t.name: t for t in create_memory_tools(file_store, namespace="user:bob", include=["memory_search"])}
    assert other["memory_search"].invoke({"query": "night-shift nurse"}) == "Nothing matched in memory."


def test_memory_search_still_finds_langgraph_store_items(store):
    graph = OpenKoiStore(store=store)
    graph.put(("users", "alice"), "tea", {"content": "Alice drinks oolong tea"})
    tools = {t.name: t for t in create_memory_tools(graph, namespace=("users", "alice"), include=["memory_search"])}
    assert "oolong" in tools["memory_search"].invoke({"query": "oolong tea"})


def test_memory_recall_is_the_core_three_tier_recall(store):
    tools = {t.name: t for t in create_memory_tools(store, namespace="u", include=["memory_save", "memory_recall"])}
    for fact in ("The user's cat is called Whiskerino", "The user's dog is called Rex",
                 "The user works at Acme as a nurse"):
        tools["memory_save"].invoke({"content": fact})
    recalled = tools["memory_recall"].invoke({"query": "what is the cat called?"})
    expected = store.memory_manager.recall_facts("what is the cat called?", namespace="u", limit=5)
    assert [line.split("]")[0][4:] for line in recalled.splitlines()] == expected.hits.ids
    assert "Whiskerino" in recalled.splitlines()[0]


def test_a_model_gets_two_tools_by_default_and_every_other_by_name(store):
    """LangMem gives a model two tools (manage, search); ours are one that writes and one that reads."""
    default = create_memory_tools(store, namespace="u")
    assert [t.name for t in default] == ["memory_save", "memory_search"]
    saved = default[0].invoke({"content": "The user's cat is called Whiskerino"})
    assert saved.startswith("Saved [id:") and "Whiskerino" in default[1].invoke({"query": "cat"})
    every = create_memory_tools(store, namespace="u", include=[*TOOL_NAMES, "searchKnowledgeBase"])
    assert [t.name for t in every] == [*TOOL_NAMES, "searchKnowledgeBase"]

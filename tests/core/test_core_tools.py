"""The framework-free tools (shared_core.tools): specs, argument checks, memory and knowledge-base tools."""

from __future__ import annotations

import re

import pytest

from shared_core import NotFoundError
from shared_core.tools import (
    KNOWLEDGE_BASE_TOOL_NAMES,
    MEMORY_TOOL_NAMES,
    TOOL_SPECS,
    MemoryTools,
    ToolParam,
    bare_id,
)


def _id(text: str, prefix: str = "id") -> str:
    return re.search(rf"\[{prefix}:([^\]]+)\]", text).group(1)


@pytest.fixture
def tools(store):
    return MemoryTools(store, namespace="user:alice")


def test_every_tool_has_a_json_schema_with_described_arguments():
    assert tuple(TOOL_SPECS) == (*MEMORY_TOOL_NAMES, *KNOWLEDGE_BASE_TOOL_NAMES)
    for spec in TOOL_SPECS.values():
        schema = spec.input_schema()
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert len(spec.description) > 40
        for name, prop in schema["properties"].items():
            assert prop["description"] and "type" in prop, (spec.name, name)
    search = TOOL_SPECS["searchKnowledgeBase"].input_schema()
    assert search["required"] == ["query"]
    assert search["properties"]["limit"] == {"type": "integer", "description": search["properties"]["limit"]["description"],
                                             "minimum": 1, "maximum": 50, "default": 5}
    assert search["properties"]["documentIds"]["type"] == ["array", "null"]
    assert search["properties"]["documentIds"]["items"] == {"type": "string"}
    assert TOOL_SPECS["memory_update"].input_schema()["required"] == ["id", "content"]
    extra = ToolParam("namespace", "string", "Whose memory.", default=None, nullable=True)
    assert "namespace" in TOOL_SPECS["memory_store"].input_schema([extra])["properties"]


def test_arguments_are_checked_before_anything_runs(tools, store):
    with pytest.raises(ValueError, match="needs the argument 'content'"):
        tools.call("memory_store", {})
    with pytest.raises(ValueError, match="no argument 'text'"):
        tools.call("memory_store", {"content": "x", "text": "y"})
    with pytest.raises(ValueError, match="limit must be an integer, got bool"):
        tools.call("memory_query", {"query": "x", "limit": True})
    with pytest.raises(ValueError, match="limit must be at most 50"):
        tools.call("memory_query", {"query": "x", "limit": 51})
    with pytest.raises(ValueError, match="query must be a string, got int"):
        tools.call("memory_query", {"query": 3})
    with pytest.raises(ValueError, match="content must not be empty"):
        tools.call("memory_save", {"content": ""})
    with pytest.raises(ValueError, match="documentIds must be a list of strings"):
        tools.call("searchKnowledgeBase", {"query": "x", "documentIds": [1]})
    with pytest.raises(ValueError, match="there is no tool 'memory_forget'"):
        tools.call("memory_forget", {})
    assert store.count(namespace="user:alice") == 0


def test_memory_tools_round_trip(tools, store):
    mid = _id(tools.call("memory_store", {"content": "Payment API HMAC signature: no trailing empty string",
                                           "tags": "payments, hmac"}))
    assert tools.call("memory_query", {"query": "hmac signature"}).startswith(f"[id:{mid}] Payment API HMAC")
    assert tools.call("memory_reinforce", {"id": f"[id:{mid}]"}) == f"Reinforced [id:{mid}]: score now +3"
    assert tools.call("memory_demote", {"id": f"id:{mid}"}) == f"Demoted [id:{mid}]: score now +2"
    assert tools.call("memory_update", {"id": mid, "content": "Payment API HMAC: omit the empty body string",
                                        "tags": None}) == f"Updated [id:{mid}] Payment API HMAC: omit the empty body string"
    assert store.get(mid).tags == ["payments", "hmac"]
    saved = []
    scoped = MemoryTools(store, "user:alice", on_save=saved.append, categorize=lambda t: "pets" if "cat" in t else None)
    assert scoped.call("memory_save", {"content": "The user's cat is called Whiskerino"}).endswith(" in pets")
    assert saved[0].namespace == "user:alice" and saved[0].source == "memory_save"
    assert "Whiskerino" in scoped.call("memory_recall", {"query": "cat name", "category": "pets"})
    assert "Whiskerino" in scoped.call("memory_search", {"query": "Whiskerino"})
    assert scoped.call("memory_save", {"content": "The user's cat is called Whiskerino"}).startswith("Already known")
    assert len(saved) == 2  # the hook sees reinforcements too: the daily log records that it came up again


def test_namespaces_are_per_binding(tools, store):
    other = store.add("Bob's secret plan", namespace="user:bob")
    with pytest.raises(NotFoundError):
        tools.call("memory_reinforce", {"id": other})
    bob = tools.for_namespace("user:bob")
    assert bob.namespace == "user:bob" and tools.namespace == "user:alice"
    assert "secret plan" in bob.call("memory_query", {"query": "secret plan"})
    assert tools.call("memory_query", {"query": "secret plan"}).startswith("No memories matched")
    with pytest.raises(ValueError, match="namespace"):
        tools.for_namespace("")


def test_memory_search_covers_memory_kinds_only(tools, store):
    store.add("ingest workers runbook", kind="document", namespace="user:alice")
    store.add('{"note": "ingest workers, placeholder"}', kind="langgraph_item_unindexed", namespace="user:alice")
    found = tools.call("memory_search", {"query": "ingest workers"})
    assert "runbook" in found and "placeholder" not in found


def test_memory_search_reads_langgraph_store_items(tools, store):
    """What OpenKoiStore.put (and LangMem's tools) wrote is a memory every door's memory_search reads (MCP too)."""
    store.add("The user's tea is oolong", kind="langgraph_item", namespace="user:alice")
    store.add("Bob's tea is sencha", kind="langgraph_item", namespace="user:bob")
    found = tools.call("memory_search", {"query": "tea"})
    assert "oolong" in found and "(langgraph_item;" in found and "sencha" not in found


def test_knowledge_base_tools(tools, store):
    assert tools.call("listKnowledgeBaseDocuments", {}) == "The knowledge base is empty."
    handbook = store.documents.ingest_text("# Leave\n\nParental leave is sixteen weeks at full pay.",
                                           name="handbook.md", namespace="user:alice")
    store.documents.ingest_text("Contractors give thirty days notice.", name="contract.txt", namespace="user:alice")
    store.documents.ingest_text("Bob's parental leave memo", name="bob.txt", namespace="user:bob")
    listed = tools.call("listKnowledgeBaseDocuments", {"limit": 5}).splitlines()
    assert len(listed) == 2 and any(f"[doc:{handbook.id}] handbook.md" in line for line in listed)
    found = tools.call("searchKnowledgeBase", {"query": "parental leave weeks"})
    assert found.startswith(f"[doc:{handbook.id}] handbook.md, chunk 0") and "sixteen weeks" in found
    assert "memo" not in found
    only = tools.call("searchKnowledgeBase", {"query": "parental leave", "documentIds": [f"[doc:{handbook.id}]"]})
    assert _id(only, "doc") == handbook.id
    none = tools.call("searchKnowledgeBase", {"query": "thirty days notice", "documentIds": [handbook.id]})
    assert none.startswith("No document passage matched")
    full = tools.call("getFullDocumentContent", {"documentId": f"doc:{handbook.id}"})
    assert full == f"[doc:{handbook.id}] handbook.md\n\n# Leave\n\nParental leave is sixteen weeks at full pay."
    bob_doc = store.documents.list_documents(namespace="user:bob")[0]
    with pytest.raises(NotFoundError):
        tools.call("getFullDocumentContent", {"documentId": bob_doc.id})


def test_bare_id_accepts_what_models_copy():
    assert bare_id(" [id: abc ] ") == "abc" and bare_id("id:abc") == "abc" and bare_id("abc") == "abc"
    assert bare_id("[doc:0123]", prefix="doc") == "0123" and bare_id("doc:0123") == "doc:0123"

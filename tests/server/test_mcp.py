"""The MCP server, driven by the official SDK's own client: over stdio (a real subprocess) and streamable HTTP."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from shared_core import MemoryStore
from shared_core.cli import main
from shared_core.server.auth import TokenFile
from shared_core.server.mcp_server import create_mcp_server
from shared_core.tools import (
    KNOWLEDGE_BASE_TOOL_NAMES,
    MCP_DEFAULT_TOOL_NAMES,
    MEMORY_TOOL_NAMES,
    TOOL_SPECS,
)

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    # the PostgreSQL test run's variables pass through, so the server opens the memory the test reads
    inherited = {k: v for k, v in os.environ.items() if k.startswith("OPENKOI_TEST_")}
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**inherited, "PYTHONPATH": pythonpath, "PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"),
            "OPENKOI_DATA": str(tmp_path / "data")}


def _stdio(tmp_path: Path, db: Path, *args: str) -> Client:
    params = StdioServerParameters(command=sys.executable, args=["-m", "shared_core.cli", "--db", str(db), "mcp", *args],
                                   env=_env(tmp_path), cwd=str(tmp_path))
    return Client(params, read_timeout_seconds=60)


def _text(result) -> str:
    return "\n".join(block.text for block in result.content)


def _id(text: str, prefix: str = "id") -> str:
    return re.search(rf"\[{prefix}:([^\]]+)\]", text).group(1)


async def test_every_tool_over_stdio(tmp_path):
    db = tmp_path / "mcp.db"
    with MemoryStore.open(db) as store:  # something to read before the server starts
        handbook = store.documents.ingest_text("# Leave\n\nParental leave is sixteen weeks at full pay.",
                                               name="handbook.md", namespace="user:alice")
    async with _stdio(tmp_path, db, "--namespace", "user:alice", "--tools", "all") as client:
        assert client.server_info.name == "openkoi-memory"
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tuple(listed) == (*MEMORY_TOOL_NAMES, *KNOWLEDGE_BASE_TOOL_NAMES)
        for name, tool in listed.items():
            expected = TOOL_SPECS[name].input_schema()
            assert tool.input_schema["properties"]["namespace"]["type"] == ["string", "null"]
            assert {k: v for k, v in tool.input_schema["properties"].items() if k != "namespace"} == expected["properties"]
            assert tool.input_schema["required"] == expected["required"]
            assert tool.description == TOOL_SPECS[name].description
            assert tool.annotations.read_only_hint == TOOL_SPECS[name].read_only
        assert listed["searchKnowledgeBase"].input_schema["properties"]["documentIds"]["items"] == {"type": "string"}

        stored = _text(await client.call_tool("memory_store", {"content": "Payment API HMAC: no trailing empty string",
                                                                "tags": "payments, hmac"}))
        mid = _id(stored)
        queried = _text(await client.call_tool("memory_query", {"query": "hmac payment", "limit": 3}))
        assert queried.startswith(f"[id:{mid}] Payment API HMAC") and "tags payments, hmac" in queried
        assert _text(await client.call_tool("memory_reinforce", {"id": f"[id:{mid}]"})) == f"Reinforced [id:{mid}]: score now +3"
        assert _text(await client.call_tool("memory_demote", {"id": mid})) == f"Demoted [id:{mid}]: score now +2"
        updated = _text(await client.call_tool("memory_update", {"id": mid, "content": "Payment API HMAC: omit the body"}))
        assert updated == f"Updated [id:{mid}] Payment API HMAC: omit the body"
        saved = _text(await client.call_tool("memory_save", {"content": "The user's cat is called Whiskerino",
                                                              "category": "pets"}))
        assert saved.endswith(" in pets")
        assert "Whiskerino" in _text(await client.call_tool("memory_recall", {"query": "cat name", "category": "pets"}))
        assert "Whiskerino" in _text(await client.call_tool("memory_search", {"query": "Whiskerino"}))

        found = _text(await client.call_tool("searchKnowledgeBase", {"query": "parental leave", "limit": 2}))
        assert found.startswith(f"[doc:{handbook.id}] handbook.md, chunk 0") and "sixteen weeks" in found
        scoped = await client.call_tool("searchKnowledgeBase", {"query": "parental leave", "documentIds": ["nope"]})
        assert _text(scoped).startswith("No document passage matched")
        full = _text(await client.call_tool("getFullDocumentContent", {"documentId": f"[doc:{handbook.id}]"}))
        assert full.endswith("Parental leave is sixteen weeks at full pay.")
        assert _text(await client.call_tool("listKnowledgeBaseDocuments", {"limit": 5})).startswith(f"[doc:{handbook.id}]")

        # a namespace per call, else the server's
        bob = _text(await client.call_tool("memory_store", {"content": "Bob prefers green tea", "namespace": "user:bob"}))
        assert "Bob prefers" in _text(await client.call_tool("memory_query", {"query": "green tea", "namespace": "user:bob"}))
        assert _text(await client.call_tool("memory_query", {"query": "green tea"})).startswith("No memories matched")
        assert (await client.call_tool("listKnowledgeBaseDocuments", {"namespace": "user:bob"})).content[0].text == \
            "The knowledge base is empty."

        # errors come back as tool errors with a message the model can act on
        for name, args, message in (
            ("memory_query", {"query": 5}, "query must be a string"),
            ("memory_query", {"query": "x", "limit": 500}, "limit must be at most 50"),
            ("memory_store", {}, "needs the argument 'content'"),
            ("memory_store", {"content": "x", "colour": "red"}, "no argument 'colour'"),
            ("memory_reinforce", {"id": _id(bob)}, "no memory with id"),  # Bob's, from Alice's namespace
            ("getFullDocumentContent", {"documentId": "0000000000000000"}, "no knowledge-base document"),
            ("memory_forget", {"id": "x"}, "there is no tool 'memory_forget'"),
            ("memory_store", {"content": "x", "namespace": ""}, "namespace must be a non-empty string"),
        ):
            result = await client.call_tool(name, args)
            assert result.is_error and message in _text(result), (name, _text(result))
            assert "Traceback" not in _text(result)
    with MemoryStore.open(db) as store:
        assert store.count(namespace="user:alice", kind="fact") == 2 and store.count(namespace="user:bob") == 1
        assert store.get(mid).score == 2


async def test_a_client_gets_four_tools_without_overlap_by_default(store):
    """Write, search everything, list the documents, read one whole: the rest by name (``--tools``)."""
    handbook = store.documents.ingest_text("# Leave\n\nParental leave is sixteen weeks at full pay.",
                                           name="handbook.md", namespace="user:alice")
    async with Client(create_mcp_server(store, namespace="user:alice")) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        assert tuple(listed) == MCP_DEFAULT_TOOL_NAMES == ("memory_save", "memory_search",
                                                           "listKnowledgeBaseDocuments", "getFullDocumentContent")
        guide = client.instructions
        assert all(name in guide for name in listed)
        assert not any(name in guide for name in TOOL_SPECS if name not in listed)  # never a tool it lacks
        assert _text(await client.call_tool("memory_save", {"content": "The user's cat is called Whiskerino"}))\
            .startswith("Saved [id:")
        found = _text(await client.call_tool("memory_search", {"query": "parental leave"}))
        assert f"[doc:{handbook.id}] handbook.md, chunk 0" in found  # a passage names its document...
        full = _text(await client.call_tool("getFullDocumentContent", {"documentId": _id(found, "doc")}))
        assert full.endswith("sixteen weeks at full pay.")  # ...which the model can read whole
        assert "Whiskerino" in _text(await client.call_tool("memory_search", {"query": "cat"}))
        missing = await client.call_tool("memory_query", {"query": "cat"})
        assert missing.is_error and "--tools all" in _text(missing) and "memory_save" in _text(missing)
    for choice, expected in (("all", tuple(TOOL_SPECS)), ("memory_query, memory_reinforce",
                                                          ("memory_query", "memory_reinforce"))):
        async with Client(create_mcp_server(store, tools=choice)) as client:
            assert tuple(tool.name for tool in (await client.list_tools()).tools) == expected
            assert not any(name in client.instructions for name in TOOL_SPECS if name not in expected)


@pytest.mark.parametrize("command", [["mcp", "--tools"], ["serve", "--mcp-tools"]])
@pytest.mark.parametrize("value, message", [("memory_forget", "unknown tool 'memory_forget'"),
                                            ("", "choose at least one tool")])
def test_a_wrong_tool_choice_is_refused_before_the_server_starts(tmp_path, command, value, message):
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), *command, value])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    with MemoryStore.open(":memory:") as store, pytest.raises(ValueError, match="unknown tool 'nope'"):
        create_mcp_server(store, tools=["memory_save", "nope"])


async def test_a_fixed_namespace_hides_the_argument(tmp_path):
    db = tmp_path / "fixed.db"
    async with _stdio(tmp_path, db, "--namespace", "agent:7", "--fixed-namespace",
                      "--tools", "memory_store,memory_query") as client:
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == ["memory_store", "memory_query"]  # the tools named, in that order
        assert all("namespace" not in tool.input_schema["properties"] for tool in tools)
        await client.call_tool("memory_store", {"content": "The build runs on Tuesdays"})
        refused = await client.call_tool("memory_query", {"query": "build", "namespace": "agent:8"})
        assert refused.is_error and "no argument 'namespace'" in _text(refused)
    with MemoryStore.open(db) as store:
        assert store.namespaces() == {"agent:7": 1}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def http_server(tmp_path):
    """``openkoi-memory serve`` in a subprocess; yields (base url, all-namespaces token, tokens file)."""
    yield from _serve(tmp_path, "serve")


@pytest.fixture
def mcp_only_server(tmp_path):
    """``openkoi-memory mcp --transport http`` in a subprocess."""
    yield from _serve(tmp_path, "mcp", "--transport", "http", "--namespace", "user:alice")


def _serve(tmp_path, *command: str):
    tokens, token = TokenFile.load_or_create(tmp_path / "tokens.toml")
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared_core.cli", "--db", str(tmp_path / "http.db"), *command, "--port", str(port),
         "--tokens-file", str(tokens.path), "--log-level", "warning"],
        env=_env(tmp_path), cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    probe = "/api/health" if command[0] == "serve" else "/mcp"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}{probe}", timeout=2).status_code == 401:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None, (tmp_path / "server.log").read_text()
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)
    try:
        yield base, token, tokens
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


async def _http_client(base: str, token: str) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return http, Client(streamable_http_client(f"{base}/mcp", http_client=http), read_timeout_seconds=60)


async def test_streamable_http_with_tokens(http_server):
    base, token, tokens = http_server
    alice_token = tokens.add("alice", ["user:alice"])
    http, client = await _http_client(base, token)
    async with http, client:
        assert tuple(tool.name for tool in (await client.list_tools()).tools) == MCP_DEFAULT_TOOL_NAMES
        stored = await client.call_tool("memory_save", {"content": "Bob's salary is 90k", "namespace": "user:bob"})
        assert not stored.is_error
    http, client = await _http_client(base, alice_token)
    async with http, client:
        mine = await client.call_tool("memory_save", {"content": "Alice likes oolong", "namespace": "user:alice"})
        assert not mine.is_error
        for args in ({"query": "salary", "namespace": "user:bob"}, {"query": "salary", "namespace": "user:nobody"},
                     {"query": "salary"}):  # the server's namespace ("default") is not hers either
            refused = await client.call_tool("memory_search", args)
            assert refused.is_error and "may not use the namespace" in _text(refused)
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}):
        anonymous = httpx.post(f"{base}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert anonymous.status_code == 401
    rebinding = httpx.post(f"{base}/mcp", headers={"Authorization": f"Bearer {token}", "Host": "evil.example"},
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert rebinding.status_code in (400, 403, 421)  # the SDK's DNS-rebinding guard on a loopback server
    api = httpx.post(f"{base}/api/memories/search", params={"namespace": "user:bob"}, json={"query": "salary"},
                     headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 200 and api.json()["hits"][0]["memory"]["text"] == "Bob's salary is 90k"


async def test_mcp_alone_over_http(mcp_only_server, tmp_path):
    base, token, tokens = mcp_only_server
    assert httpx.get(f"{base}/api/health", headers={"Authorization": f"Bearer {token}"}).status_code == 404
    http, client = await _http_client(base, tokens.add("alice", ["user:alice"]))
    async with http, client:
        stored = await client.call_tool("memory_save", {"content": "Alice likes oolong"})  # the server's namespace
        assert not stored.is_error
        refused = await client.call_tool("memory_search", {"query": "oolong", "namespace": "user:bob"})
        assert refused.is_error and "may not use the namespace" in _text(refused)
    with MemoryStore.open(tmp_path / "http.db") as store:  # the fact (and its line in the workspace's daily log)
        assert store.namespaces().keys() == {"user:alice"} and store.count(namespace="user:alice", kind="fact") == 1

"""Isolation (issue 21, part 4): what Alice told the memory, Bob cannot reach through the core API,
the CLI, REST or MCP.

Alice's secret is planted in every form a door reads (a fact, a knowledge-base document, a
conversation's message); Bob has a memory of his own in the same file. Each door is then asked
the same things as Alice (the control: the secret comes back, so the door can find it) and as
Bob (it must not): by searching, listing, exporting, building a prompt, asking for Alice's ids,
and changing or deleting them. The CLI scopes by ``-n``; REST by namespace-limited bearer tokens
(made with ``openkoi-memory token add NAME -n NAMESPACE``); MCP by those tokens over HTTP and by
a server per namespace (``openkoi-memory mcp --namespace ... --fixed-namespace``).

The LangChain/LangGraph and LlamaIndex doors are in ``tests/langchain/test_isolation.py`` and
``tests/llama_index/test_llama_isolation.py`` (tests/README.md lists the whole suite).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

from shared_core import MemoryStore, NotFoundError
from shared_core.cli import main
from shared_core.server.auth import TokenFile
from shared_core.server.mcp_server import create_mcp_server
from shared_core.server.rest import create_app
from shared_core.tools import TOOL_SPECS

ALICE, BOB = "user:alice", "user:bob"
WORD = "ZEPHYRINE"
SECRET = f"Alice's safe combination is {WORD}-2209"
QUERY = "safe combination"  # what searches ask (answers that echo the query then cannot contain the word)
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@dataclass
class Planted:
    store: MemoryStore
    path: Path
    fact: str  # the id of Alice's fact
    document: str  # the id of Alice's document
    session: str  # the id of Alice's conversation


@pytest.fixture
def planted(tmp_path, clock) -> Iterator[Planted]:
    """One file: Alice's secret as a fact, a document and a message; Bob's own memory beside it."""
    path = tmp_path / "shared.db"
    with MemoryStore.open(path, clock=clock) as store:
        fact = store.add(f"{SECRET} (a fact)", namespace=ALICE).id
        document = store.documents.ingest_text(f"{SECRET} (a document)", name=f"{WORD}.txt", namespace=ALICE).id
        store.conversations.append("alice-chat", "user", f"{SECRET} (a message)", namespace=ALICE)
        store.conversations.append("alice-chat", "assistant", "Noted.", namespace=ALICE)
        store.add("Bob's bike is blue", namespace=BOB)
        store.conversations.append("bob-chat", "user", "What is the combination of the safe?", namespace=BOB)
        yield Planted(store, path, fact, document, "alice-chat")


def _both(ask) -> tuple[str, str]:
    """``ask(namespace)`` as Alice and as Bob, as text."""
    return str(ask(ALICE)), str(ask(BOB))


def _alice_only(ask) -> None:
    alice, bob = _both(ask)
    assert WORD in alice, alice  # the control
    assert WORD not in bob, bob


# -- the core API -----------------------------------------------------------------------------------------


def test_the_core_api(planted):
    store = planted.store
    _alice_only(lambda ns: [h.text for h in store.search(WORD, namespace=ns, kind=None, limit=50)])
    _alice_only(lambda ns: [m.text for m in store.list(namespace=ns, kind=None, limit=1000)])
    _alice_only(lambda ns: [h.text for h in store.memory_manager.recall_facts(WORD, namespace=ns).hits])
    _alice_only(lambda ns: [h.text for h in store.memory_manager.search(WORD, namespace=ns, limit=50)])
    _alice_only(lambda ns: [h.text for h in store.conversations.search(WORD, namespace=ns)])
    _alice_only(lambda ns: [m.content for m in store.conversations.messages(planted.session, namespace=ns)])
    _alice_only(lambda ns: [h.text for h in store.documents.search_knowledge_base(WORD, 50, namespace=ns)])
    _alice_only(lambda ns: [d.file_name for d in store.documents.list_documents(namespace=ns)])
    _alice_only(lambda ns: [store.documents.get_full_document(d.id, namespace=ns)
                            for d in store.documents.list_documents(namespace=ns)])
    _alice_only(lambda ns: store.memory_manager.build_context(None, "What do you know about me?", 2000,
                                                              namespace=ns).render())
    # Alice's conversation named in Bob's namespace is none of his: neither its last message (the
    # query it would imply) nor its summary reaches his addendum
    _alice_only(lambda ns: json.dumps(store.memory_manager.build_context(planted.session, None, 2000,
                                                                         namespace=ns).to_dict()))
    # by id: Alice's records do not exist in Bob's namespace, for reading or for changing
    assert WORD in store.get(planted.fact, namespace=ALICE).text
    for call in (lambda: store.get(planted.fact, namespace=BOB),
                 lambda: store.update(planted.fact, "Bob was here", namespace=BOB),
                 lambda: store.reinforce(planted.fact, namespace=BOB),
                 lambda: store.demote(planted.fact, namespace=BOB),
                 lambda: store.delete(planted.fact, namespace=BOB),
                 lambda: store.documents.get_full_document(planted.document, namespace=BOB),
                 lambda: store.documents.delete_document(planted.document, namespace=BOB)):
        with pytest.raises(NotFoundError):
            call()
    assert store.get(planted.fact).text == f"{SECRET} (a fact)" and store.get(planted.fact).score == 0
    assert WORD in store.documents.get_full_document(planted.document, namespace=ALICE)


# -- the CLI ----------------------------------------------------------------------------------------------


def _cli(path: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["--db", str(path), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_cli(planted):
    path = planted.path
    _alice_only(lambda ns: _cli(path, "search", WORD, "-n", ns, "-l", "50"))
    _alice_only(lambda ns: _cli(path, "search", WORD, "-n", ns, "-l", "50", "-k", "message", "--json"))
    _alice_only(lambda ns: _cli(path, "kb", "search", WORD, "-n", ns, "-l", "50"))
    _alice_only(lambda ns: _cli(path, "kb", "list", "-n", ns))
    _alice_only(lambda ns: "\n".join(_cli(path, "sessions", json.loads(line)["id"])
                                     for line in _cli(path, "sessions", "-n", ns, "--json").splitlines()))
    _alice_only(lambda ns: _cli(path, "export", "-n", ns))
    _alice_only(lambda ns: _cli(path, "export", "-n", ns, "-f", "markdown"))
    _alice_only(lambda ns: _cli(path, "context", f"{ns.split(':')[1]}-chat", "-n", ns, "-q",
                                "What do you know about me?", "--json"))
    _alice_only(lambda ns: _cli(path, "context", planted.session, "-n", ns, "--json"))  # Alice's chat, Bob's -n


# -- REST with namespace-limited tokens ---------------------------------------------------------------------


@pytest.fixture
def tokens(planted, tmp_path) -> dict[str, str]:
    """Alice's and Bob's tokens, each limited to the user's namespace, made as a user makes them."""
    tokens_file = tmp_path / "config" / "tokens.toml"
    made = {}
    for name, namespace in (("alice", ALICE), ("bob", BOB)):
        result = CliRunner().invoke(main, ["token", "add", name, "-n", namespace, "--tokens-file", str(tokens_file)])
        assert result.exit_code == 0, result.output
        made[name] = result.stdout.strip()
    listed = CliRunner().invoke(main, ["token", "list", "--tokens-file", str(tokens_file)]).stdout
    assert f"alice\t{ALICE}" in listed and f"bob\t{BOB}" in listed
    made["file"] = str(tokens_file)
    return made


class Caller:
    """Requests to the server with one user's token."""

    def __init__(self, client: TestClient, token: str) -> None:
        self.client = client
        self.auth = {"Authorization": f"Bearer {token}"}

    def request(self, method: str, url: str, *, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
        return self.client.request(method, url, headers={**(headers or {}), **self.auth}, **kwargs)

    def get(self, url: str, **kwargs: Any) -> Any:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> Any:
        return self.request("POST", url, **kwargs)


@pytest.fixture
def served(planted, tokens, tmp_path, base_url) -> Iterator[dict[str, Caller]]:
    """``openkoi-memory serve --mcp-tools all`` on the file: a caller per user, each with its own token."""
    app = create_app(planted.store, tokens=TokenFile.load_or_create(tokens["file"])[0], mcp=True, mcp_tools="all",
                     upload_dir=tmp_path / "uploads")
    with TestClient(app, base_url=base_url) as client:
        yield {ALICE: Caller(client, tokens["alice"]), BOB: Caller(client, tokens["bob"])}


def _as_user(served: dict[str, Caller], method: str, url: str, body: Any = None,
             namespace: str | None = "own") -> Any:
    """The same request as each user (in the user's own namespace unless ``namespace`` is given):
    ``{namespace of the caller: (status, text)}``."""
    out = {}
    for user, client in served.items():
        params = {} if namespace is None else {"namespace": user if namespace == "own" else namespace}
        response = client.request(method, url, params=params, json=body)
        out[user] = (response.status_code, response.text)
    return out


def test_rest_with_namespace_limited_tokens(planted, served):
    reads = [("POST", "/api/memories/search", {"query": QUERY, "limit": 50}),
             ("POST", "/api/memories/search", {"query": QUERY, "limit": 50, "kind": ["message"]}),
             ("GET", "/api/memories", None),
             ("POST", "/api/kb/search", {"query": QUERY, "limit": 50}),
             ("GET", "/api/kb/documents", None),
             ("GET", f"/api/memories/{planted.fact}", None),
             ("GET", f"/api/kb/documents/{planted.document}", None),
             ("GET", f"/api/kb/documents/{planted.document}/content", None)]
    for method, url, body in reads:
        for namespace in ("own", None):  # the token's own namespace, named or implied
            answers = _as_user(served, method, url, body, namespace)
            assert answers[ALICE][0] == 200 and WORD in answers[ALICE][1], (url, answers[ALICE])  # the control
            assert WORD not in answers[BOB][1], (url, answers[BOB])
        # naming Alice's namespace with Bob's token is refused before anything is read
        refused = served[BOB].request(method, url, params={"namespace": ALICE}, json=body)
        assert refused.status_code == 403 and WORD not in refused.text, (url, refused.text)
    assert [n["namespace"] for n in served[BOB].get("/api/namespaces").json()] == [BOB]
    assert ALICE in [n["namespace"] for n in served[ALICE].get("/api/namespaces").json()]
    # Bob can change nothing of Alice's: in his namespace her ids do not exist, hers he may not use
    changes = [("PATCH", f"/api/memories/{planted.fact}", {"text": "Bob was here"}),
               ("POST", f"/api/memories/{planted.fact}/feedback", {"signal": "demote"}),
               ("DELETE", f"/api/memories/{planted.fact}", None),
               ("DELETE", f"/api/kb/documents/{planted.document}", None)]
    for method, url, body in changes:
        assert served[BOB].request(method, url, params={"namespace": BOB}, json=body).status_code == 404, url
        assert served[BOB].request(method, url, params={"namespace": ALICE}, json=body).status_code == 403, url
    assert planted.store.get(planted.fact).text == f"{SECRET} (a fact)" and planted.store.get(planted.fact).score == 0
    assert WORD in planted.store.documents.get_full_document(planted.document, namespace=ALICE)
    demoted = served[ALICE].post(f"/api/memories/{planted.fact}/feedback", params={"namespace": ALICE},
                                 json={"signal": "demote"})
    assert demoted.status_code == 200 and demoted.json()["score"] == -1  # the control: Alice's own token can


# -- MCP: tokens over HTTP, a server per namespace -----------------------------------------------------------


def _mcp(client: Caller, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """One ``tools/call`` over streamable HTTP: ``(is_error, text)``."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = client.post("/mcp", json=request, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    return result["isError"], "\n".join(block["text"] for block in result["content"])


def _reads(document: str) -> list[tuple[str, dict[str, Any]]]:
    """Every MCP tool that reads, asked for the secret (or given Alice's document id)."""
    return [("memory_search", {"query": QUERY, "limit": 50}), ("memory_query", {"query": QUERY, "limit": 50}),
            ("memory_recall", {"query": QUERY, "limit": 50}), ("searchKnowledgeBase", {"query": QUERY, "limit": 50}),
            ("listKnowledgeBaseDocuments", {}), ("getFullDocumentContent", {"documentId": document})]


def _writes(fact: str) -> list[tuple[str, dict[str, Any]]]:
    """The MCP tools that change a memory, given Alice's fact's id."""
    return [("memory_update", {"id": fact, "content": "Bob was here"}),
            ("memory_reinforce", {"id": fact}), ("memory_demote", {"id": fact})]


def test_every_mcp_tool_is_tried():
    tried = {name for name, _ in [*_reads("d"), *_writes("f")]} | {"memory_store", "memory_save"}  # saves: below
    assert tried == set(TOOL_SPECS)  # a tool added later is added here


def test_mcp_over_http_with_namespace_limited_tokens(planted, served):
    for tool, arguments in _reads(planted.document):
        error, text = _mcp(served[ALICE], tool, {**arguments, "namespace": ALICE})
        assert not error and WORD in text, (tool, text)  # the control
        for namespace in (BOB, None):  # Bob's own namespace, named or left out (the server's: not his to use)
            given = {**arguments, "namespace": namespace} if namespace else arguments
            error, text = _mcp(served[BOB], tool, given)
            assert WORD not in text, (tool, namespace, text)
        error, text = _mcp(served[BOB], tool, {**arguments, "namespace": ALICE})
        assert error and "may not use the namespace 'user:alice'" in text and WORD not in text, (tool, text)
    for tool, arguments in _writes(planted.fact):
        error, text = _mcp(served[BOB], tool, {**arguments, "namespace": BOB})
        assert error and "no memory with id" in text, (tool, text)
        error, text = _mcp(served[BOB], tool, {**arguments, "namespace": ALICE})
        assert error and "may not use the namespace" in text, (tool, text)
    # Bob cannot write into Alice's namespace
    for tool in ("memory_save", "memory_store"):
        error, text = _mcp(served[BOB], tool, {"content": "Alice's safe is open", "namespace": ALICE})
        assert error and "may not use the namespace" in text, (tool, text)
    assert planted.store.count(namespace=ALICE, kind="fact") == 1
    assert planted.store.get(planted.fact).text == f"{SECRET} (a fact)" and planted.store.get(planted.fact).score == 0


async def test_a_server_per_namespace(planted):
    """``openkoi-memory mcp --namespace user:bob --fixed-namespace --tools all``: Bob's model cannot even
    name Alice's namespace, and no tool of his server reaches her memory."""
    servers = {user: create_mcp_server(planted.store, namespace=user, namespace_argument=False, tools="all")
               for user in (ALICE, BOB)}
    async with Client(servers[ALICE]) as alice, Client(servers[BOB]) as bob:
        for tool, arguments in _reads(planted.document):
            mine = await alice.call_tool(tool, arguments)
            assert not mine.is_error and WORD in _text(mine), tool  # the control
            theirs = await bob.call_tool(tool, arguments)
            assert WORD not in _text(theirs), (tool, _text(theirs))
            named = await bob.call_tool(tool, {**arguments, "namespace": ALICE})
            assert named.is_error and "no argument 'namespace'" in _text(named) and WORD not in _text(named)
        for tool, arguments in _writes(planted.fact):
            refused = await bob.call_tool(tool, arguments)
            assert refused.is_error and "no memory with id" in _text(refused), tool
    assert planted.store.get(planted.fact).text == f"{SECRET} (a fact)" and planted.store.get(planted.fact).score == 0


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)

"""One memory, every door (issue 21, part 3): the CLI, REST and MCP beside the library's doors.

In one file and one namespace (LangGraph's ``("memories", "ann")``, the ``"memories.ann."`` the
CLI, REST and MCP are given), every door writes one sentence with a word no other door writes:
the LangChain/LangGraph writers of ``tests/langchain/test_doors.py`` (its ``_write``), LlamaIndex's
vector store, chat store and memory block, ``openkoi-memory add`` and ``ingest``, REST's
``POST /api/memories`` and ``/api/kb/documents/text``, and MCP's ``memory_save``. Every door then
reads for every word: the LangChain/LangGraph readers of that file (its ``_readers``), LlamaIndex's
vector store (alone and under ``VectorStoreIndex.from_vector_store``), retriever, memory block and
chat store, ``openkoi-memory search``, ``kb search`` and ``sessions``, REST's searches and MCP's
``memory_search`` and ``searchKnowledgeBase``. Each reader is held to the exact set of writers
within its reach (:data:`READS`): it finds each of them (its own writer's word among them, the
control) and nothing outside.

REST and MCP run as ``openkoi-memory serve --mcp-tools all`` serves them (``create_app`` with its
``/mcp`` endpoint, a bearer token, the loopback Host), the CLI through its click entry point.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("llama_index.core")

from click.testing import CliRunner  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from langchain_openkoi import OpenKoiChatMessageHistory  # noqa: E402
from llama_index_openkoi import (  # noqa: E402
    OpenKoiChatStore,
    OpenKoiEmbedding,
    OpenKoiMemoryBlock,
    OpenKoiRetriever,
    OpenKoiVectorStore,
)
from shared_core import MemoryStore  # noqa: E402
from shared_core.cli import main  # noqa: E402
from shared_core.server.auth import TokenFile  # noqa: E402
from shared_core.server.rest import create_app  # noqa: E402
from tests.langchain import test_doors as lc  # noqa: E402

NS = lc.USER  # ("memories", "ann")
NS_TEXT = lc.NS  # "memories.ann."
CHAT_KEY = "chat-1"  # LangChain's history writes this conversation; LlamaIndex's chat store adds to it
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}

# writer -> the word only it writes: the LangChain/LangGraph writers, then these
WORDS = {
    **lc.WORDS,
    "llama_vector_store": "NODE777",
    "llama_chat_store": "CHAT888",
    "llama_memory_block": "BLOCK999",
    "cli_add": "CLIADD121",
    "cli_ingest": "CLIDOC131",
    "rest_add": "RESTADD141",
    "rest_document": "RESTDOC151",
    "mcp_save": "MCPSAVE161",
}
# what each writer leaves, by the kinds of memory readers tell apart
FACTS = {"core", "tools", "middleware", "cli_add", "rest_add", "mcp_save"}
ITEMS = {"langgraph_store"}  # OpenKoiStore.put: LangGraph store items
DOCUMENTS = {"knowledge_base", "vector_store", "cli_ingest", "rest_document"}  # documents and their chunks
NODES = {"llama_vector_store"}  # LlamaIndex nodes
MESSAGES = {"chat_history", "middleware", "llama_chat_store"}  # the middleware's thread is a session too
EPISODES = {"llama_memory_block"}  # the memory block keeps what it is told as an episode
EVERYTHING = set(WORDS)
READS = {
    # the core's search, and the doors that search every kind
    "core": EVERYTHING,
    "retriever": EVERYTHING,
    "llama_retriever": EVERYTHING,
    "cli_search": EVERYTHING,
    "rest_search": EVERYTHING,
    # document stores
    "vector_store": DOCUMENTS | NODES,
    "llama_vector_store": DOCUMENTS | NODES,
    "llama_index_from_vector_store": DOCUMENTS | NODES,
    "cli_kb_search": DOCUMENTS,
    "rest_kb_search": DOCUMENTS,
    "mcp_search_knowledge_base": DOCUMENTS,
    # conversations
    "chat_history": MESSAGES,
    "llama_chat_store": MESSAGES,
    "cli_sessions": MESSAGES,
    # memories
    "tools": FACTS | ITEMS | DOCUMENTS | NODES | EPISODES,
    "mcp_memory_search": FACTS | ITEMS | DOCUMENTS | NODES | EPISODES,
    "middleware": FACTS | ITEMS | EPISODES,  # episodes: the prompt's recent episodes
    "langgraph_store": FACTS | ITEMS | EPISODES,
    "llama_memory_block": FACTS | EPISODES,
}


# -- the doors --------------------------------------------------------------------------------------------


class Doors:
    """The CLI, REST and MCP on one memory file, as a user or a client reaches them."""

    def __init__(self, path: Path, api: TestClient) -> None:
        self.path = path
        self.api = api
        self.cli_runner = CliRunner()

    def cli(self, *args: str) -> str:
        """``openkoi-memory --db <file> ARGS``: its output (a failure fails the test)."""
        result = self.cli_runner.invoke(main, ["--db", str(self.path), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    def rest(self, method: str, url: str, body: Any = None, *, namespace: str = NS_TEXT, status: int = 200) -> Any:
        response = self.api.request(method, url, params={"namespace": namespace}, json=body)
        assert response.status_code == status, response.text
        return response.json()

    def mcp(self, tool: str, arguments: dict[str, Any], *, namespace: str = NS_TEXT) -> str:
        """One ``tools/call`` to ``/mcp`` (streamable HTTP, as an MCP client sends it); the tool's text."""
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": tool, "arguments": {**arguments, "namespace": namespace}}}
        response = self.api.post("/mcp", json=request, headers=MCP_HEADERS)
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        text = "\n".join(block["text"] for block in result["content"])
        assert not result["isError"], text
        return text


@pytest.fixture
def doors(tmp_path, clock, base_url) -> Iterator[tuple[MemoryStore, Doors]]:
    """The memory file (opened by the library) and its CLI, REST and MCP doors."""
    path = tmp_path / "doors.db"
    tokens, token = TokenFile.load_or_create(tmp_path / "config" / "tokens.toml")
    with MemoryStore.open(path, clock=clock) as store:
        app = create_app(store, tokens=tokens, mcp=True, mcp_tools="all", upload_dir=tmp_path / "uploads")
        with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as api:
            yield store, Doors(path, api)


def _write(store: MemoryStore, doors: Doors, tmp_path: Path) -> None:
    """Every door writes its sentence (a word of :data:`WORDS` each) into the one namespace."""
    lc._write(store, tmp_path)  # core, knowledge base, LangChain vector store/history/tools/middleware, LangGraph
    OpenKoiVectorStore(store, namespace=NS).add([TextNode(id_="node-1", text=f"The {WORDS['llama_vector_store']} "
                                                          "pamphlet lists the ferry times")])
    OpenKoiChatStore(store, namespace=NS).add_message(
        CHAT_KEY, ChatMessage(role="user", content=f"{WORDS['llama_chat_store']} is the second code word"))
    OpenKoiMemoryBlock(store, namespace=NS).remember([
        ChatMessage(role="user", content=f"My dentist appointment {WORDS['llama_memory_block']} moved to Thursday"),
        ChatMessage(role="assistant", content="Noted.")])

    doors.cli("add", f"Ann's bicycle frame number is {WORDS['cli_add']}", "-n", NS_TEXT)
    folder = tmp_path / "cli-files"
    folder.mkdir()
    (folder / "garden.txt").write_text(f"The {WORDS['cli_ingest']} garden plan puts tomatoes by the wall.\n")
    assert json.loads(doors.cli("ingest", str(folder), "-n", NS_TEXT, "--json"))["added"]

    added = doors.rest("POST", "/api/memories", {"text": f"Ann's library card is {WORDS['rest_add']}"}, status=201)
    assert added["event"] == "created"
    doors.rest("POST", "/api/kb/documents/text", {"name": "boat.txt", "text": f"The {WORDS['rest_document']} "
                                                  "boat manual says: check the bilge pump."}, status=201)

    assert doors.mcp("memory_save", {"content": f"Ann's gym membership is {WORDS['mcp_save']}"}).startswith("Saved")


def _readers(store: MemoryStore, doors: Doors) -> dict[str, Callable[[str], str]]:
    """reader -> ``read(word)``: the text that door gives back when asked for ``word``."""
    readers = lc._readers(store)
    llama_vectors = OpenKoiVectorStore(store, namespace=NS)
    index = VectorStoreIndex.from_vector_store(OpenKoiVectorStore(store, namespace=NS),
                                               embed_model=OpenKoiEmbedding(store.embedder))
    llama_retriever = OpenKoiRetriever(store, namespace=NS, similarity_top_k=50)
    block = OpenKoiMemoryBlock(store, namespace=NS, include_learnings=False, max_items=50)

    def llama_vector_store(word: str) -> str:
        query = VectorStoreQuery(query_str=word, mode=VectorStoreQueryMode.TEXT_SEARCH, similarity_top_k=50)
        found = " ".join(n.get_content() for n in llama_vectors.query(query).nodes)
        listed = " ".join(n.get_content() for n in llama_vectors.get_nodes())
        assert (word in found) == (word in listed), word  # listing agrees with search
        return found

    def cli_sessions(word: str) -> str:
        listing = json.loads(f"[{','.join(doors.cli('sessions', '-n', NS_TEXT, '--json').splitlines())}]")
        return "\n".join(doors.cli("sessions", session["id"]) for session in listing)

    def rest_search(word: str) -> str:
        hits = doors.rest("POST", "/api/memories/search", {"query": word, "limit": 50})["hits"]
        return " ".join(hit["memory"]["text"] for hit in hits)

    return {
        **readers,
        "chat_history": lambda word: " ".join(  # LangChain's history of both conversations (the LlamaIndex
            m.text for key in (CHAT_KEY, "thread-1")  # chat store added to the first)
            for m in OpenKoiChatMessageHistory(key, store, namespace=NS).messages),
        "llama_vector_store": llama_vector_store,
        # vectors only: the sentence with the word must come first
        "llama_index_from_vector_store": lambda word: index.as_retriever(similarity_top_k=3).retrieve(word)[0]
        .node.get_content(),
        "llama_retriever": lambda word: " ".join(r.node.get_content() for r in llama_retriever.retrieve(word)),
        "llama_memory_block": lambda word: block.recall(f"What about {word}?"),
        "llama_chat_store": lambda word: " ".join(
            m.content for key in (CHAT_KEY, "thread-1")
            for m in OpenKoiChatStore(store, namespace=NS).get_messages(key)),
        "cli_search": lambda word: doors.cli("search", word, "-n", NS_TEXT, "-l", "50"),
        "cli_kb_search": lambda word: doors.cli("kb", "search", word, "-n", NS_TEXT, "-l", "50"),
        "cli_sessions": cli_sessions,
        "rest_search": rest_search,
        "rest_kb_search": lambda word: " ".join(
            hit["text"] for hit in doors.rest("POST", "/api/kb/search", {"query": word, "limit": 50})),
        "mcp_memory_search": lambda word: doors.mcp("memory_search", {"query": word, "limit": 50}),
        "mcp_search_knowledge_base": lambda word: doors.mcp("searchKnowledgeBase", {"query": word, "limit": 50}),
    }


# -- the matrix -------------------------------------------------------------------------------------------


def test_every_door_reads_what_every_other_door_wrote(doors, tmp_path):
    store, door = doors
    _write(store, door, tmp_path)
    readers = _readers(store, door)
    assert set(readers) == set(READS)
    wrong = []
    for reader, read in readers.items():
        for writer, word in WORDS.items():
            found = word in read(word)
            if found != (writer in READS[reader]):
                wrong.append(f"{reader} {'finds' if found else 'misses'} what {writer} wrote ({word})")
    assert wrong == []


def test_what_the_cli_rest_and_mcp_wrote_is_one_memory(doors, tmp_path):
    """Beyond presence: the same records, whichever door asks for them (ids, texts and namespaces agree)."""
    store, door = doors
    _write(store, door, tmp_path)
    for writer in ("cli_add", "rest_add", "mcp_save"):
        word = WORDS[writer]
        [memory] = [m for m in store.list(namespace=NS_TEXT, kind="fact") if word in m.text]
        assert memory.namespace == NS_TEXT
        assert door.rest("GET", f"/api/memories/{memory.id}")["text"] == memory.text
        assert json.loads(door.cli("show", memory.id))["text"] == memory.text
        assert f"[id:{memory.id}] {memory.text}" in door.mcp("memory_search", {"query": word})
    documents = {d["file_name"]: d["id"] for d in door.rest("GET", "/api/kb/documents")}
    assert {"garden.txt", "boat.txt", "handbook.md"} <= set(documents)
    for name, word in (("garden.txt", WORDS["cli_ingest"]), ("boat.txt", WORDS["rest_document"])):
        full = door.mcp("getFullDocumentContent", {"documentId": documents[name]})
        assert word in full and word in door.cli("kb", "show", documents[name])
        assert word in store.documents.get_full_document(documents[name], namespace=NS_TEXT)


def test_langchain_history_and_llama_index_chat_store_are_one_conversation(store):
    """The same key and namespace: each reads what the other wrote, in order, and the core's session too."""
    history = OpenKoiChatMessageHistory("support-42", store, namespace=NS)
    chat = OpenKoiChatStore(store, namespace=NS)
    history.add_messages([HumanMessage("My order 1187 has not arrived"), AIMessage("Let me look it up.")])
    chat.add_message("support-42", ChatMessage(role="user", content="It was due on Monday"))
    history.add_messages([AIMessage("It ships tomorrow.")])
    said = ["My order 1187 has not arrived", "Let me look it up.", "It was due on Monday", "It ships tomorrow."]
    assert [m.content for m in history.messages] == said
    assert [m.content for m in chat.get_messages("support-42")] == said
    assert [m.role.value for m in chat.get_messages("support-42")] == ["user", "assistant", "user", "assistant"]
    assert [type(m).__name__ for m in history.messages] == ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage"]
    assert history.stored_session_id == chat.session_id("support-42") == f"{NS_TEXT}/support-42"
    assert [m.content for m in store.conversations.messages(history.stored_session_id)] == said
    # another namespace's conversation under the same key is another conversation (the control)
    other = OpenKoiChatStore(store, namespace=("memories", "bob"))
    assert other.get_messages("support-42") == []
    other.add_message("support-42", ChatMessage(role="user", content="Bob's parcel"))
    assert [m.content for m in history.messages] == said
    # clearing through one door clears it for the other
    chat.delete_messages("support-42")
    assert history.messages == [] and [m.content for m in other.get_messages("support-42")] == ["Bob's parcel"]


def test_the_cli_reads_a_namespace_as_every_class_does(doors, tmp_path):
    """A tuple namespace is the string it encodes to, in every door: ``("memories", "ann")`` is
    ``memories.ann.`` for the CLI, REST and MCP, never the two namespaces "memories" and "ann"."""
    store, door = doors
    store.add("Ann's passport number is CORE111", namespace=NS_TEXT)
    for stray in ("memories", "ann"):
        assert re.search("CORE111", door.cli("search", "CORE111", "-n", stray)) is None
        assert door.rest("POST", "/api/memories/search", {"query": "CORE111"}, namespace=stray)["hits"] == []
    assert "CORE111" in door.cli("search", "CORE111", "-n", NS_TEXT)  # the control

"""One memory, every door (issue 21, part 3), for LlamaIndex: in one file and one namespace,
what each door writes, each other door reads.

The writers: the core API (``store.add``, ``store.conversations``), the knowledge base
(``store.documents.ingest``), the CLI (``openkoi-memory add`` and ``ingest``), and the
LlamaIndex vector store, chat store, DB chat store and memory block. Each leaves a
sentence with its own code word. The readers: the core's search and conversations, the
vector store (alone and under ``VectorStoreIndex.from_vector_store``), the retriever, the
memory block and both chat stores. Every reader is checked against the exact set of writers
it is documented to read: the LlamaIndex classes are given the namespace as a tuple, the
core and the CLI as the string it encodes to.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from llama_index.core import VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from llama_index_openkoi import (
    OpenKoiChatStore,
    OpenKoiDBChatStore,
    OpenKoiEmbedding,
    OpenKoiMemoryBlock,
    OpenKoiRetriever,
    OpenKoiVectorStore,
)
from shared_core import MemoryStore
from shared_core.cli import main
from shared_core.namespaces import as_namespace

NS = ("users", "ann")
NS_TEXT = as_namespace(NS)  # "users.ann."
KEY = "trip"
EVERY_KIND = ["node", "document", "fact", "episode", "message"]

# writer -> its code word; the sentences share no other content word, so no write rule merges two
WORDS = {
    "core add": "QUOKKA",
    "cli add": "PANGOLIN",
    "documents.ingest": "NARWHAL",
    "cli ingest": "AXOLOTL",
    "vector store": "OKAPI",
    "chat store": "WOMBAT",
    "db chat store": "CAPYBARA",
    "memory block": "TAPIR",
    "core conversations": "MARMOT",
}
FACTS = {"core add", "cli add"}
DOCUMENTS = {"documents.ingest", "cli ingest"}
MESSAGES = {"chat store", "db chat store", "core conversations"}
EVERYTHING = set(WORDS)


@pytest.fixture
def memory(tmp_path) -> MemoryStore:
    """One file, one namespace, one sentence through every door."""
    path = tmp_path / "one.db"
    cli = CliRunner()

    def run(*args: str) -> None:
        result = cli.invoke(main, ["--db", str(path), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output

    run("add", "PANGOLIN: the spare key hangs behind the boiler", "-n", NS_TEXT)
    _folder(tmp_path / "cli-files", "AXOLOTL: invoices are archived every January")
    run("ingest", str(tmp_path / "cli-files"), "-n", NS_TEXT)

    store = MemoryStore.open(path)
    store.add("QUOKKA: the locker code lives in the blue notebook", namespace=NS_TEXT)
    store.documents.ingest(_folder(tmp_path / "files", "NARWHAL: the ferry leaves at 08:15 on weekdays"),
                           namespace=NS_TEXT)
    OpenKoiVectorStore(store, namespace=NS).add([TextNode(id_="okapi", text="OKAPI: sourdough needs feeding daily")])
    chat = OpenKoiChatStore(store, namespace=NS)
    chat.add_message(KEY, ChatMessage(role="user", content="WOMBAT: book a window seat on the train"))
    asyncio.run(OpenKoiDBChatStore(store, namespace=NS).add_message(
        KEY, ChatMessage(role="assistant", content="CAPYBARA: the seat reservation is confirmed")))
    store.conversations.append(chat.session_id(KEY), "user", "MARMOT: the hotel checkout is at noon",
                               namespace=NS_TEXT)
    OpenKoiMemoryBlock(store, namespace=NS).remember([
        ChatMessage(role="user", content="TAPIR: my dentist appointment moved to Thursday"),
        ChatMessage(role="assistant", content="Noted.")])
    yield store
    store.close()


def _folder(folder: Path, text: str) -> Path:
    folder.mkdir()
    (folder / "note.txt").write_text(text)
    return folder


def _read_by_search(search: Callable[[str], list[str]]) -> set[str]:
    """The writers whose code word ``search`` finds in what it returns."""
    return {writer for writer, word in WORDS.items() if any(word in text for text in search(word))}


def _texts_of_nodes(nodes) -> list[str]:
    return [n.get_content() for n in nodes]


def _core_search(store: MemoryStore) -> set[str]:
    return _read_by_search(lambda word: [h.text for h in store.search(word, namespace=NS_TEXT, limit=50)])


def _vector_store(store: MemoryStore, **kwargs) -> set[str]:
    vs = OpenKoiVectorStore(store, namespace=NS, **kwargs)
    query = lambda word: VectorStoreQuery(query_str=word, mode=VectorStoreQueryMode.TEXT_SEARCH,  # noqa: E731
                                          similarity_top_k=50)
    found = _read_by_search(lambda word: _texts_of_nodes(vs.query(query(word)).nodes))
    assert found == _read_by_search(lambda word: _texts_of_nodes(vs.get_nodes()))  # listing agrees with search
    return found


def _vector_store_index(store: MemoryStore) -> set[str]:
    index = VectorStoreIndex.from_vector_store(OpenKoiVectorStore(store, namespace=NS),
                                               embed_model=OpenKoiEmbedding(store.embedder))
    retriever = index.as_retriever(similarity_top_k=3)  # vectors only: each code word's sentence comes first
    return _read_by_search(lambda word: [retriever.retrieve(word)[0].node.get_content()])


def _retriever(store: MemoryStore) -> set[str]:
    retriever = OpenKoiRetriever(store, namespace=NS, similarity_top_k=50)
    return _read_by_search(lambda word: [r.node.get_content() for r in retriever.retrieve(word)])


def _memory_block(store: MemoryStore, **kwargs) -> set[str]:
    block = OpenKoiMemoryBlock(store, namespace=NS, include_learnings=False, max_items=50, **kwargs)
    return _read_by_search(lambda word: [block.recall(f"What about {word}?")])


def _chat_store(store: MemoryStore) -> set[str]:
    history = [m.content for m in OpenKoiChatStore(store, namespace=NS).get_messages(KEY)]
    return _read_by_search(lambda word: history)


def _db_chat_store(store: MemoryStore) -> set[str]:
    messages = asyncio.run(OpenKoiDBChatStore(store, namespace=NS).get_messages(KEY, status=None))
    return _read_by_search(lambda word: [m.content for m in messages])


def _core_conversations(store: MemoryStore) -> set[str]:
    session = OpenKoiChatStore(store, namespace=NS).session_id(KEY)
    return _read_by_search(lambda word: [m.content for m in store.conversations.messages(session)])


READERS: dict[str, tuple[Callable[[MemoryStore], set[str]], set[str]]] = {
    "core search": (_core_search, EVERYTHING),
    "vector store": (_vector_store, DOCUMENTS | {"vector store"}),
    "vector store, every kind": (lambda s: _vector_store(s, kinds=EVERY_KIND), EVERYTHING),
    "VectorStoreIndex.from_vector_store": (_vector_store_index, DOCUMENTS | {"vector store"}),
    "retriever": (_retriever, EVERYTHING),
    "memory block": (_memory_block, FACTS | {"memory block"}),
    "memory block, every kind": (lambda s: _memory_block(s, kinds=EVERY_KIND), EVERYTHING),
    "chat store": (_chat_store, MESSAGES),
    "db chat store": (_db_chat_store, MESSAGES),
    "core conversations": (_core_conversations, MESSAGES),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_each_door_reads_what_the_others_wrote(memory, reader):
    read, expected = READERS[reader]
    assert read(memory) == expected


def test_the_chat_history_is_one_conversation_in_order(memory):
    """The three message writers wrote into one session, which every chat door reads the same."""
    chat = OpenKoiChatStore(memory, namespace=NS)
    assert [m.content.split(":")[0] for m in chat.get_messages(KEY)] == ["WOMBAT", "CAPYBARA", "MARMOT"]
    assert chat.get_keys() == [KEY]
    assert asyncio.run(OpenKoiDBChatStore(memory, namespace=NS).get_keys()) == [KEY]

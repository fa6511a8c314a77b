"""Isolation (issue 21, part 4): user B cannot reach what user A stored, through any LlamaIndex door.

A secret is planted as user A through every door that writes (the core API, the knowledge base,
the vector store, both chat stores with the keys every user shares, the memory block). Each
test first shows that A reaches it through the door under test (so the test can fail), then
that B, with the same classes, keys and file, cannot: not by searching, not by listing, not
by asking for A's ids, and not by writing or deleting under the same keys.
"""

from __future__ import annotations

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from llama_index_openkoi import (
    OpenKoiChatStore,
    OpenKoiDBChatStore,
    OpenKoiEmbedding,
    OpenKoiKVStore,
    OpenKoiMemoryBlock,
    OpenKoiRetriever,
    OpenKoiVectorStore,
    openkoi_storage_context,
)
from shared_core import MemoryStore
from shared_core.namespaces import NamespaceTemplateError, as_namespace

WORD = "XYLOPHONE"
SECRET = f"The vault combination is {WORD}-7731"
EVERY_KIND = ["node", "document", "fact", "episode", "message"]
SESSION = "chat"  # the DB chat store's key (Memory's session id), the same for both users


@pytest.fixture(params=[("user:ann", "user:bob"), (("users", "ann"), ("users", "bob"))], ids=["strings", "tuples"])
def users(request):
    return request.param


@pytest.fixture
def planted(tmp_path, users):
    """A file where user A told every door the secret."""
    ann, _ = users
    store = MemoryStore.open(tmp_path / "shared.db")
    store.add(f"{SECRET} (a fact)", namespace=as_namespace(ann))
    folder = tmp_path / "ann-files"
    folder.mkdir()
    (folder / "vault.txt").write_text(f"{SECRET} (a document)")
    store.documents.ingest(folder, namespace=as_namespace(ann))
    OpenKoiVectorStore(store, namespace=ann).add([TextNode(id_="vault", text=f"{SECRET} (a node)")])
    buffer = ChatMemoryBuffer.from_defaults(chat_store=OpenKoiChatStore(store, namespace=ann))  # key "chat_history"
    buffer.put(ChatMessage(role="user", content=f"{SECRET} (a chat message)"))
    memory = Memory.from_defaults(session_id=SESSION, chat_store=OpenKoiDBChatStore(store, namespace=ann))
    memory.put(ChatMessage(role="user", content=f"{SECRET} (a Memory message)"))
    OpenKoiMemoryBlock(store, namespace=ann).remember([ChatMessage(role="user", content=f"{SECRET} (an episode)"),
                                                        ChatMessage(role="assistant", content="Noted.")])
    yield store
    store.close()


def _leaks(texts) -> list[str]:
    return [t for t in texts if WORD in t]


def test_the_vector_store(planted, users):
    ann, bob = users
    embed = OpenKoiEmbedding(planted.embedder)

    def everything(vs: OpenKoiVectorStore) -> list[str]:
        texts = [n.get_content() for n in vs.get_nodes()]
        for query in (VectorStoreQuery(query_str=WORD, mode=VectorStoreQueryMode.TEXT_SEARCH, similarity_top_k=50),
                      VectorStoreQuery(query_embedding=embed.get_query_embedding(SECRET), similarity_top_k=50),
                      VectorStoreQuery(query_str=SECRET, query_embedding=embed.get_query_embedding(SECRET),
                                       mode=VectorStoreQueryMode.HYBRID, similarity_top_k=50)):
            texts += [n.get_content() for n in vs.query(query).nodes]
        index = VectorStoreIndex.from_vector_store(vs, embed_model=embed)
        texts += [n.node.get_content() for n in index.as_retriever(similarity_top_k=50).retrieve(SECRET)]
        return texts

    a_ids = [n.node_id for n in OpenKoiVectorStore(planted, namespace=ann, kinds=EVERY_KIND).get_nodes()]
    assert len(_leaks(everything(OpenKoiVectorStore(planted, namespace=ann)))) >= 2  # A: the node and the document
    assert len(_leaks(everything(OpenKoiVectorStore(planted, namespace=ann, kinds=EVERY_KIND)))) >= 5

    for kinds in (("node", "document"), EVERY_KIND):
        bob_vs = OpenKoiVectorStore(planted, namespace=bob, kinds=kinds)
        assert _leaks(everything(bob_vs)) == []
        assert bob_vs.get_nodes(a_ids) == [] and bob_vs.get_nodes(["vault"]) == []
        bob_vs.delete_nodes(["vault"])  # B's own id space: nothing of A's goes
        bob_vs.clear()
    assert "vault" in [n.node_id for n in OpenKoiVectorStore(planted, namespace=ann).get_nodes(["vault"])]

    bob_storage = openkoi_storage_context(planted, namespace=bob)
    assert _leaks(n.get_content() for n in bob_storage.vector_store.get_nodes()) == []


def test_the_retriever(planted, users):
    ann, bob = users
    embed = OpenKoiEmbedding(planted.embedder)
    assert len(_leaks(r.node.get_content() for r in OpenKoiRetriever(planted, namespace=ann,
                                                                      similarity_top_k=50).retrieve(SECRET))) >= 5
    for retriever in (OpenKoiRetriever(planted, namespace=bob, similarity_top_k=50),
                      OpenKoiRetriever(planted, namespace=bob, similarity_top_k=50, embed_model=embed, fusion="vector"),
                      OpenKoiRetriever(planted, namespaces=[bob], similarity_top_k=50, include_archive=True)):
        assert _leaks(r.node.get_content() for r in retriever.retrieve(SECRET)) == []
        assert _leaks(r.node.get_content() for r in retriever.retrieve(WORD)) == []


def test_the_chat_stores(planted, users):
    ann, bob = users
    ann_chat = OpenKoiChatStore(planted, namespace=ann)
    assert _leaks(m.content for m in ann_chat.get_messages("chat_history"))

    bob_chat = OpenKoiChatStore(planted, namespace=bob)
    bob_buffer = ChatMemoryBuffer.from_defaults(chat_store=bob_chat)  # the same default key
    assert bob_buffer.get_all() == [] and bob_chat.get_keys() == []
    for key in ("chat_history", SESSION, ann_chat.session_id("chat_history")):
        assert bob_chat.get_messages(key) == [], key
        assert bob_chat.delete_messages(key) is None and bob_chat.delete_last_message(key) is None
    bob_buffer.put(ChatMessage(role="user", content="Bob's own message"))
    assert [m.content for m in bob_buffer.get_all()] == ["Bob's own message"]
    bob_buffer.reset()
    assert _leaks(m.content for m in ann_chat.get_messages("chat_history"))  # A's history is untouched


async def test_the_db_chat_store(planted, users):
    ann, bob = users
    ann_db = OpenKoiDBChatStore(planted, namespace=ann)
    assert _leaks(m.content for m in await ann_db.get_messages(SESSION, status=None))

    bob_db = OpenKoiDBChatStore(planted, namespace=bob)
    assert await bob_db.get_keys() == []
    for key in (SESSION, "chat_history", ann_db.session_id(SESSION)):
        assert await bob_db.get_messages(key, status=None) == [] and await bob_db.count_messages(key, None) == 0
        assert await bob_db.archive_oldest_messages(key, 10) == [] and await bob_db.delete_oldest_messages(key, 10) == []
        await bob_db.delete_messages(key)
    bob_memory = Memory.from_defaults(session_id=SESSION, chat_store=bob_db)
    assert await bob_memory.aget_all() == []
    await bob_memory.aput(ChatMessage(role="user", content="Bob's own message"))
    assert [m.content for m in await bob_memory.aget_all()] == ["Bob's own message"]
    assert _leaks(m.content for m in await ann_db.get_messages(SESSION, status=None))


def test_the_memory_block(planted, users):
    ann, bob = users
    question = "What is the vault combination?"
    assert WORD in OpenKoiMemoryBlock(planted, namespace=ann).recall(question)
    for kinds in (["fact", "episode"], EVERY_KIND):
        block = OpenKoiMemoryBlock(planted, namespace=bob, kinds=kinds, min_similarity=-1.0)  # every vector passes
        assert WORD not in block.recall(question) and WORD not in block.recall(SECRET)


def test_the_key_value_store(planted, users):
    ann, bob = users
    OpenKoiKVStore(planted, namespace=ann).put("vault", {"combination": SECRET})
    bob_kv = OpenKoiKVStore(planted, namespace=bob)
    assert bob_kv.get("vault") is None and bob_kv.get_all() == {} and bob_kv.delete("vault") is False
    assert OpenKoiKVStore(planted, namespace=ann).get("vault") == {"combination": SECRET}


@pytest.mark.parametrize("template", ["user:{user_id}", ("memories", "{langgraph_user_id}")],
                         ids=["string", "langmem-tuple"])
@pytest.mark.parametrize("build", [
    lambda store, ns: OpenKoiVectorStore(store, namespace=ns),
    lambda store, ns: openkoi_storage_context(store, namespace=ns),
    lambda store, ns: OpenKoiRetriever(store, namespace=ns),
    lambda store, ns: OpenKoiRetriever(store, namespaces=[ns]),
    lambda store, ns: OpenKoiRetriever(store, namespace_prefix=ns),
    lambda store, ns: OpenKoiChatStore(store, namespace=ns),
    lambda store, ns: OpenKoiDBChatStore(store, namespace=ns),
    lambda store, ns: OpenKoiMemoryBlock(store, namespace=ns),
    lambda store, ns: OpenKoiKVStore(store, namespace=ns),
], ids=["vector-store", "storage-context", "retriever", "retriever-namespaces", "retriever-prefix", "chat-store",
        "db-chat-store", "memory-block", "kv-store"])
def test_a_namespace_template_is_refused_never_taken_literally(store, build, template):
    with pytest.raises(NamespaceTemplateError, match=r"no per-run config.*resolve_namespace"):
        build(store, template)
    assert not any("{" in ns for ns in store.namespaces())


def test_chat_keys_of_namespaces_with_slashes_never_meet(store):
    """The scoped session id escapes '/', so ("team/a", "b") and ("team", "a/b") stay two sessions."""
    first = OpenKoiChatStore(store, namespace="team/a")
    second = OpenKoiChatStore(store, namespace="team")
    first.add_message("b", ChatMessage(role="user", content="first"))
    second.add_message("a/b", ChatMessage(role="user", content="second"))
    assert [m.content for m in first.get_messages("b")] == ["first"]
    assert [m.content for m in second.get_messages("a/b")] == ["second"]
    assert first.get_keys() == ["b"] and second.get_keys() == ["a/b"]

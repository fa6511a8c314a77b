"""The storage context in one file: KV store, document store, index store, ingestion dedup,
and an index that is built in one process and queried in another."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_helpers import HashEmbedding
from llama_index.core import Document, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import TextNode
from llama_index.core.storage.docstore.keyval_docstore import KVDocumentStore
from llama_index.core.storage.index_store.keyval_index_store import KVIndexStore

from llama_index_openkoi import (
    OpenKoiDocumentStore,
    OpenKoiIndexStore,
    OpenKoiKVStore,
    OpenKoiVectorStore,
    openkoi_storage_context,
)
from shared_core import MemoryStore

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


@pytest.fixture
def kv(store):
    return OpenKoiKVStore(store)


def test_kv_store_contract(kv):
    kv.put("a", {"x": 1})
    kv.put("b", {"x": 2}, collection="other")
    assert kv.get("a") == {"x": 1} and kv.get("a", collection="other") is None
    got = kv.get("a")
    got["x"] = 99  # values are copies, as in SimpleKVStore
    assert kv.get("a") == {"x": 1}
    kv.put_all([("c", {"x": 3}), ("d", {"x": 4})], batch_size=10)
    assert kv.get_all() == {"a": {"x": 1}, "c": {"x": 3}, "d": {"x": 4}}
    assert kv.delete("a") is True and kv.delete("a") is False
    assert kv.get_all(collection="other") == {"b": {"x": 2}}
    with pytest.raises(TypeError, match="dicts"):
        kv.put("bad", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        kv.put_all([("e", {})], batch_size=0)


async def test_kv_store_async_twins(kv):
    await kv.aput("a", {"x": 1})
    await kv.aput_all([("b", {"x": 2})], collection="c")
    assert await kv.aget("a") == {"x": 1}
    assert await kv.aget_all(collection="c") == {"b": {"x": 2}}
    assert await kv.adelete("a") is True
    assert await kv.aget("a") is None


def test_namespaces_isolate_kv_stores(store):
    alice, bob = OpenKoiKVStore(store, namespace="user:alice"), OpenKoiKVStore(store, namespace="user:bob")
    alice.put("k", {"who": "alice"})
    assert bob.get("k") is None
    store.erase_namespace("user:alice")
    assert alice.get_all() == {}


def test_document_store_and_index_store_live_in_the_file(tmp_path, clock):
    path = tmp_path / "docs.db"
    docstore = OpenKoiDocumentStore.from_path(path)
    assert isinstance(docstore, KVDocumentStore)
    doc = Document(text="Quarterly report: revenue grew", id_="report")
    node = TextNode(text="revenue grew", id_="chunk-1")
    node.relationships = {"1": doc.as_related_node_info()}
    docstore.add_documents([doc, node])
    docstore.set_document_hash("report", doc.hash)
    index_store = OpenKoiIndexStore.from_path(path)
    assert isinstance(index_store, KVIndexStore)
    index = VectorStoreIndex([], storage_context=StorageContext.from_defaults(
        vector_store=OpenKoiVectorStore(path=path, embed_dim=64), index_store=index_store), embed_model=HashEmbedding())

    again = OpenKoiDocumentStore.from_path(path)  # a second connection to the same file
    assert again.get_document("report").text == "Quarterly report: revenue grew"
    assert again.get_document_hash("report") == doc.hash
    assert again.get_ref_doc_info("report").node_ids == ["chunk-1"]
    assert OpenKoiIndexStore.from_path(path).get_index_struct(index.index_id).index_id == index.index_id
    again.delete_ref_doc("report")
    assert docstore.get_document("chunk-1", raise_error=False) is None


def test_ingestion_pipeline_dedups_through_the_docstore(store):
    storage = openkoi_storage_context(store)
    docs = [Document(text="Cats sleep sixteen hours a day.", id_="cats"),
            Document(text="Dogs were domesticated long ago.", id_="dogs")]

    def pipeline():
        return IngestionPipeline(transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), HashEmbedding()],
                                 docstore=storage.docstore, vector_store=storage.vector_store,
                                 docstore_strategy=DocstoreStrategy.UPSERTS)

    assert len(pipeline().run(documents=docs)) == 2
    assert len(storage.vector_store.get_nodes()) == 2
    assert pipeline().run(documents=docs) == []  # unchanged documents are skipped
    changed = [Document(text="Cats sleep twelve to sixteen hours.", id_="cats"), docs[1]]
    assert len(pipeline().run(documents=changed)) == 1  # the changed one is replaced, not duplicated
    texts = sorted(n.text for n in storage.vector_store.get_nodes())
    assert texts == ["Cats sleep twelve to sixteen hours.", "Dogs were domesticated long ago."]
    assert set(storage.docstore.get_all_document_hashes().values()) == {"cats", "dogs"}


def test_storage_context_is_all_ours(store):
    storage = openkoi_storage_context(store, namespace="project")
    assert isinstance(storage.vector_store, OpenKoiVectorStore)
    assert isinstance(storage.docstore, OpenKoiDocumentStore)
    assert isinstance(storage.index_store, OpenKoiIndexStore)
    assert storage.vector_store.client is store and storage.docstore._kvstore.client is store


_BUILD = textwrap.dedent("""
    import sys
    from llama_helpers import HashEmbedding
    from llama_index.core import Document, VectorStoreIndex
    from llama_index_openkoi import openkoi_storage_context

    storage = openkoi_storage_context(path=sys.argv[1], namespace="kb")
    docs = [Document(text="The staging database is backed up nightly at 02:00.", id_="ops"),
            Document(text="Lunch is served in the atrium on Fridays.", id_="office")]
    index = VectorStoreIndex.from_documents(docs, storage_context=storage, embed_model=HashEmbedding())
    index.set_index_id("handbook")
    storage.persist(persist_dir=sys.argv[2])  # harmless: our stores need no persist
    storage.vector_store.close()
    print("built")
""")


@pytest.mark.slow
def test_an_index_built_in_one_process_is_queried_in_another(tmp_path):
    path = tmp_path / "rag.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _BUILD, str(path), str(tmp_path / "persist")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "built"

    storage = openkoi_storage_context(path=path, namespace="kb")
    index = load_index_from_storage(storage, index_id="handbook", embed_model=HashEmbedding())
    hits = index.as_retriever(similarity_top_k=1).retrieve("when is the staging database backed up?")
    assert hits[0].node.ref_doc_id == "ops"
    assert "02:00" in hits[0].node.get_content()
    assert storage.docstore.get_document_hash("ops")  # dedup hashes came along in the same file
    with MemoryStore.open(path) as raw:  # and it really is one file
        assert raw.count(namespace="kb", kind="node") == 2
        assert "index_store/data" in raw.kv.collections(namespace="kb")
    storage.vector_store.close()

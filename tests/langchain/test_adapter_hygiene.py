"""Issue 21, part 6 through the LangChain doors: the per-request history factory does not leak
descriptors; LangGraph's index dims is checked against the model before a file is made."""

from __future__ import annotations

import gc
import os

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_openkoi import OpenKoiChatMessageHistory, OpenKoiStore
from shared_core import MemoryStore
from shared_core.embed import EmbeddingError


def _descriptors() -> int:
    for folder in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(folder):
            return len(os.listdir(folder))
    pytest.skip("this platform cannot list a process's file descriptors")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_300_requests_through_the_per_request_history_factory_keep_the_descriptors(tmp_path):
    path = tmp_path / "chat.db"
    chain = RunnableWithMessageHistory(
        RunnableLambda(lambda messages: AIMessage(f"you said {messages[-1].content}")),
        lambda session_id: OpenKoiChatMessageHistory(session_id, path=path),  # a new history (and store) per request
    )
    chain.invoke("warm up", config={"configurable": {"session_id": "s0"}})
    gc.collect()
    before = _descriptors()
    for i in range(300):
        chain.invoke(f"hello {i}", config={"configurable": {"session_id": f"s{i % 5}"}})
    gc.collect()
    assert _descriptors() <= before
    history = OpenKoiChatMessageHistory("s1", path=path)
    assert len(history.messages) == 2 * 60 and history.messages[-1].content == "you said hello 296"
    history.close()


def test_langgraph_index_dims_that_the_model_does_not_make_is_refused_before_the_file(tmp_path):
    path = tmp_path / "agent.db"
    model = DeterministicFakeEmbedding(size=64)
    with pytest.raises(EmbeddingError, match=r"1536-dimensional vectors but returned 64.*'dims': 64"):
        OpenKoiStore(path, index={"dims": 1536, "embed": model})
    assert not path.exists()
    store = OpenKoiStore(path, index={"dims": 64, "embed": model})  # the right one opens the same path
    store.put(("users", "ann"), "home", {"text": "Ann lives in Oslo"})
    assert [item.key for item in store.search(("users", "ann"), query="Oslo")] == ["home"]
    store.close()
    with MemoryStore.open(path, embedder=store.memory_store.embedder) as core:
        assert core.stats().dims == 64

"""One memory, every door: what one LangChain/LangGraph door writes, the others read.

In one file and one namespace (``("memories", "ann")``, the core's ``"memories.ann."``), each
door writes one thing with a word no other writes; each door then reads for every word. The
matrix says what each reader covers: the core API and the retriever read everything; the
vector store reads documents; the chat history reads sessions; ``memory_search``, the
middleware's prompt and ``OpenKoiStore`` read memories (facts, store items; ``memory_search``
documents too). A reader is checked both ways: it finds what is in its reach and shows
nothing outside it.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_openkoi import (
    OpenKoiChatMessageHistory,
    OpenKoiMemoryMiddleware,
    OpenKoiRetriever,
    OpenKoiStore,
    OpenKoiVectorStore,
    create_memory_tools,
)

USER = ("memories", "ann")
NS = "memories.ann."
TEMPLATE = ("memories", "{user_id}")
ANN = {"configurable": {"user_id": "ann"}}

# writer -> the word only it writes
WORDS = {
    "core": "CORE111",
    "knowledge_base": "KBASE222",
    "vector_store": "VECTOR333",
    "chat_history": "HISTORY444",
    "tools": "TOOLS555",
    "middleware": "Oslo",
    "langgraph_store": "STORE666",
}
FACTS = {"core", "tools", "middleware", "langgraph_store"}  # facts and store items: "memories"
DOCUMENTS = {"knowledge_base", "vector_store"}
SESSIONS = {"chat_history", "middleware"}  # the middleware's thread is a session too
READS = {
    "core": set(WORDS),
    "retriever": set(WORDS),
    "vector_store": DOCUMENTS,
    "chat_history": SESSIONS,
    "tools": FACTS | DOCUMENTS,
    "middleware": FACTS,
    "langgraph_store": FACTS,
}


class ScriptedModel(GenericFakeChatModel):
    prompts: list = []

    def __init__(self, replies: list, **kwargs: Any) -> None:
        super().__init__(messages=iter(replies), **kwargs)
        self.prompts = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(messages[0].text if isinstance(messages[0], SystemMessage) else "")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _write(store, tmp_path) -> None:
    store.add(f"Ann's passport number is {WORDS['core']}", namespace=NS)
    handbook = tmp_path / "handbook.md"
    handbook.write_text(f"# Runbook\n\nThe {WORDS['knowledge_base']} runbook says: restart the workers.\n",
                        encoding="utf-8")
    report = store.documents.ingest(handbook, namespace=NS)
    assert not report.failed
    OpenKoiVectorStore(store=store, namespace=USER).add_texts([f"The {WORDS['vector_store']} guide covers onboarding"])
    OpenKoiChatMessageHistory("chat-1", store, namespace=USER).add_messages(
        [HumanMessage(f"{WORDS['chat_history']} was the code word"), AIMessage("Understood.")])
    save = create_memory_tools(store, namespace=TEMPLATE, include=["memory_save"])[0]
    assert save.invoke({"content": f"Ann's locker code is {WORDS['tools']}"}, config=ANN).startswith("Saved")
    agent = create_agent(ScriptedModel([AIMessage("Nice to meet you, Ann.")]), [],
                         middleware=[OpenKoiMemoryMiddleware(store, namespace=TEMPLATE)])
    agent.invoke({"messages": [HumanMessage(f"Hi, my name is Ann and I live in {WORDS['middleware']}.")]},
                 {"configurable": {"user_id": "ann", "thread_id": "thread-1"}})
    OpenKoiStore(store=store).put(USER, "tea", {"content": f"Ann prefers {WORDS['langgraph_store']} tea"})


def _readers(store) -> dict[str, Any]:
    graph = OpenKoiStore(store=store)
    retriever = OpenKoiRetriever(store=store, namespace=TEMPLATE, k=50)
    vectors = OpenKoiVectorStore(store=store, namespace=USER)
    search = create_memory_tools(store, namespace=TEMPLATE)[1]
    assert search.name == "memory_search"

    def middleware(word: str) -> str:
        model = ScriptedModel([AIMessage("ok")])
        agent = create_agent(model, [], system_prompt="You help Ann.", middleware=[OpenKoiMemoryMiddleware(
            store, namespace=TEMPLATE, store_transcript=False, extract_facts=False, compact=False)])
        agent.invoke({"messages": [HumanMessage(f"What do you know about {word}?")]}, ANN)
        return model.prompts[0]

    return {
        "core": lambda word: " ".join(h.text for h in store.search(word, namespace=NS, kind=None, limit=50)),
        "retriever": lambda word: " ".join(d.page_content for d in retriever.invoke(word, ANN)),
        # pure vector similarity ranks every document: the best one must be the one with the word
        "vector_store": lambda word: vectors.similarity_search(word, k=1)[0].page_content,
        "chat_history": lambda word: " ".join(m.text for sid in ("chat-1", "thread-1")
                                              for m in OpenKoiChatMessageHistory(sid, store, namespace=USER).messages),
        "tools": lambda word: search.invoke({"query": word, "limit": 50}, config=ANN),
        "middleware": middleware,
        "langgraph_store": lambda word: " ".join(str(i.value) for i in graph.search(USER, query=word, limit=50)),
    }


def test_every_door_reads_what_every_other_door_wrote(file_store, tmp_path):
    _write(file_store, tmp_path)
    readers = _readers(file_store)
    wrong = []
    for reader, read in readers.items():
        for writer, word in WORDS.items():
            found = word in read(word)
            if found != (writer in READS[reader]):
                wrong.append(f"{reader} {'finds' if found else 'misses'} what {writer} wrote ({word})")
    assert wrong == []


def test_the_stores_query_search_puts_the_writers_word_first(file_store, tmp_path):
    """Beyond presence: the item that holds the word ranks first, whichever door wrote it."""
    _write(file_store, tmp_path)
    graph = OpenKoiStore(store=file_store)
    for writer in sorted(FACTS):
        best = graph.search(USER, query=WORDS[writer], limit=1)[0]
        assert WORDS[writer] in best.value["content"] and 0 < best.score <= 1, writer


@pytest.mark.parametrize("value", [{"content": "Ann is vegetarian"}, {"text": "Ann is vegetarian", "topic": "diet"}])
def test_store_items_reach_the_middlewares_prompt(store, value):
    """What OpenKoiStore.put (and LangMem's tools, which write {"content": ...}) wrote is recalled."""
    OpenKoiStore(store=store).put(USER, "diet", value)
    model = ScriptedModel([AIMessage("Green Leaf, then.")])
    agent = create_agent(model, [], system_prompt="You recommend restaurants.",
                         middleware=[OpenKoiMemoryMiddleware(store, namespace=USER)])
    agent.invoke({"messages": [HumanMessage("Recommend a vegetarian restaurant")]})
    assert "Ann is vegetarian" in model.prompts[0]
    assert "### From the agent's store" in model.prompts[0]


def test_store_items_that_share_only_stop_words_stay_out_of_the_prompt(store):
    graph = OpenKoiStore(store=store)
    graph.put(USER, "cat", {"content": "My cat is called Miso"})
    model = ScriptedModel([AIMessage("Sunny."), AIMessage("Miso.")])
    agent = create_agent(model, [], system_prompt="You help Ann.", middleware=[OpenKoiMemoryMiddleware(
        store, namespace=USER, store_transcript=False, extract_facts=False)])
    agent.invoke({"messages": [HumanMessage("What is the weather like?")]})
    agent.invoke({"messages": [HumanMessage("What is my cat called?")]})
    assert "Miso" not in model.prompts[0] and "- My cat is called Miso" in model.prompts[1]

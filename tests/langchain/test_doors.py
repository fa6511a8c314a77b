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
from shared_core import HashingEmbedder, MemoryStore
from shared_core.items import ITEM_KIND
from shared_core.relevance import relevant
from shared_core.tokens import count_tokens

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


def _section(prompt: str, header: str) -> list[str]:
    """The lines of one section of the prompt's ``## Memory`` (``[]`` when it is not there)."""
    lines = prompt.splitlines()
    if header not in lines:
        return []
    out = []
    for line in lines[lines.index(header) + 1:]:
        if line.startswith("#"):
            break
        out.append(line)
    return out


def _prompt(store, question: str, config: dict | None = None, **kwargs: Any) -> str:
    """The system prompt the model gets for ``question`` (nothing stored by the run itself)."""
    model = ScriptedModel([AIMessage("ok")])
    options = {"namespace": TEMPLATE, "store_transcript": False, "extract_facts": False, **kwargs}
    agent = create_agent(model, [], system_prompt="You help the user.",
                         middleware=[OpenKoiMemoryMiddleware(store, **options)])
    agent.invoke({"messages": [HumanMessage(question)]}, config or ANN)
    return model.prompts[0]


@pytest.mark.parametrize("value", [{"content": "Ann is vegetarian"}, {"text": "Ann is vegetarian", "topic": "diet"}])
def test_store_items_reach_the_middlewares_prompt(store, value):
    """What OpenKoiStore.put (and LangMem's tools, which write {"content": ...}) wrote is recalled."""
    OpenKoiStore(store=store).put(USER, "diet", value)
    model = ScriptedModel([AIMessage("Green Leaf, then.")])
    agent = create_agent(model, [], system_prompt="You recommend restaurants.",
                         middleware=[OpenKoiMemoryMiddleware(store, namespace=USER)])
    agent.invoke({"messages": [HumanMessage("Recommend a vegetarian restaurant")]})
    assert any("Ann is vegetarian" in line for line in _section(model.prompts[0], "### Relevant facts"))


def test_what_do_you_know_about_me_shows_langmem_items(store):
    """LangMem's tools write ``{"content": ...}`` under ``("memories", user)``: the profile question shows
    the user's items (with the core's facts), and none of another user's."""
    graph = OpenKoiStore(store=store)
    written = {"ann": ["Ann is vegetarian", "Ann's cat is called Miso"], "bob": ["Bob drives a red Volvo"]}
    for user, texts in written.items():
        for i, text in enumerate(texts):
            graph.put(("memories", user), f"memory-{i}", {"content": text})
    store.add("Ann lives in Oslo", namespace=NS)
    prompt = _prompt(store, "What do you know about me?")
    assert sorted(_section(prompt, "### Known facts")) == sorted(
        f"- {text}" for text in [*written["ann"], "Ann lives in Oslo"])
    assert "Volvo" not in prompt
    bob = _prompt(store, "What do you know about me?", {"configurable": {"user_id": "bob"}})
    assert _section(bob, "### Known facts") == ["- Bob drives a red Volvo"]  # the control: Bob's own item


@pytest.mark.parametrize("question", ["Recommend a restaurant for tonight", "Hi!", "What should I cook?"])
def test_a_generic_question_brings_store_items_into_the_prompt(clock, question):
    """No word of the question matches the item (the old keyword gate found nothing): the profile carries it.

    With the hashing embedder, which sees no meaning either: the static one finds "Ann is vegetarian"
    relevant to "What should I cook?", which then brings it in as a relevant fact instead."""
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        _generic_question(store, question)


def _generic_question(store, question):
    OpenKoiStore(store=store).put(USER, "diet", {"content": "Ann is vegetarian"})
    assert len(relevant(store, question, namespace=NS, kind=ITEM_KIND, limit=5)) == 0
    assert "- Ann is vegetarian" in _section(_prompt(store, question), "### Known facts")


@pytest.mark.parametrize("question", ["What is the weather like?", "What is my cat called?", "Recommend a drink",
                                      "What do you know about me?"])
def test_store_items_and_facts_take_the_same_place_in_the_prompt(store, question):
    """An item put with OpenKoiStore and a fact with the same text are listed in the same section."""
    texts = ["My cat is called Miso", "Ann is vegetarian", "Ann drinks oolong tea", "Ann lives in Oslo"]
    graph = OpenKoiStore(store=store)
    for i, text in enumerate(texts):
        graph.put(USER, f"memory-{i}", {"content": text})
        store.add(text, namespace="memories.bob.")
    as_items = _prompt(store, question)
    as_facts = _prompt(store, question, {"configurable": {"user_id": "bob"}})
    for header in ("### Known facts", "### Relevant facts"):
        assert sorted(_section(as_items, header)) == sorted(_section(as_facts, header)), header
    shown = _section(as_items, "### Known facts") + _section(as_items, "### Relevant facts")
    assert sorted(shown) == sorted(f"- {text}" for text in texts)


def test_store_items_share_the_memory_budget(store):
    """Items compete with facts within ``memory_tokens``; the one the question names comes first."""
    graph = OpenKoiStore(store=store)
    for i in range(30):
        graph.put(USER, f"project-{i}", {"content": f"Ann's project number {i} is code-named Atlas{i}"})
    store.add("Ann lives in Oslo", namespace=NS)
    base = "You help the user."
    roomy = _prompt(store, "Which project is Atlas17?")
    assert _section(roomy, "### Relevant facts")[0] == "- Ann's project number 17 is code-named Atlas17"
    assert "- Ann lives in Oslo" in _section(roomy, "### Known facts")
    tight = _prompt(store, "Which project is Atlas17?", memory_tokens=150)
    memory = tight.removeprefix(base).strip()
    assert count_tokens(memory) <= 150 and 0 < memory.count("Atlas") < roomy.count("Atlas")
    assert _section(tight, "### Relevant facts")[:1] == ["- Ann's project number 17 is code-named Atlas17"]

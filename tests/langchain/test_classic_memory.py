"""OpenKoiMemory: the classic chain memory (langchain-classic), history + recalled facts."""

from __future__ import annotations

import importlib
import sys

import pytest
from langchain_classic.chains import ConversationChain, LLMChain
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import PromptTemplate

from shared_core import MemoryStore

# the classic chains and memories are deprecated in LangChain 1.x (that is why this class exists)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class RecordingLLM(FakeListLLM):
    """FakeListLLM that keeps every prompt it was given."""

    prompts: list = []

    def _call(self, prompt, stop=None, run_manager=None, **kwargs):
        self.prompts.append(prompt)
        return super()._call(prompt, stop=stop, run_manager=run_manager, **kwargs)


def _llm(*responses: str) -> RecordingLLM:
    llm = RecordingLLM(responses=list(responses))
    llm.prompts = []
    return llm


PROMPT = PromptTemplate.from_template(
    "Facts about the user:\n{facts}\n\nConversation:\n{history}\nHuman: {input}\nAI:"
)


def test_conversation_chain_remembers_across_sessions_and_restarts(tmp_path):
    from langchain_openkoi import OpenKoiMemory

    path = tmp_path / "chat.db"
    with MemoryStore.open(path) as store:
        memory = OpenKoiMemory(store, session_id="monday", namespace="user:priya")
        assert memory.memory_variables == ["history", "facts"]
        llm = _llm("Nice to meet you, Priya.", "Noted.")
        chain = ConversationChain(llm=llm, memory=memory, prompt=PROMPT)
        chain.invoke({"input": "Hi, my name is Priya."})
        chain.invoke({"input": "I live in Lisbon."})
        assert "Human: Hi, my name is Priya.\nAI: Nice to meet you, Priya." in llm.prompts[1]
        assert [m.content for m in store.conversations.messages(memory.history.stored_session_id)] == [
            "Hi, my name is Priya.", "Nice to meet you, Priya.", "I live in Lisbon.", "Noted."]

    with MemoryStore.open(path) as store:  # a new process, a new session
        memory = OpenKoiMemory(store, session_id="tuesday", namespace="user:priya")
        llm = _llm("You live in Lisbon.")
        ConversationChain(llm=llm, memory=memory, prompt=PROMPT).invoke({"input": "Where do I live?"})
        prompt = llm.prompts[0]
        assert "- The user lives in Lisbon." in prompt.split("Conversation:")[0]  # recalled from monday
        assert prompt.split("Conversation:\n")[1] == "\nHuman: Where do I live?\nAI:"  # a fresh history


def test_the_stock_conversation_prompt_gets_the_facts_in_the_history(store):
    from langchain_openkoi import OpenKoiMemory

    store.add("The user's cat is called Whiskerino", namespace="u")
    memory = OpenKoiMemory(store, session_id="s", namespace="u", facts_key=None)
    assert memory.memory_variables == ["history"]
    llm = _llm("Whiskerino.")
    ConversationChain(llm=llm, memory=memory).invoke({"input": "What is my cat called?"})  # the default prompt
    assert "Relevant facts:\n- The user's cat is called Whiskerino" in llm.prompts[0]


def test_llm_chain_style_variables_and_messages(store):
    from langchain_openkoi import OpenKoiMemory

    store.add("The user prefers window seats", namespace="u")
    memory = OpenKoiMemory(store, session_id="s", namespace="u", input_key="question",
                           human_prefix="User", ai_prefix="Bot")
    llm = _llm("Booked a window seat.")
    prompt = PromptTemplate.from_template("{facts}\n{history}\nUser: {question}\nBot:")
    chain = LLMChain(llm=llm, prompt=prompt, memory=memory)
    chain.invoke({"question": "Book me a seat on the flight."})
    assert llm.prompts[0].startswith("- The user prefers window seats\n")
    values = memory.load_memory_variables({"question": "seat"})
    assert values["history"] == "User: Book me a seat on the flight.\nBot: Booked a window seat."
    as_messages = OpenKoiMemory(store, session_id="s", namespace="u", return_messages=True, facts_key=None)
    loaded = as_messages.load_memory_variables({"input": "which seat?"})["history"]
    assert isinstance(loaded[0], SystemMessage) and "window seats" in loaded[0].content
    assert loaded[1:] == [HumanMessage("Book me a seat on the flight."), AIMessage("Booked a window seat.")]
    assert as_messages.load_memory_variables({})["history"] == loaded[1:]  # no input, no facts


async def test_async_save_and_clear(store):
    from langchain_openkoi import OpenKoiMemory

    memory = OpenKoiMemory(store, session_id="s", namespace="u")
    await memory.asave_context({"input": "I speak Dutch."}, {"output": "Goed!"})
    assert "- The user speaks Dutch." in (await memory.aload_memory_variables({"input": "Dutch"}))["facts"]
    await memory.aclear()
    assert memory.load_memory_variables({"input": "x"})["history"] == ""
    quiet = OpenKoiMemory(store, session_id="t", namespace="v", extract_facts=False)
    quiet.save_context({"input": "I speak Welsh."}, {"output": "Da iawn."})
    assert store.list(namespace="v", kind="fact") == []


def test_bad_configuration(store):
    from langchain_openkoi import OpenKoiMemory

    with pytest.raises(ValueError, match="must differ"):
        OpenKoiMemory(store, session_id="s", facts_key="history")
    with pytest.raises(TypeError, match="own chat history"):
        OpenKoiMemory(store, session_id="s", chat_memory=None)
    with pytest.raises(ValueError, match="session_id"):
        OpenKoiMemory(store, session_id="")


def test_a_clear_import_error_without_langchain_classic(monkeypatch):
    import langchain_openkoi

    monkeypatch.delitem(sys.modules, "langchain_openkoi.memory", raising=False)
    for name in [n for n in sys.modules if n == "langchain_classic" or n.startswith("langchain_classic.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "langchain_classic", None)  # what "not installed" looks like to import
    with pytest.raises(ImportError, match="pip install langchain-classic"):
        from langchain_openkoi import OpenKoiMemory  # noqa: F401
    with pytest.raises(ImportError, match="classic"):
        importlib.import_module("langchain_openkoi.memory")
    # everything else stays importable
    fresh = importlib.reload(langchain_openkoi)
    assert fresh.OpenKoiChatMessageHistory is not None and "OpenKoiMemory" in fresh.__all__
    with pytest.raises(AttributeError):
        fresh.NoSuchThing  # noqa: B018

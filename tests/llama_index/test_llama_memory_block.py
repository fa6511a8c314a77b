"""OpenKoiMemoryBlock: flushed turns persist in the file; get returns token-budgeted recall."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from llama_index_openkoi import OpenKoiDBChatStore, OpenKoiMemoryBlock
from shared_core import MemoryStore
from shared_core.namespaces import NamespaceTemplateError
from shared_core.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[2]


def _turn(user: str, assistant: str) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=user), ChatMessage(role="assistant", content=assistant)]


@pytest.fixture
def block(store):
    return OpenKoiMemoryBlock(store, namespace="user:priya")


async def test_put_stores_each_turn_as_an_episode_in_the_database(store, block):
    flushed = [*_turn("My cat is called Miso.", "What a lovely name!"),
               ChatMessage(role="tool", content="lookup done"),
               *_turn("I fly to Lisbon on 14 March.", "Noted.")]
    for message in flushed:
        message.additional_kwargs["session_id"] = "chat-1"  # what Memory's aput does
    await block.aput(flushed)
    episodes = store.episodes.recent(10, namespace="user:priya")
    assert sorted(e.summary for e in episodes) == [
        "user: I fly to Lisbon on 14 March.\nassistant: Noted.",
        "user: My cat is called Miso.\nassistant: What a lovely name!\ntool: lookup done",
    ]
    assert {e.session_id for e in episodes} == {"chat-1"} and {e.channel for e in episodes} == {"llama_index"}
    assert not hasattr(block, "facts")  # nothing is kept in the Python object
    await block.aput([ChatMessage(role="assistant", content="   ")])  # nothing to remember
    assert len(store.episodes.recent(10, namespace="user:priya")) == 2


async def test_get_recalls_what_matches_the_latest_user_message(store, block):
    store.add("Priya is allergic to peanuts", kind="fact", namespace="user:priya")
    store.add("Priya's sister is called Anika", kind="fact", namespace="user:priya")
    store.add("Bob is allergic to cats", kind="fact", namespace="user:bob")
    block.remember(_turn("Book the table for Friday at 8pm.", "Booked at Tasca do Chico."))
    history = [*_turn("hello", "hi!"), ChatMessage(role="user", content="Which food am I allergic to?")]
    recalled = await block.aget(history)
    assert recalled == "- Priya is allergic to peanuts"  # not Anika, not Bob's namespace, not the booking
    booking = await block.aget([ChatMessage(role="user", content="which table did you book on friday?")])
    assert "Tasca do Chico" in booking
    assert await block.aget([]) == "" and await block.aget(None) == ""
    assert await block.aget([ChatMessage(role="assistant", content="")]) == ""


async def test_the_recall_stays_within_the_token_budget(store):
    for i in range(12):
        store.add(f"Project Falcon milestone {i} is due in week {i + 10} of the roadmap", kind="fact", dedup=False)
    wide = OpenKoiMemoryBlock(store, token_budget=1000, max_items=5, include_learnings=False)
    assert (await wide.aget([ChatMessage(role="user", content="Falcon milestone")])).count("\n- ") == 4
    narrow = OpenKoiMemoryBlock(store, token_budget=40, include_learnings=False)
    text = await narrow.aget([ChatMessage(role="user", content="Falcon milestone")])
    assert text and count_tokens(text) <= 40 and text.count("- ") < 5
    assert await OpenKoiMemoryBlock(store, token_budget=3).aget([ChatMessage(role="user", content="Falcon")]) == ""


async def test_learnings_recall_fills_what_is_left(store):
    store.learnings.add("Never run the database migration without a backup", "AntiPattern")
    store.add("The database migration is scheduled for Sunday", kind="fact")
    question = [ChatMessage(role="user", content="Can you run the database migration now?")]
    text = await OpenKoiMemoryBlock(store).aget(question)
    assert text.startswith("- The database migration is scheduled for Sunday")
    assert "## Recalled from memory" in text and "Never run the database migration without a backup" in text
    without = await OpenKoiMemoryBlock(store, include_learnings=False).aget(question)
    assert "Never run" not in without


async def test_only_recalled_memories_count_as_accessed(store):
    hit = store.add("The office wifi password is on the fridge", kind="fact")
    miss = store.add("Quarterly taxes are due in April", kind="fact")
    await OpenKoiMemoryBlock(store).aget([ChatMessage(role="user", content="what is the wifi password?")])
    assert store.get(hit).access_count == 1 and store.get(miss).access_count == 0


async def test_truncate_drops_the_least_relevant_items_first(store):
    block = OpenKoiMemoryBlock(store)
    content = "- first fact\n- second fact\n  continued\n## Recalled from memory\n### Avoid\n- lesson"
    assert await block.atruncate(content, 1) == "- first fact\n- second fact\n  continued"
    learnings = sum(count_tokens(line + "\n") for line in ("- lesson", "### Avoid", "## Recalled from memory"))
    assert await block.atruncate(content, learnings) == "- first fact\n- second fact\n  continued"
    assert await block.atruncate(content, learnings + 1) == "- first fact"
    assert await block.atruncate(content, 10_000) is None


async def test_memories_that_share_only_stop_words_with_the_message_are_not_recalled(store):
    """Issue 21: "What is the weather like?" recalled "My cat is called Miso." (both say "is")."""
    store.add("My cat is called Miso.", namespace="user:priya")
    store.add("The flight to Lisbon was on a Tuesday.", namespace="user:priya")
    block = OpenKoiMemoryBlock(store, namespace="user:priya", include_learnings=False)
    for question in ("What is the weather like?", "Is it the one?", "What do you think about that?"):
        assert await block.aget([ChatMessage(role="user", content=question)]) == "", question
    assert await block.aget([ChatMessage(role="user", content="What is my cat called?")]) == "- My cat is called Miso."
    assert await block.aget([ChatMessage(role="user", content="When was the flight?")]) == (
        "- The flight to Lisbon was on a Tuesday.")


def test_a_tuple_namespace_reads_as_everywhere_else_and_a_template_is_refused(store):
    store.add("Ann keeps bees", namespace="users.ann.")
    block = OpenKoiMemoryBlock(store, namespace=("users", "ann"), include_learnings=False)
    assert block.namespace == "users.ann." and block.recall("who keeps bees?") == "- Ann keeps bees"
    with pytest.raises(NamespaceTemplateError, match=r"OpenKoiMemoryBlock.*resolve_namespace"):
        OpenKoiMemoryBlock(store, namespace="user:{user_id}")
    with pytest.raises(NamespaceTemplateError, match="langgraph_user_id"):
        OpenKoiMemoryBlock(store, namespace=("memories", "{langgraph_user_id}"))


def test_bad_settings_are_refused(store):
    with pytest.raises(ValueError, match="namespace"):
        OpenKoiMemoryBlock(store, namespace="")
    with pytest.raises(ValueError, match="token_budget"):
        OpenKoiMemoryBlock(store, token_budget=0)


_FIRST_PROCESS = textwrap.dedent("""
    import sys
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory
    from shared_core import MemoryStore
    from llama_index_openkoi import OpenKoiDBChatStore, OpenKoiMemoryBlock

    store = MemoryStore.open(sys.argv[1])
    memory = Memory.from_defaults(
        session_id="monday", chat_store=OpenKoiDBChatStore(store), token_limit=160, token_flush_size=40,
        chat_history_token_ratio=0.5, memory_blocks=[OpenKoiMemoryBlock(store, namespace="user:priya")],
    )
    memory.put(ChatMessage(role="user", content="My cat is called Miso and she is three years old."))
    memory.put(ChatMessage(role="assistant", content="Miso is a lovely name!"))
    memory.put(ChatMessage(role="user", content="My passport number is X1234567, keep it safe."))
    memory.put(ChatMessage(role="assistant", content="I will remember it."))
    for i in range(10):
        memory.put(ChatMessage(role="user", content=f"Small talk {i}: the weather in Porto is sunny today."))
        memory.put(ChatMessage(role="assistant", content=f"Reply {i}: enjoy the sunshine and the river."))
    print(len(memory.get_all()), len(memory.get()))
    store.close()
""")


def test_memory_chat_store_and_block_across_a_restart(tmp_path):
    path = tmp_path / "agent.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _FIRST_PROCESS, str(path)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    total, window = map(int, done.stdout.split())
    assert total == 24 and window < total  # the early turns were flushed out of the window

    with MemoryStore.open(path) as store:  # new objects, new process, same file
        block = OpenKoiMemoryBlock(store, namespace="user:priya")
        memory = Memory.from_defaults(session_id="monday", chat_store=OpenKoiDBChatStore(store), token_limit=160,
                                      memory_blocks=[block])
        assert len(memory.get_all()) == 24  # the whole history is in the file
        assert all("Miso" not in m.content for m in memory.get_all(status=None)[-window:])
        prompt = memory.get(input="What is my cat called?")
        assert prompt[0].role == "system" and "Miso" in prompt[0].content  # recalled from the block's memory
        recalled = prompt[0].content
        assert "Small talk" not in recalled  # turns matching only common words stay out
        assert recalled.index("Miso") < recalled.find("passport") or "passport" not in recalled  # best first

        tuesday = Memory.from_defaults(session_id="tuesday", chat_store=OpenKoiDBChatStore(store),
                                       memory_blocks=[block])
        assert tuesday.get_all() == []  # a new conversation...
        prompt = tuesday.get(input="Remind me of my passport number")
        assert "X1234567" in prompt[0].content  # ...with the same long-term memory

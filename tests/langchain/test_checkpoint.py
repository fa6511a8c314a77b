"""LangGraph's SQLite checkpointer in the store's file: one file holds the agent's whole memory."""

from __future__ import annotations

import threading

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langchain_openkoi import OpenKoiAsyncSaver, OpenKoiSaver, OpenKoiStore
from shared_core import MemoryStore


def _graph():
    def reply(state: MessagesState) -> dict:
        return {"messages": [AIMessage(f"reply {len(state['messages'])}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    return graph


def test_thread_state_lives_beside_the_memories(tmp_path):
    path = tmp_path / "agent.db"
    thread = {"configurable": {"thread_id": "t1"}}
    with OpenKoiStore(path) as store, OpenKoiSaver(store) as saver:
        app = _graph().compile(checkpointer=saver, store=store)
        app.invoke({"messages": [HumanMessage("hello")]}, thread)
        store.put(("memories", "u1"), "k", {"text": "likes tea"})
    with OpenKoiStore(path) as store, OpenKoiSaver(path) as saver:  # a restart: new objects, same file
        app = _graph().compile(checkpointer=saver, store=store)
        assert [m.content for m in app.get_state(thread).values["messages"]] == ["hello", "reply 1"]
        app.invoke({"messages": [HumanMessage("again")]}, thread)
        assert len(app.get_state(thread).values["messages"]) == 4
        assert store.get(("memories", "u1"), "k").value == {"text": "likes tea"}
        db = store.memory_store.db
        if db.dialect == "sqlite":
            tables = {row[0] for row in db.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
            assert {"checkpoints", "writes", "memory_chunks"} <= tables
        else:  # LangGraph's PostgresSaver, in the memory's schema
            tables = {row[0] for row in db.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", (db.schema,))}
            assert {"checkpoints", "checkpoint_writes", "memory_chunks"} <= tables
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == ["agent.db"]


def test_checkpointer_first_then_store(tmp_path):
    path = tmp_path / "fresh.db"
    with OpenKoiSaver(path) as saver:
        _graph().compile(checkpointer=saver).invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "x"}})
    with MemoryStore.open(path) as core:
        core.add("the store migrates a file that already holds checkpoints")
        assert core.db.scalar("SELECT count(*) FROM checkpoints") > 0


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "busy.db"
    with OpenKoiStore(path) as store, OpenKoiSaver(store) as saver:
        app = _graph().compile(checkpointer=saver)
        errors: list[BaseException] = []

        def run_graph() -> None:
            try:
                for i in range(15):
                    app.invoke({"messages": [HumanMessage(f"m{i}")]}, {"configurable": {"thread_id": "busy"}})
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        def put_items() -> None:
            try:
                for i in range(30):
                    store.put(("load",), f"k{i}", {"text": f"item {i}"})
            except BaseException as exc:  # pragma: no cover
                errors.append(exc)

        threads = [threading.Thread(target=run_graph), threading.Thread(target=put_items)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        assert len(store.search(("load",), limit=100)) == 30
        assert len(app.get_state({"configurable": {"thread_id": "busy"}}).values["messages"]) == 30
        if store.memory_store.db.dialect == "sqlite":
            assert store.memory_store.db.query("PRAGMA integrity_check") == [("ok",)]


async def test_async_saver(tmp_path):
    path = tmp_path / "async.db"
    thread = {"configurable": {"thread_id": "a"}}
    with OpenKoiStore(path) as store:
        async with OpenKoiAsyncSaver(store) as saver:
            app = _graph().compile(checkpointer=saver, store=store)
            await app.ainvoke({"messages": [HumanMessage("hello")]}, thread)
        async with OpenKoiAsyncSaver(path) as saver:
            app = _graph().compile(checkpointer=saver)
            assert len((await app.aget_state(thread)).values["messages"]) == 2

"""Issue 21, part 6: a store dropped without close() lets its files go; a wrong dims never makes a file;
a deleted database's leftover folder never blocks a new one."""

from __future__ import annotations

import gc
import logging
import os
import threading

import numpy as np
import pytest

from shared_core import MemoryStore
from shared_core.db.postgres.pool import POOLS
from shared_core.embed import EmbeddingError
from shared_core.files import data_dir_of


def _descriptors() -> int:
    for folder in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(folder):
            return len(os.listdir(folder))
    pytest.skip("this platform cannot list a process's file descriptors")


@pytest.mark.slow
def test_300_stores_opened_by_path_and_dropped_do_not_keep_descriptors(tmp_path, monkeypatch):
    # as a program runs: the PostgreSQL test harness keeps each memory's pool open after its last store
    # (POOLS.linger), where a pool that once ran a search and its vector side at the same time keeps a
    # second connection, more often on a busy machine
    monkeypatch.setattr(POOLS, "linger", False)
    path = tmp_path / "agent.db"
    MemoryStore.open(path).close()  # created once; what follows is the per-request pattern
    gc.collect()
    before = _descriptors()
    for i in range(300):
        store = MemoryStore.open(path)
        store.conversations.append(f"chat-{i % 7}", "user", f"hello {i}")
        store.search("hello", limit=1)
        del store  # never closed
    gc.collect()
    assert _descriptors() <= before


def test_a_dropped_store_stops_its_checkpoint_thread_and_closes_its_connections(tmp_path, sqlite_paths):
    def checkpointers() -> int:
        return sum(t.name == "openkoi-checkpoint" and t.is_alive() for t in threading.enumerate())

    gc.collect()
    threads, before = checkpointers(), _descriptors()
    store = MemoryStore.open(tmp_path / "busy.db")
    store.add_many([f"memory number {i}" for i in range(1200)], dedup=False)  # enough writes to start one
    for i in range(3):
        store.add(f"one more {i}")
    assert checkpointers() == threads + 1
    del store
    gc.collect()
    for _ in range(200):  # the thread ends on its own (told to stop, not joined)
        if checkpointers() == threads:
            break
        threading.Event().wait(0.01)
    assert checkpointers() == threads
    assert _descriptors() <= before


class _Claims1536:
    """A 64-dimensional model declared as 1536-dimensional (LangGraph's index={"dims": 1536, ...} habit)."""

    name = "claims-1536"
    dims = 1536

    def embed(self, texts):
        rng = np.random.default_rng(7)
        return rng.standard_normal((len(texts), 64)).astype(np.float32)


class _Right64(_Claims1536):
    dims = 64


def test_a_dims_the_embedder_does_not_make_is_refused_before_the_file_exists(tmp_path):
    path = tmp_path / "wrong.db"
    with pytest.raises(EmbeddingError, match=r"says it makes 1536-dimensional vectors but returned 64.*dims=64"):
        MemoryStore.open(path, embedder=_Claims1536())
    assert not path.exists() and not data_dir_of(str(path)).exists()
    with MemoryStore.open(path, embedder=_Right64()) as store:  # the file was never recorded as 1536-d
        store.add("The user lives in Oslo")
        assert store.stats().dims == 64 and len(store.search("Oslo")) == 1


def test_a_new_memory_in_memory_is_checked_too():
    with pytest.raises(EmbeddingError, match="returned 64"):
        MemoryStore.open(":memory:", embedder=_Claims1536())


def test_a_leftover_files_folder_of_a_deleted_database_never_blocks_a_new_one(tmp_path, sqlite_paths, caplog):
    path = tmp_path / "agent.db"
    with MemoryStore.open(path) as old:
        old.conversations.append("chat-1", "user", "I live in Oslo")
        folder = old.data_dir
    assert folder == tmp_path / "agent.db.files" and (folder / "sessions").is_dir()
    for name in ("agent.db", "agent.db-wal", "agent.db-shm", "agent.db-lock"):
        (tmp_path / name).unlink(missing_ok=True)  # the database is deleted, its folder is not
    with caplog.at_level(logging.WARNING, logger="openkoi.store"), MemoryStore.open(path) as new:
        new.conversations.append("chat-1", "user", "I live in Bergen")  # the same session id, too
        assert [m.content for m in new.conversations.messages("chat-1")] == ["I live in Bergen"]
        assert new.conversations.transcript_path("chat-1").read_text(encoding="utf-8").count("\n") == 1
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("agent.db.files.old-")]
    assert len(kept) == 1 and "I live in Oslo" in (kept[0] / "sessions" / "chat-1.jsonl").read_text(encoding="utf-8")
    assert "left by a deleted database" in caplog.text and kept[0].name in caplog.text
    with MemoryStore.open(path) as again:  # an existing database keeps its own folder
        assert [m.content for m in again.conversations.messages("chat-1")] == ["I live in Bergen"]
    assert [p.name for p in tmp_path.iterdir() if ".old-" in p.name] == [kept[0].name]


def test_seed_000_layout_sets_aside_only_the_sessions_folder(tmp_path, sqlite_paths):
    path = tmp_path / "openkoi.db"
    with MemoryStore.open(path) as old:
        old.conversations.append("chat-1", "user", "I live in Oslo")
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    for name in ("openkoi.db", "openkoi.db-wal", "openkoi.db-shm", "openkoi.db-lock"):
        (tmp_path / name).unlink(missing_ok=True)
    with MemoryStore.open(path) as new:
        new.conversations.append("chat-1", "user", "I live in Bergen")
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"  # the folder is shared: left alone
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("sessions.old-")]) == 1

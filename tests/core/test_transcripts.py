"""Session transcripts: sessions/<id>.jsonl beside the database, always in step with it."""

from __future__ import annotations

import json

import pytest

from shared_core import ConfigError, MemoryStore, StorageError
from shared_core.conversations.transcripts import transcript_name


def _open(path, clock, **config):
    return MemoryStore.open(path, clock=clock, config={"conversations": config} if config else {})


def test_transcript_lines_beside_the_database(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        convs = store.conversations
        convs.append("chat-1", "user", "hello", platform="cli", metadata={"k": 1})
        convs.append("chat-1", "assistant", "", tool_calls=[{"name": "t", "args": {}}], additional_kwargs={"x": [1]})
        path = tmp_path / "sessions" / "chat-1.jsonl"
        assert convs.transcript_path("chat-1") == path and convs.transcript_dir == tmp_path / "sessions"
        assert store.data_dir == tmp_path
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert lines == convs.transcript("chat-1")
        assert lines[0] == {"v": 1, "message_id": lines[0]["message_id"], "session_id": "chat-1",
                            "namespace": "default", "seq": 1, "role": "user", "content": "hello", "platform": "cli",
                            "metadata": {"k": 1}, "sent_at": "2026-01-01T00:00:00.000000Z",
                            "stored_at": "2026-01-01T00:00:00.000000Z"}
        assert lines[1]["tool_calls"] == [{"name": "t", "args": {}}] and lines[1]["additional_kwargs"] == {"x": [1]}
        assert convs.session("chat-1").transcript_path == "sessions/chat-1.jsonl"
        assert convs.reconcile(full=True).clean  # the file is exactly what the rows regenerate


def test_deletes_and_inserts_keep_the_file_in_step(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        convs = store.conversations
        ids = [convs.append("s", "user", f"line {i}").message_id for i in range(6)]
        convs.delete_last("s")
        convs.delete(ids[2])
        convs.insert("s", 0, "system", "inserted first")
        convs.pin(ids[0])  # memory state is not part of the transcript
        seen = [line["content"] for line in convs.transcript("s")]
        assert seen == ["inserted first", "line 0", "line 1", "line 3", "line 4"]
        assert convs.reconcile(full=True).clean
        convs.clear("s")
        assert convs.transcript("s") == [] and convs.transcript_path("s").stat().st_size == 0
        convs.delete_session("s")
        assert not convs.transcript_path("s").exists()


def test_truncated_last_line_is_repaired_on_reopen(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        for i in range(4):
            store.conversations.append("s", "user", f"message {i}")
        path = store.conversations.transcript_path("s")
    whole = path.read_bytes()
    path.write_bytes(whole[:-17])  # cut into the last line
    with _open(tmp_path / "openkoi.db", clock) as store:
        assert path.read_bytes() == whole  # rebuilt from the database on open
        assert store.conversations.reconcile(full=True).clean


def test_a_line_from_a_transaction_that_never_committed_is_dropped(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        store.conversations.append("s", "user", "committed")
        path = store.conversations.transcript_path("s")
    whole = path.read_bytes()
    with open(path, "ab") as handle:  # what a process killed between append and commit leaves behind
        handle.write(b'{"v":1,"message_id":"ghost","seq":2,"role":"user","content":"never comm')
    with _open(tmp_path / "openkoi.db", clock) as store:
        assert path.read_bytes() == whole
        assert store.conversations.count("s") == 1


def test_the_next_append_repairs_before_writing(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        convs = store.conversations
        convs.append("s", "user", "one")
        path = convs.transcript_path("s")
        with open(path, "ab") as handle:  # another process died mid-append while this one was open
            handle.write(b'{"partial":')
        convs.append("s", "user", "two")
        assert [line["content"] for line in convs.transcript("s")] == ["one", "two"]
        path.unlink()  # someone deleted it: regenerated
        convs.append("s", "user", "three")
        assert [line["content"] for line in convs.transcript("s")] == ["one", "two", "three"]


def test_rolled_back_transaction_leaves_no_line(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        convs = store.conversations
        convs.append("s", "user", "kept")
        before = convs.transcript_path("s").read_bytes()
        with pytest.raises(RuntimeError):
            with store.transaction():
                convs.append("s", "user", "rolled back")
                raise RuntimeError("boom")
        assert convs.transcript_path("s").read_bytes() == before and convs.count("s") == 1


def test_full_reconcile_catches_edits_of_the_same_size(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        convs = store.conversations
        convs.append("s", "user", "original text")
        path = convs.transcript_path("s")
        whole = path.read_bytes()
        path.write_bytes(whole.replace(b"original", b"tampered"))
        assert convs.reconcile().clean  # the size matches: the cheap check cannot tell
        report = convs.reconcile(full=True)
        assert report.repaired == ["s"] and path.read_bytes() == whole


def test_stray_files_are_removed(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        store.conversations.append("s", "user", "x")
    (tmp_path / "sessions" / "orphan.jsonl").write_text("{}\n")
    (tmp_path / "sessions" / "s.jsonl.tmp-abcd").write_text("half")
    (tmp_path / "sessions" / "notes.txt").write_text("not ours to touch")
    with _open(tmp_path / "openkoi.db", clock) as store:
        report = store.conversations.reconcile()
        assert report.clean  # already cleaned on open
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == [".openkoi-store", "notes.txt", "s.jsonl"]


def test_memory_stores_keep_no_transcript_unless_given_a_directory(tmp_path, clock):
    with MemoryStore.open(":memory:", clock=clock) as store:
        store.conversations.append("s", "user", "x")
        assert store.conversations.transcript_dir is None and store.conversations.transcript("s") == []
    with pytest.raises(ConfigError, match="transcript_dir"):
        MemoryStore.open(":memory:", clock=clock, config={"conversations": {"transcripts": "on"}})
    target = tmp_path / "transcripts"
    with MemoryStore.open(":memory:", clock=clock,
                          config={"conversations": {"transcripts": "on", "transcript_dir": str(target)}}) as store:
        store.conversations.append("s", "user", "kept on disk")
        assert (target / "s.jsonl").exists()
        assert store.conversations.session("s").transcript_path == str(target / "s.jsonl")
    # a fresh in-memory store is another database: it must not take over that directory
    with MemoryStore.open(":memory:", clock=clock,
                          config={"conversations": {"transcripts": "on", "transcript_dir": str(target)}}) as store:
        with pytest.raises(StorageError, match="belongs to another"):
            store.conversations.append("s", "user", "clash")
        assert store.conversations.count("s") == 0


def test_transcripts_off_and_back_on(tmp_path, clock):
    path = tmp_path / "openkoi.db"
    with _open(path, clock, transcripts="off") as store:
        store.conversations.append("s", "user", "written while off")
        assert not (tmp_path / "sessions").exists()
    with _open(path, clock) as store:
        lines = store.conversations.transcript("s")  # generated on open
        assert [line["content"] for line in lines] == ["written while off"]


def test_config_is_validated():
    with pytest.raises(ConfigError, match="transcripts"):
        MemoryStore.open(":memory:", config={"conversations": {"transcripts": "maybe"}})
    with pytest.raises(ConfigError):
        MemoryStore.open(":memory:", config={"conversations": {"embedding_boundary_window": 2.0}})


@pytest.mark.parametrize(
    ("session_id", "expected"),
    [
        ("chat-42", "chat-42.jsonl"),
        ("0b6b1c1e-2f1d-4b5e-9a57-1b2c3d4e5f60", "0b6b1c1e-2f1d-4b5e-9a57-1b2c3d4e5f60.jsonl"),
    ],
)
def test_safe_ids_are_file_names(session_id, expected):
    assert transcript_name(session_id) == expected


def test_other_ids_become_distinct_safe_names(tmp_path, clock):
    odd = ["User/42", "user/42", "../etc/passwd", "CON", "con", "a b", "émoji 🐟", "x" * 300, "."]
    names = [transcript_name(i) for i in odd]
    assert len(set(names)) == len(odd)
    for name in names:
        assert "/" not in name and not name.startswith(".") and name.endswith(".jsonl") and len(name) < 100
    with _open(tmp_path / "openkoi.db", clock) as store:
        for session_id in odd:
            store.conversations.append(session_id, "user", "hi")
        assert sorted(p.name for p in (tmp_path / "sessions").glob("*.jsonl")) == sorted(names)
        assert store.conversations.reconcile(full=True).clean


def test_session_rows_made_elsewhere_get_no_empty_file(tmp_path, clock):
    with _open(tmp_path / "openkoi.db", clock) as store:
        store.db.execute("INSERT INTO sessions (id, created_at, updated_at) VALUES ('task-session', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')")
    with _open(tmp_path / "openkoi.db", clock) as store:
        assert store.conversations.reconcile().clean
        assert not store.conversations.transcript_path("task-session").exists()
        store.conversations.append("task-session", "user", "now it has a message")
        assert [line["content"] for line in store.conversations.transcript("task-session")] == ["now it has a message"]

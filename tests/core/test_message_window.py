"""A session's active window (migration 0041) and the list operations chat stores need.

``active`` marks the messages of a session's short-term window; ``deactivate_oldest`` retires
the oldest of them (LlamaIndex's ``archive_oldest_messages``) without removing anything from
the history, the transcript or the search index.
"""

from __future__ import annotations

import pytest

from shared_core import MemoryStore, NotFoundError
from shared_core.conversations import NewMessage
from shared_core.conversations.records import content_parts, media_refs


def _fill(convs, n=5, session="s"):
    return convs.append_many(session, [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}
                                       for i in range(n)])


def _texts(messages):
    return [m.content for m in messages]


def test_messages_start_active_and_can_be_stored_inactive(store):
    convs = store.conversations
    _fill(convs, 2)
    convs.append("s", "user", "stored out of the window", active=False)
    convs.append_many("s", [NewMessage(role="user", content="also out", active=False)])
    assert [m.active for m in convs.messages("s")] == [True, True, False, False]
    assert convs.count("s") == 4 and convs.count("s", active=True) == 2 and convs.count("s", active=False) == 2
    assert _texts(convs.messages("s", active=False)) == ["stored out of the window", "also out"]
    with pytest.raises(TypeError, match="active must be True or False"):
        convs.append("s", "user", "x", active="yes")
    with pytest.raises(TypeError, match="active must be True, False or None"):
        convs.messages("s", active=1)


def test_deactivate_oldest_keeps_history_transcript_and_index(file_store):
    convs = file_store.conversations
    stored = _fill(convs, 5)
    moved = convs.deactivate_oldest("s", 2)
    assert _texts(moved) == ["message 0", "message 1"] and not any(m.active for m in moved)
    assert _texts(convs.messages("s", active=True)) == ["message 2", "message 3", "message 4"]
    assert _texts(convs.messages("s", active=False)) == ["message 0", "message 1"]
    assert _texts(convs.messages("s")) == [f"message {i}" for i in range(5)]  # nothing left the history
    assert len(convs.transcript("s")) == 5
    assert "msg:" + stored[0].message_id in file_store.search("message 0", kind="message").ids
    # the next call takes the oldest *active* ones; asking for more than there are takes what is there
    assert _texts(convs.deactivate_oldest("s", 10)) == ["message 2", "message 3", "message 4"]
    assert convs.deactivate_oldest("s", 1) == [] and convs.deactivate_oldest("nope", 1) == []
    assert convs.count("s", active=False) == 5
    with pytest.raises(ValueError, match="non-negative"):
        convs.deactivate_oldest("s", -1)


def test_deactivate_named_messages(file_store):
    convs = file_store.conversations
    stored = _fill(convs, 5)
    other = convs.append("t", "user", "another session")
    moved = convs.deactivate("s", [stored[3].message_id, stored[1].message_id, other.message_id, "no-such-id"])
    assert _texts(moved) == ["message 1", "message 3"] and not any(m.active for m in moved)  # in session order
    assert _texts(convs.messages("s", active=True)) == ["message 0", "message 2", "message 4"]
    assert convs.messages("t")[0].active and len(convs.transcript("s")) == 5
    assert convs.deactivate("s", [stored[1].message_id]) == []  # already out of the window
    assert convs.deactivate("s", stored[0].message_id)[0].content == "message 0"  # one id as a string
    assert convs.deactivate("s", [stored[2].message_id], namespace="elsewhere") == []
    assert convs.deactivate("nope", [stored[2].message_id]) == [] and convs.deactivate("s", []) == []
    with pytest.raises(ValueError, match="message id"):
        convs.deactivate("s", [""])


def test_stored_ids(store):
    convs = store.conversations
    first = convs.append("s", "user", "hello", message_id="lc-1")
    convs.append("t", "user", "other session", message_id="lc-2")
    assert convs.stored_ids(["lc-1", "lc-2", "lc-3"]) == {"lc-1", "lc-2"}
    assert convs.stored_ids("lc-1") == {first.message_id} and convs.stored_ids([]) == set()
    convs.delete("lc-1")
    assert convs.stored_ids(["lc-1"]) == set()


def test_the_flag_survives_reopening(tmp_path, clock):
    path = tmp_path / "window.db"
    with MemoryStore.open(path, clock=clock, config={}) as store:
        _fill(store.conversations, 3)
        store.conversations.deactivate_oldest("s", 1)
    with MemoryStore.open(path, clock=clock, config={}) as store:
        assert [m.active for m in store.conversations.messages("s")] == [False, True, True]


def test_delete_oldest_by_state(file_store):
    convs = file_store.conversations
    _fill(convs, 6)
    convs.deactivate_oldest("s", 2)
    removed = convs.delete_oldest("s", 2, active=True)
    assert _texts(removed) == ["message 2", "message 3"]
    assert _texts(convs.messages("s")) == ["message 0", "message 1", "message 4", "message 5"]
    assert [line["content"] for line in convs.transcript("s")] == _texts(convs.messages("s"))
    with pytest.raises(NotFoundError):
        file_store.get("msg:" + removed[0].message_id)  # out of the index too
    assert _texts(convs.delete_oldest("s", 1)) == ["message 0"]  # any state
    assert convs.delete_oldest("s", 0) == [] and convs.delete_oldest("nope", 3) == []


def test_clear_by_state(file_store):
    convs = file_store.conversations
    _fill(convs, 4)
    convs.deactivate_oldest("s", 3)
    assert _texts(convs.clear("s", active=False)) == ["message 0", "message 1", "message 2"]
    assert _texts(convs.messages("s")) == ["message 3"]
    assert [line["content"] for line in convs.transcript("s")] == ["message 3"]
    assert convs.clear("s", active=False) == []
    assert _texts(convs.clear("s", active=True)) == ["message 3"] and convs.count("s") == 0
    assert file_store.conversations.session("s").id == "s"  # the session itself stays


def test_offset_and_limit_page_through_a_state(store):
    convs = store.conversations
    _fill(convs, 7)
    convs.deactivate_oldest("s", 2)
    assert _texts(convs.messages("s", active=True, offset=1, limit=2)) == ["message 3", "message 4"]
    assert _texts(convs.messages("s", offset=5)) == ["message 5", "message 6"]
    assert _texts(convs.messages("s", active=False, limit=1)) == ["message 0"]
    assert convs.messages("s", offset=10) == []
    with pytest.raises(ValueError, match="offset"):
        convs.messages("s", offset=-1)
    with pytest.raises(ValueError, match="limit"):
        convs.messages("s", limit=-2)


def test_delete_at_counts_positions_within_a_state(store):
    convs = store.conversations
    _fill(convs, 5)
    convs.deactivate_oldest("s", 2)
    assert convs.delete_at("s", 0, active=True).content == "message 2"
    assert convs.delete_at("s", -1, active=False).content == "message 1"
    assert convs.delete_at("s", 5, active=True) is None and convs.delete_at("s", -9) is None
    assert _texts(convs.messages("s")) == ["message 0", "message 3", "message 4"]
    with pytest.raises(TypeError, match="index"):
        convs.delete_at("s", "0")


def test_session_ids_with_messages(store):
    convs = store.conversations
    convs.create_session("empty")
    _fill(convs, 1, session="full")
    convs.append("other-ns", "user", "hi", namespace="team")
    assert convs.session_ids() == ["empty", "full", "other-ns"]
    assert convs.session_ids(with_messages=True) == ["full", "other-ns"]
    assert convs.session_ids(namespace="default", with_messages=True) == ["full"]
    convs.clear("full")
    assert convs.session_ids(namespace="default", with_messages=True) == []


def test_llama_index_style_blocks_give_text_and_media():
    """Blocks typed by ``block_type`` (LlamaIndex) read like blocks typed by ``type``."""
    blocks = [
        {"block_type": "text", "text": "Look at this"},
        {"block_type": "image", "url": "https://img.example/a.png", "image": None},
        {"block_type": "image", "image": "iVBORw0KGgo=", "url": None},
        {"block_type": "thinking", "content": "the user wants a caption"},
        {"block_type": "tool_call", "tool_name": "caption", "tool_kwargs": {}, "tool_call_id": "c1"},
        {"block_type": "document", "path": "/tmp/report.pdf"},
    ]
    text, kept = content_parts(blocks)
    assert text == "Look at this" and kept == blocks
    assert media_refs([], blocks) == ["https://img.example/a.png", "image (inline)", "/tmp/report.pdf"]
    # the providers' own reasoning and tool blocks are not media either
    assert media_refs([], [{"type": "tool_use", "name": "x", "input": {}}, {"type": "reasoning", "text": "hm"}]) == []

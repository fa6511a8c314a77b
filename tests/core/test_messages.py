"""Sessions and messages: the conversation API the chat-history adapters build on."""

from __future__ import annotations

import pytest

from shared_core import NotFoundError
from shared_core.conversations import Message, NewMessage


def test_empty_store(store):
    convs = store.conversations
    assert convs.messages("nope") == [] and convs.count("nope") == 0
    assert convs.session_ids() == [] and convs.sessions() == []
    assert convs.delete_last("nope") is None and convs.clear("nope") == []
    assert len(convs.search("anything")) == 0
    with pytest.raises(NotFoundError):
        convs.session("nope")
    with pytest.raises(NotFoundError):
        convs.get("nope")


def test_every_role_and_field_round_trips_losslessly(store, clock):
    convs = store.conversations
    blocks = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "https://img.example/cat.png", "detail": "high"}},
        "and a bare string block",
    ]
    tool_calls = [{"name": "get_weather", "args": {"city": "Paris", "units": ["C"]}, "id": "call_1", "type": "tool_call"}]
    kwargs = {"response_metadata": {"model": "m-1", "usage": {"in": 3}}, "lc_id": ["x", 1], "flag": None}
    system = convs.append("chat", "system", "You are helpful.")
    user = convs.append("chat", "user", blocks, name="alice", metadata={"lang": "en"},
                        attachments=[{"name": "cat.png", "url": "https://img.example/cat.png",
                                      "contentType": "image/png", "sizeBytes": 1024}])
    ai = convs.append("chat", "assistant", "", tool_calls=tool_calls, additional_kwargs=kwargs)
    tool = convs.append("chat", "tool", "18 degrees", tool_call_id="call_1", name="get_weather")
    custom = convs.append("chat", "developer", "a custom role")
    stored = convs.messages("chat")
    assert [m.role for m in stored] == ["system", "user", "assistant", "tool", "developer"]
    assert [m.seq for m in stored] == [1, 2, 3, 4, 5]
    assert [m.message_id for m in stored] == [x.message_id for x in (system, user, ai, tool, custom)]
    u = stored[1]
    assert u.raw_content == blocks and u.content_blocks == blocks
    assert u.content == "What is in this picture?\nand a bare string block"
    assert u.name == "alice" and u.metadata == {"lang": "en"}
    assert u.attachments == [{"name": "cat.png", "url": "https://img.example/cat.png", "content_type": "image/png",
                              "size_bytes": 1024}]
    a = stored[2]
    assert a.content == "" and a.raw_content == "" and a.tool_calls == tool_calls and a.additional_kwargs == kwargs
    assert stored[3].tool_call_id == "call_1" and stored[3].to_chat() == {
        "role": "tool", "content": "18 degrees", "name": "get_weather", "tool_call_id": "call_1"}
    assert all(m.namespace == "default" and m.tier == "short" and m.sent_at == clock.now() for m in stored)


def test_messages_are_indexed_as_kind_message(store):
    convs = store.conversations
    text = convs.append("s1", "user", "The staging database lives in Oslo")
    tool_only = convs.append("s1", "assistant", "", tool_calls=[{"name": "lookup_city", "args": {"q": "Oslo"}}])
    blank = convs.append("s1", "assistant", "   ")
    chunk = store.get("msg:" + text.message_id)
    assert (chunk.kind, chunk.owner_id, chunk.session_id, chunk.source) == ("message", text.message_id, "s1",
                                                                             "conversation")
    assert chunk.metadata == {"role": "user"} and chunk.created_at == text.sent_at
    assert store.get("msg:" + tool_only.message_id).text == 'lookup_city {"q": "Oslo"}'
    with pytest.raises(NotFoundError):
        store.get("msg:" + blank.message_id)  # nothing to index
    assert blank.token_count == 0 and text.token_count > 0
    assert set(store.search("Oslo", kind="message").ids) == {"msg:" + text.message_id, "msg:" + tool_only.message_id}


def test_order_is_by_sequence_even_when_the_clock_goes_backwards(store, clock):
    convs = store.conversations
    convs.append("s", "user", "first")
    clock.advance(days=-3)
    convs.append("s", "user", "second, sent 'earlier'")
    convs.append("s", "user", "third", sent_at="2020-01-01T00:00:00Z")
    assert [m.content for m in convs.messages("s")] == ["first", "second, sent 'earlier'", "third"]
    assert [m.content for m in convs.messages("s", last=2)] == ["second, sent 'earlier'", "third"]
    assert [m.content for m in convs.messages("s", limit=1)] == ["first"]
    assert [m.content for m in convs.messages("s", after_seq=2)] == ["third"]


def test_append_many_and_dict_input(store):
    convs = store.conversations
    stored = convs.append_many("s", [
        {"role": "user", "content": "hello"},
        NewMessage(role="assistant", content="hi there"),
        {"role": "user", "content": "bye", "platform": "telegram", "person": "bob"},
    ])
    assert [m.seq for m in stored] == [1, 2, 3] and stored[2].platform == "telegram" and stored[2].person == "bob"
    assert convs.append_many("s", []) == []
    with pytest.raises(ValueError, match="unknown message fields"):
        convs.append_many("s", [{"role": "user", "text": "oops"}])
    with pytest.raises(ValueError, match="needs a role"):
        convs.append_many("s", [{"content": "who?"}])
    assert convs.count("s") == 3  # a failed batch wrote nothing


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"role": ""}, ValueError, "role"),
        ({"role": 3}, TypeError, "role"),
        ({"content": 42}, TypeError, "content"),
        ({"content": "nul\x00byte"}, ValueError, "NUL"),
        ({"tool_calls": {"name": "x"}}, TypeError, "tool_calls"),
        ({"additional_kwargs": {"x": float("nan")}}, ValueError, "JSON"),
        ({"metadata": {"x": object()}}, ValueError, "JSON"),
        ({"attachments": [{"size_bytes": 3}]}, ValueError, "name or a url"),
        ({"attachments": [{"name": "a", "size_bytes": -1}]}, ValueError, "size_bytes"),
        ({"importance": 1.5}, ValueError, "importance"),
        ({"sent_at": "yesterday"}, ValueError, "ISO-8601"),
        ({"message_id": ""}, ValueError, "message id"),
    ],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(store, kwargs, error, match):
    args = {"role": "user", "content": "text"} | kwargs
    role = args.pop("role")
    content = args.pop("content")
    with pytest.raises(error, match=match):
        store.conversations.append("s", role, content, **args)
    assert store.conversations.count("s") == 0 and store.count(kind="message") == 0


def test_bad_session_ids(store):
    for bad in ("", "   ", None, 5):
        with pytest.raises(ValueError, match="session id"):
            store.conversations.append(bad, "user", "x")


def test_platform_message_ids_are_unique_and_reingesting_is_harmless(store):
    convs = store.conversations
    first = convs.append("s", "user", "from slack", message_id="slack:1700.01", platform="slack")
    again = convs.append("s", "user", "from slack", message_id="slack:1700.01", platform="slack")
    assert again.message_id == first.message_id and convs.count("s") == 1
    with pytest.raises(ValueError, match="different content"):
        convs.append("s", "user", "edited text", message_id="slack:1700.01")
    with pytest.raises(ValueError, match="different content"):
        convs.append("other", "user", "from slack", message_id="slack:1700.01")
    with pytest.raises(ValueError, match="twice"):
        convs.append_many("s", [{"role": "user", "content": "a", "message_id": "m"},
                                {"role": "user", "content": "b", "message_id": "m"}])
    assert store.db.scalar("SELECT count(*) FROM raw_messages") == 1


def test_sessions_namespaces_and_keys(store):
    convs = store.conversations
    convs.append("a-1", "user", "hello", namespace="user:alice")
    convs.append("b-1", "user", "hello", namespace="user:bob")
    convs.append("b-2", "user", "hello", namespace="user:bob")
    convs.append("a-1", "assistant", "hi")  # the existing session's namespace
    assert convs.session("a-1").namespace == "user:alice" and convs.count("a-1") == 2
    with pytest.raises(ValueError, match="belongs to namespace"):
        convs.append("a-1", "user", "intruder", namespace="user:bob")
    assert convs.messages("a-1", namespace="user:bob") == [] and convs.count("a-1", namespace="user:bob") == 0
    with pytest.raises(NotFoundError):
        convs.session("a-1", namespace="user:bob")
    assert convs.session_ids() == ["a-1", "b-1", "b-2"]
    assert convs.session_ids(namespace="user:bob") == ["b-1", "b-2"]
    assert [s.id for s in convs.sessions(namespace="user:alice")] == ["a-1"]
    assert convs.search("hello", namespace="user:alice").ids == [m.message_id for m in convs.messages("a-1")[:1]]


def test_session_rows_follow_seed_000(store, clock):
    convs = store.conversations
    session = convs.create_session("chat-7", namespace="user:a", channel="cli", model_provider="anthropic",
                                   model_id="claude", metadata={"title": "trip"})
    assert (session.channel, session.model_provider, session.model_id) == ("cli", "anthropic", "claude")
    assert session.total_tokens == 0 and session.total_cost_usd == 0.0 and session.metadata == {"title": "trip"}
    with pytest.raises(ValueError, match="already exists"):
        convs.create_session("chat-7")
    clock.advance(minutes=5)
    updated = convs.add_usage("chat-7", tokens=120, cost_usd=0.002)
    updated = convs.add_usage("chat-7", tokens=30)
    assert updated.total_tokens == 150 and updated.total_cost_usd == pytest.approx(0.002)
    assert updated.updated_at == clock.now()
    with pytest.raises(ValueError):
        convs.add_usage("chat-7", tokens=-1)
    assert convs.update_session("chat-7", model_id="claude-2").model_id == "claude-2"
    assert convs.end_session("chat-7").ended_at == clock.now()
    assert convs.create_session().id.startswith("ses_")
    assert session.transcript_path is None  # ":memory:" stores keep no transcript by default


def test_delete_one_last_at_and_clear(store):
    convs = store.conversations
    ids = [convs.append("s", "user", f"message {i}").message_id for i in range(5)]
    assert convs.delete(ids[1]).message_id == ids[1]
    assert convs.delete_last("s").message_id == ids[4]
    assert convs.delete_at("s", 0).message_id == ids[0]
    assert convs.delete_at("s", 10) is None
    assert [m.message_id for m in convs.messages("s")] == [ids[2], ids[3]]
    with pytest.raises(NotFoundError):
        convs.delete(ids[1])
    for gone in (ids[0], ids[1], ids[4]):
        with pytest.raises(NotFoundError):
            store.get("msg:" + gone)
    new = convs.append("s", "user", "after deletes")
    assert new.seq == 6  # sequence numbers are never reused
    cleared = convs.clear("s")
    assert [m.message_id for m in cleared] == [ids[2], ids[3], new.message_id]
    assert convs.count("s") == 0 and store.count(kind="message") == 0
    assert "s" in convs.session_ids()  # clear keeps the session


def test_insert_at_position_and_replace(store):
    convs = store.conversations
    convs.append_many("s", [{"role": "user", "content": c} for c in ("a", "b", "c")])
    convs.insert("s", 1, "user", "between a and b")
    convs.insert("s", -1, "user", "before c")
    convs.insert("s", 99, "user", "at the end")
    assert [m.content for m in convs.messages("s")] == ["a", "between a and b", "b", "before c", "c", "at the end"]
    assert [m.seq for m in convs.messages("s")] == [1, 2, 3, 4, 5, 6]
    replaced = convs.replace("s", [{"role": "system", "content": "fresh start"}])
    assert [m.content for m in convs.messages("s")] == ["fresh start"] and replaced[0].seq == 7
    assert convs.replace("s", []) == [] and convs.count("s") == 0
    convs.insert("new", 0, "user", "into an empty session")
    assert convs.count("new") == 1


def test_delete_session(store):
    convs = store.conversations
    convs.append("s", "user", "one")
    convs.append("s", "user", "two")
    store.db.execute("INSERT INTO tasks (id, description, session_id, created_at) VALUES ('t1', 'x', 's', 'now')")
    assert convs.delete_session("s") == 2
    assert "s" not in convs.session_ids() and store.count(kind="message") == 0
    assert store.db.scalar("SELECT session_id FROM tasks WHERE id = 't1'") is None
    assert convs.delete_session("s", missing_ok=True) == 0
    with pytest.raises(NotFoundError):
        convs.delete_session("s")


def test_pin_and_importance_reach_the_row_and_the_chunk(store):
    convs = store.conversations
    m = convs.append("s", "user", "remember this")
    pinned = convs.pin(m.message_id)
    assert pinned.pinned and store.get("msg:" + m.message_id).pinned
    assert convs.set_importance(m.message_id, 0.8).importance == 0.8
    assert store.get("msg:" + m.message_id).importance == 0.8
    assert not convs.pin(m.message_id, False).pinned
    with pytest.raises(ValueError):
        convs.set_importance(m.message_id, 2)


def test_access_tracking_on_lookup_and_search_but_not_on_reading_the_transcript(store, clock):
    convs = store.conversations
    m = convs.append("s", "user", "the wifi password is hunter2")
    convs.messages("s")
    assert convs.get(m.message_id, track_access=False).access_count == 0
    clock.advance(hours=1)
    assert convs.get(m.message_id).access_count == 1  # a direct lookup (seed 003)
    convs.search("wifi password")
    store.search("hunter2")  # the core's search counts too (through the chunk)
    fresh = convs.get(m.message_id, track_access=False)
    assert fresh.access_count == 3 and fresh.last_access_at == clock.now()


@pytest.mark.sqlite_only  # PRAGMA index_list; the PostgreSQL twin migration creates the same indexes
def test_seed_indexes_exist(store):
    names = {r[1] for r in store.db.query("PRAGMA index_list(raw_messages)")}
    assert {"idx_raw_messages_message_id", "idx_raw_messages_ns_stage", "idx_raw_messages_ns_timestamp",
            "idx_raw_messages_archived", "idx_raw_messages_pinned"} <= names
    cols = {r[1] for r in store.db.query("PRAGMA table_info(raw_messages)")}
    assert {"message_id", "namespace", "role", "content", "platform", "channel", "person", "bot_id", "timestamp",
            "created_at", "attachments", "embedding_model", "embedding_dimensions", "embedding_updated_at",
            "embedding_content_hash", "metadata", "memory_stage", "access_count", "last_access_at",
            "importance_score", "archived_at", "is_pinned", "summary_ref_id"} <= cols
    summaries = {r[1] for r in store.db.query("PRAGMA index_list(memory_summaries)")}
    assert {"idx_memory_summaries_ns_tier", "idx_memory_summaries_ns_end"} <= summaries
    session_cols = {r[1] for r in store.db.query("PRAGMA table_info(sessions)")}
    assert {"channel", "model_provider", "model_id", "total_tokens", "total_cost_usd", "transcript_path"} <= session_cols


def test_erase_namespace_removes_every_trace(file_store):
    convs = file_store.conversations
    for i in range(45):
        convs.append("secret-chat", "user", f"secret number {i} is {i * 7}", namespace="user:gone")
    convs.append("kept", "user", "kept message", namespace="user:stays")
    convs.working_memory("secret-chat")
    path = convs.transcript_path("secret-chat")
    assert path.exists() and convs.working_summaries("secret-chat")
    file_store.erase_namespace("user:gone")
    assert not path.exists()
    for table in ("raw_messages", "working_memory_summaries", "memory_summaries", "sessions"):
        assert file_store.db.scalar(f"SELECT count(*) FROM {table} WHERE namespace = 'user:gone'") == 0
    assert convs.session_ids() == ["kept"] and convs.count("kept") == 1
    if file_store.db.dialect == "sqlite":  # the file's bytes (PostgreSQL: test_postgres_backend.py)
        raw = open(file_store.path, "rb").read()
        assert b"secret number" not in raw


def test_message_records_serialise(store):
    m = store.conversations.append("s", "user", "hello", metadata={"a": 1})
    data = m.to_dict()
    assert data["message_id"] == m.message_id and data["sent_at"] == "2026-01-01T00:00:00.000000Z"
    assert isinstance(m, Message) and m.dimensions == {"platform": None, "channel": None, "person": None,
                                                        "bot_id": None}


def test_a_store_without_a_text_embedder_keeps_messages_unindexed(clock):
    from shared_core import MemoryStore
    from shared_core.embed import PrecomputedVectors

    with MemoryStore.open(":memory:", clock=clock, embedder=PrecomputedVectors(8)) as store:
        convs = store.conversations
        m = convs.append("s", "user", "kept, though nothing can embed it")
        assert [x.message_id for x in convs.messages("s")] == [m.message_id]
        assert store.count(kind="message") == 0 and m.embedding_model is None
        for i in range(3):
            convs.append("s", "user", f"old {i}", sent_at="2025-01-01T00:00:00Z")
        clock.set("2026-06-01T00:00:00Z")
        assert store.forgetting.run().compressed["short"] == 3  # summaries are kept, unindexed
        assert convs.delete_last("s").message_id != m.message_id

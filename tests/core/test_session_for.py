"""conversations.session_for: a chat key per namespace, so two users' default keys never collide."""

from __future__ import annotations

import pytest


def test_a_key_is_per_namespace(store):
    convs = store.conversations
    assert convs.session_for("chat_history", "user:ann") == "chat_history"  # free: the key itself
    convs.append("chat_history", "user", "Ann's message", namespace="user:ann")
    assert convs.session_for("chat_history", "user:ann") == "chat_history"
    bob = convs.session_for("chat_history", "user:bob")
    assert bob == "chat_history@user:bob"  # taken by Ann: Bob's own session for the key
    convs.append(bob, "user", "Bob's message", namespace="user:bob")
    assert [m.content for m in convs.messages(convs.session_for("chat_history", "user:bob"))] == ["Bob's message"]
    assert [m.content for m in convs.messages("chat_history")] == ["Ann's message"]
    convs.delete_session("chat_history")
    assert convs.session_for("chat_history", "user:bob") == bob  # stays Bob's once his holds messages
    assert convs.session_for("chat_history", "user:cy") == "chat_history"  # free again for a newcomer


def test_long_keys_and_bad_arguments(store):
    convs = store.conversations
    key = "k" * 500
    convs.append(key, "user", "first", namespace="a")
    scoped = convs.session_for(key, "user:" + "b" * 100)
    assert len(scoped) <= 512 and scoped != key
    convs.append(scoped, "user", "second", namespace="user:" + "b" * 100)  # a valid session id
    with pytest.raises(ValueError, match="session id"):
        convs.session_for("", "a")
    with pytest.raises(ValueError, match="namespace"):
        convs.session_for("k", "")

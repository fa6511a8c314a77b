"""Chat keys: the session a chat store's key names within a namespace.

Session ids are unique in a file, but a chat store's keys are per user: every LlamaIndex
``ChatMemoryBuffer`` uses the key ``"chat_history"`` unless told otherwise. So a chat store
of namespace ``N`` keeps its key ``K`` in the session ``"N/K"`` (:func:`session_id`; a ``/``
or ``%`` in ``N`` is written ``%2F``/``%25``, so the first ``/`` always ends the namespace and
no two namespaces' keys can name one session), and two users' stores with the same key
never meet.

A session whose id is the plain key and that belongs to ``N`` (written by another door, such
as ``store.conversations.append("trip", ..., namespace=N)``, or by an older version) is
read and continued under that key as well, so every door sees the same history.

>>> session_id("user:ann", "chat_history")
'user:ann/chat_history'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import NotFoundError
from .namespaces import check_namespace

if TYPE_CHECKING:
    from .conversations import Conversations

__all__ = ["SEPARATOR", "session_id", "session_for_key", "keys"]

SEPARATOR = "/"


def session_id(namespace: str, key: str) -> str:
    """The session id new messages of ``key`` in ``namespace`` are stored under.

    >>> session_id("team/a", "chat")
    'team%2Fa/chat'
    """
    check_namespace(namespace)
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"a chat key must be a non-empty string such as 'chat_history', got {key!r}")
    return f"{_prefix(namespace)}{key}"


def _prefix(namespace: str) -> str:
    return namespace.replace("%", "%25").replace(SEPARATOR, "%2F") + SEPARATOR


def session_for_key(conversations: Conversations, key: str, namespace: str) -> str:
    """The session ``key`` names in ``namespace``: its scoped session if it exists, else a plain
    session ``key`` of this namespace if one exists, else the scoped id (created on first write)."""
    scoped = session_id(namespace, key)
    for candidate in (scoped, key):
        try:
            conversations.session(candidate, namespace=namespace)
        except NotFoundError:
            continue
        return candidate
    return scoped


def keys(conversations: Conversations, namespace: str) -> list[str]:
    """The keys of ``namespace``'s sessions that hold messages, sorted (scoped ids without their prefix)."""
    prefix = _prefix(namespace)
    found = {
        sid[len(prefix):] if sid.startswith(prefix) and len(sid) > len(prefix) else sid
        for sid in conversations.session_ids(namespace=namespace, with_messages=True)
    }
    return sorted(found)

"""The session methods of ``store.conversations``: start, read, change, list and remove sessions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, check_namespace
from .base import ConversationsBase
from .records import Session, json_object, new_message_id, optional_text, session_id_arg

__all__ = ["SessionMethods"]


class SessionMethods(ConversationsBase):
    """Sessions: created on first append (or here), unique across the store, one namespace each."""

    def create_session(
        self,
        session_id: str | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        channel: str | None = None,
        model_provider: str | None = None,
        model_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Start a session (a fresh id when none is given); an existing id is an error."""
        session_id = session_id_arg(session_id) if session_id is not None else "ses_" + new_message_id()[4:]
        check_namespace(namespace)
        now = self.kernel.clock.now()
        session = Session(
            id=session_id, namespace=namespace, channel=optional_text(channel, "channel"),
            model_provider=optional_text(model_provider, "model_provider"),
            model_id=optional_text(model_id, "model_id"), created_at=now, updated_at=now,
            metadata=json_object(metadata, "metadata"),
        )
        with self.kernel.session(write=True):
            if self._repo.session(session_id) is not None:
                raise ValueError(f"session {session_id!r} already exists; append to it, or delete it first")
            self._transcripts.insert_session(session)
        return self.session(session_id)

    def session(self, session_id: str, *, namespace: str | None = None) -> Session:
        """The session, or :class:`NotFoundError`."""
        with self.kernel.session():
            session = self._session_in(session_id, namespace)
            if session is None:
                where = f" in namespace {namespace!r}" if namespace is not None else ""
                raise NotFoundError(f"no session {session_id!r}{where}")
            return session

    def update_session(
        self,
        session_id: str,
        *,
        channel: Any = ...,
        model_provider: Any = ...,
        model_id: Any = ...,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Change a session's channel, model or metadata (only the arguments given)."""
        values: dict[str, Any] = {}
        for key, value in (("channel", channel), ("model_provider", model_provider), ("model_id", model_id)):
            if value is not ...:
                values[key] = optional_text(value, key)
        if metadata is not None:
            values["metadata"] = json_object(metadata, "metadata")
        with self.kernel.session(write=True):
            self.session(session_id)
            self._repo.update_session(session_id, updated_at=self.kernel.clock.now(), **values)
        return self.session(session_id)

    def add_usage(self, session_id: str, *, tokens: int = 0, cost_usd: float = 0.0) -> Session:
        """Add model usage to the session's totals (seed 000's ``total_tokens``, ``total_cost_usd``)."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f"tokens must be a non-negative whole number, got {tokens!r}")
        if isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float)) or not cost_usd >= 0:
            raise ValueError(f"cost_usd must be a non-negative number, got {cost_usd!r}")
        with self.kernel.session(write=True):
            self.session(session_id)
            self._repo.add_usage(session_id, tokens, float(cost_usd), self.kernel.clock.now())
        return self.session(session_id)

    def end_session(self, session_id: str) -> Session:
        """Mark the session ended (``ended_at`` = now); appending later is still allowed."""
        with self.kernel.session(write=True):
            self.session(session_id)
            now = self.kernel.clock.now()
            self._repo.update_session(session_id, ended_at=now, updated_at=now)
        return self.session(session_id)

    def sessions(self, *, namespace: str | None = DEFAULT_NAMESPACE, limit: int | None = None,
                 offset: int = 0) -> list[Session]:
        """Sessions of a namespace (``None``: all), most recently updated first."""
        if namespace is not None:
            check_namespace(namespace)
        with self.kernel.session():
            return self._repo.list_sessions(namespace, limit, offset)

    def session_ids(self, *, namespace: str | None = None, with_messages: bool = False) -> list[str]:
        """Every session id (of one namespace, if given), sorted: the chat stores' "keys".

        ``with_messages=True``: only sessions that hold at least one message.
        """
        if namespace is not None:
            check_namespace(namespace)
        with self.kernel.session():
            return self._repo.session_ids(namespace, with_messages=with_messages)

    def delete_session(self, session_id: str, *, missing_ok: bool = False) -> int:
        """Remove a session, its messages, index chunks, working summaries and transcript; return how many messages."""
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(session_id_arg(session_id))
                if session is None:
                    if missing_ok:
                        return 0
                    raise NotFoundError(f"no session {session_id!r}")
                messages = self._repo.session_messages(session.id)
                self._remove(messages)
                self._repo.delete_session(session.id)
                self._transcripts.remove_after_commit([session.id])
            return len(messages)

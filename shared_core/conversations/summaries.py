"""The working-memory methods of ``store.conversations`` (seed 001): a session's working summary,
brought up to date as messages arrive, and what the model sees (see :mod:`.working`)."""

from __future__ import annotations

from typing import Any

from ..embed import fnv1a_64
from ..tokens import count_tokens
from .base import ConversationsBase
from .records import WorkingSummary, session_id_arg
from .working import WorkingMemory, summarize_messages

__all__ = ["WorkingMemoryMethods"]


class WorkingMemoryMethods(ConversationsBase):
    """The last messages in full, older ones folded into a summary."""

    def working_memory(self, session_id: str, *, summarize: bool = True) -> WorkingMemory:
        """What the model should see: the working summary and every message after it.

        With ``summarize=True`` (the default) the summary is brought up to date first when
        more than ``context.working_summarize_after`` (40) messages are outside it.
        """
        session_id = session_id_arg(session_id)
        if summarize:
            self.summarize_working(session_id)
        with self.kernel.session():
            summary = self._repo.latest_working(session_id)
            after = summary.last_seq if summary else 0
            messages = self._repo.session_messages(session_id, after_seq=after)
            total = self._repo.count(session_id)
            return WorkingMemory(session_id, summary, messages, total)

    def context(self, session_id: str, *, system: str | None = None) -> list[dict[str, Any]]:
        """``working_memory(session_id).to_messages(system)``: system + summary + recent messages."""
        return self.working_memory(session_id).to_messages(system)

    def summarize_working(self, session_id: str, *, force: bool = False) -> WorkingSummary | None:
        """Fold older messages into a new working summary when due (or, with ``force``, whenever
        more than ``working_keep`` messages are outside it); return the new summary, or None."""
        cfg = self.kernel.config.context
        session_id = session_id_arg(session_id)
        with self.kernel.session():
            session = self._repo.session(session_id)
            if session is None:
                return None
            latest = self._repo.latest_working(session_id)
            base = latest.last_seq if latest else 0
            outside = self._repo.session_messages(session_id, after_seq=base)
        due = len(outside) > cfg.working_summarize_after or (force and len(outside) > cfg.working_keep)
        if not due:
            return None
        fold = outside[: len(outside) - cfg.working_keep]
        text, method = summarize_messages(latest.summary if latest else None, fold,
                                          budget=cfg.summary_tokens, model=self.kernel.text_model)
        summary = WorkingSummary(
            id=f"wm_{fnv1a_64(session_id):016x}_{fold[-1].seq}", session_id=session_id, namespace=session.namespace,
            summary=text, first_seq=latest.first_seq if latest else fold[0].seq, last_seq=fold[-1].seq,
            message_count=(latest.message_count if latest else 0) + len(fold), token_count=count_tokens(text),
            method=method, created_at=self.kernel.clock.now(),
        )
        with self.kernel.session(write=True):
            now_latest = self._repo.latest_working(session_id)
            if (now_latest.last_seq if now_latest else 0) != base:
                return None  # another process summarised meanwhile, or a message was deleted
            still = self._repo.session_messages(session_id, after_seq=base, through_seq=summary.last_seq)
            if [m.message_id for m in still] != [m.message_id for m in fold]:
                return None  # the messages changed while summarising: try again next time
            self._repo.put_working(summary)
        return summary

    def working_summaries(self, session_id: str) -> list[WorkingSummary]:
        """Every working summary of a session, oldest first."""
        with self.kernel.session():
            return self._repo.working_history(session_id_arg(session_id))

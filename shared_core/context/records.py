"""Records of the context manager: extracted facts, what one extraction produced, the log of flushes and
compactions, and a conversation's bookkeeping key."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["ExtractedFact", "Extraction", "ContextEvent", "session_key"]


def session_key(session_id: str | None, namespace: str) -> str:
    """The bookkeeping key of a conversation: its id, or ``ns:<namespace>`` for a list without one."""
    return session_id if session_id else f"ns:{namespace}"


@dataclass(frozen=True)
class ContextEvent:
    """One flush or compaction, as logged (a flush has no summary and compacts nothing)."""

    id: str
    action: str  # flush | compact
    session_key: str
    namespace: str
    policy: str
    created_at: datetime
    messages_before: int
    messages_after: int
    compacted: int
    tokens_before: int
    tokens_after: int
    fact_ids: list[str] = field(default_factory=list)
    summary_id: str | None = None
    summary: str = ""
    method: str = "rules"


@dataclass(frozen=True)
class ExtractedFact:
    """A fact found in a conversation: its text (as stored), the rule that found it and where.

    ``origin``: whose message it came from: ``user`` (a statement), ``tool`` (a tool result) or
    ``assistant`` (the agent's observation of the user). ``correction``: said as a correction
    ("Actually, ...", "Correction: ...", "..., not Pri"); ``replaces``: the value it says is wrong
    ("Pri" in "Call me Priya, not Pri"), when it names one.
    """

    text: str
    rule: str  # name | possession | identity | place | preference | usage | have | decision | dated | thing | model
    source: str = ""  # the sentence it came from ("" for a model's fact)
    message_index: int | None = None
    correction: bool = False
    origin: str = "user"  # user | tool | assistant
    replaces: str | None = None


@dataclass
class Extraction:
    """What one extraction produced: facts (maybe none), a summary ("" when not asked for), and how."""

    facts: list[ExtractedFact] = field(default_factory=list)
    summary: str = ""
    method: str = "rules"  # rules | model | model+rules
    model_error: str | None = None

"""SQL of the message layer: sessions, raw_messages, memory_summaries, working_memory_summaries.

Callers hold the store lock; writes run inside ``db.transaction()``. Nothing here
embeds, ranks or touches files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend
from ..db.backend import inserted_rowid
from .records import MemorySummary, Message, Session, WorkingSummary

__all__ = ["MessageRepository"]

SESSION_COLUMNS = (
    "id", "namespace", "channel", "model_provider", "model_id", "created_at", "updated_at", "total_tokens",
    "total_cost_usd", "transcript_path", "metadata", "last_seq", "ended_at",
)
MESSAGE_COLUMNS = (
    "id", "message_id", "namespace", "session_id", "seq", "role", "content", "content_blocks", "name",
    "tool_calls", "tool_call_id", "additional_kwargs", "platform", "channel", "person", "bot_id", "timestamp",
    "created_at", "attachments", "embedding_model", "embedding_content_hash", "embedding_dimensions",
    "embedding_updated_at", "metadata", "memory_stage", "access_count", "last_access_at", "importance_score",
    "archived_at", "is_pinned", "summary_ref_id", "token_count", "active",
)
SUMMARY_COLUMNS = (
    "summary_id", "namespace", "summary_tier", "source_tier", "start_timestamp", "end_timestamp", "message_count",
    "source_record_ids", "key_points", "keywords", "keywords_text", "summary_text", "dimensions", "quality_score",
    "created_at", "updated_at",
)
WORKING_COLUMNS = (
    "id", "session_id", "namespace", "summary", "first_seq", "last_seq", "message_count", "token_count", "method",
    "created_at",
)
_MSG_SELECT = ", ".join(f"m.{c}" for c in MESSAGE_COLUMNS)
_BATCH = 500
# unix ms of a stored timestamp (fixed-width ISO text: seconds from strftime, milliseconds from the
# digits after the dot; exact, unlike julianday arithmetic), divided into buckets of ``?`` ms
_BUCKET = "((CAST(strftime('%s', timestamp) AS INTEGER) * 1000 + CAST(substr(timestamp, 21, 3) AS INTEGER)) / ?)"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def session_from_row(row: Sequence[Any]) -> Session:
    v = dict(zip(SESSION_COLUMNS, row, strict=False))
    return Session(
        id=v["id"], namespace=v["namespace"], channel=v["channel"], model_provider=v["model_provider"],
        model_id=v["model_id"], created_at=from_iso(v["created_at"]), updated_at=from_iso(v["updated_at"]),
        total_tokens=int(v["total_tokens"] or 0), total_cost_usd=float(v["total_cost_usd"] or 0.0),
        transcript_path=v["transcript_path"], metadata=json.loads(v["metadata"] or "{}"),
        last_seq=int(v["last_seq"] or 0), ended_at=from_iso(v["ended_at"]),
    )


def message_from_row(row: Sequence[Any]) -> Message:
    v = dict(zip(MESSAGE_COLUMNS, row, strict=False))
    return Message(
        id=int(v["id"]), message_id=v["message_id"], namespace=v["namespace"], session_id=v["session_id"],
        seq=int(v["seq"]), role=v["role"], content=v["content"],
        content_blocks=None if v["content_blocks"] is None else json.loads(v["content_blocks"]),
        name=v["name"], tool_calls=json.loads(v["tool_calls"] or "[]"), tool_call_id=v["tool_call_id"],
        additional_kwargs=json.loads(v["additional_kwargs"] or "{}"), platform=v["platform"], channel=v["channel"],
        person=v["person"], bot_id=v["bot_id"], sent_at=from_iso(v["timestamp"]), stored_at=from_iso(v["created_at"]),
        attachments=json.loads(v["attachments"] or "[]"), embedding_model=v["embedding_model"],
        embedding_content_hash=v["embedding_content_hash"], embedding_dimensions=v["embedding_dimensions"],
        embedding_updated_at=from_iso(v["embedding_updated_at"]), metadata=json.loads(v["metadata"] or "{}"),
        tier=v["memory_stage"], access_count=int(v["access_count"] or 0), last_access_at=from_iso(v["last_access_at"]),
        importance=v["importance_score"], archived_at=from_iso(v["archived_at"]), pinned=bool(v["is_pinned"]),
        summary_ref_id=v["summary_ref_id"], token_count=int(v["token_count"] or 0), active=bool(v["active"]),
    )


def summary_from_row(row: Sequence[Any]) -> MemorySummary:
    v = dict(zip(SUMMARY_COLUMNS, row, strict=False))
    return MemorySummary(
        summary_id=v["summary_id"], namespace=v["namespace"], summary_tier=v["summary_tier"],
        source_tier=v["source_tier"], start_timestamp=_required_time(v["start_timestamp"]),
        end_timestamp=_required_time(v["end_timestamp"]), message_count=int(v["message_count"]),
        source_record_ids=json.loads(v["source_record_ids"]), key_points=json.loads(v["key_points"]),
        keywords=json.loads(v["keywords"]), keywords_text=v["keywords_text"], summary_text=v["summary_text"],
        dimensions=json.loads(v["dimensions"]), quality_score=float(v["quality_score"]),
        created_at=from_iso(v["created_at"]), updated_at=from_iso(v["updated_at"]),
    )


def _required_time(text: str) -> datetime:
    """A timestamp of a NOT NULL column."""
    value = from_iso(text)
    assert value is not None
    return value


def working_from_row(row: Sequence[Any]) -> WorkingSummary:
    v = dict(zip(WORKING_COLUMNS, row, strict=False))
    return WorkingSummary(
        id=v["id"], session_id=v["session_id"], namespace=v["namespace"], summary=v["summary"],
        first_seq=int(v["first_seq"]), last_seq=int(v["last_seq"]), message_count=int(v["message_count"]),
        token_count=int(v["token_count"]), method=v["method"], created_at=from_iso(v["created_at"]),
    )


class MessageRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    # -- sessions ------------------------------------------------------------------------

    def session(self, session_id: str) -> Session | None:
        rows = self.db.query(f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE id = ?", (session_id,))
        return session_from_row(rows[0]) if rows else None

    def transcript_state(self, session_id: str) -> tuple[str | None, int | None]:
        rows = self.db.query("SELECT transcript_path, transcript_bytes FROM sessions WHERE id = ?", (session_id,))
        return (rows[0][0], rows[0][1]) if rows else (None, None)

    def sessions_with_transcripts(self) -> list[tuple[str, str | None, int | None]]:
        return [(r[0], r[1], r[2]) for r in self.db.query("SELECT id, transcript_path, transcript_bytes FROM sessions")]

    def ensure_session(self, session_id: str, now_iso: str) -> None:
        """A bare session row for ``session_id`` if there is none (another domain's rows point at it)."""
        if not self.db.scalar("SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
            self.db.execute("INSERT INTO sessions (id, created_at, updated_at) VALUES (?, ?, ?)",
                            (session_id, now_iso, now_iso))

    def insert_session(self, session: Session) -> None:
        self.db.execute(
            "INSERT INTO sessions (id, namespace, channel, model_provider, model_id, created_at, updated_at, "
            "total_tokens, total_cost_usd, transcript_path, metadata, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (session.id, session.namespace, session.channel, session.model_provider, session.model_id,
             to_iso(session.created_at), to_iso(session.updated_at), session.total_tokens, session.total_cost_usd,
             session.transcript_path, _dumps(session.metadata)),
        )

    def update_session(self, session_id: str, **values: Any) -> None:
        sets = []
        params: list[Any] = []
        for key, value in values.items():
            if key not in {"channel", "model_provider", "model_id", "updated_at", "metadata", "last_seq",
                           "transcript_path", "transcript_bytes", "ended_at"}:
                raise ValueError(f"cannot set session field {key!r}")
            sets.append(f"{key} = ?")
            if isinstance(value, datetime):
                value = to_iso(value)
            elif isinstance(value, dict):
                value = _dumps(value)
            params.append(value)
        if sets:
            self.db.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*params, session_id))

    def add_usage(self, session_id: str, tokens: int, cost_usd: float, now: datetime) -> None:
        self.db.execute(
            "UPDATE sessions SET total_tokens = total_tokens + ?, total_cost_usd = total_cost_usd + ?, updated_at = ? "
            "WHERE id = ?",
            (tokens, cost_usd, to_iso(now), session_id),
        )

    def list_sessions(self, namespace: str | None, limit: int | None, offset: int) -> list[Session]:
        where, params = ("WHERE namespace = ?", [namespace]) if namespace is not None else ("", [])
        tail = " LIMIT ? OFFSET ?" if limit is not None else ""
        extra = [limit, offset] if limit is not None else []
        rows = self.db.query(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions {where} ORDER BY updated_at DESC, id{tail}",
            (*params, *extra),
        )
        return [session_from_row(r) for r in rows]

    def session_ids(self, namespace: str | None, *, with_messages: bool = False) -> list[str]:
        clauses, params = [], []
        if namespace is not None:
            clauses.append("s.namespace = ?")
            params.append(namespace)
        if with_messages:
            clauses.append("EXISTS (SELECT 1 FROM raw_messages m WHERE m.session_id = s.id)")
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        return [r[0] for r in self.db.query(f"SELECT s.id FROM sessions s {where}ORDER BY s.id", params)]

    def delete_session(self, session_id: str) -> None:
        # tasks (seed 000) may point at the session: keep them, without the dangling reference
        self.db.execute("UPDATE tasks SET session_id = NULL WHERE session_id = ?", (session_id,))
        self.db.execute("DELETE FROM working_memory_summaries WHERE session_id = ?", (session_id,))
        self.db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    # -- messages ------------------------------------------------------------------------

    def insert_message(self, m: Message) -> int:
        cursor = self.db.execute(
            f"INSERT INTO raw_messages ({', '.join(MESSAGE_COLUMNS[1:])}) VALUES ({', '.join('?' for _ in MESSAGE_COLUMNS[1:])})",
            (
                m.message_id, m.namespace, m.session_id, m.seq, m.role, m.content,
                None if m.content_blocks is None else _dumps(m.content_blocks), m.name, _dumps(m.tool_calls),
                m.tool_call_id, _dumps(m.additional_kwargs), m.platform, m.channel, m.person, m.bot_id,
                to_iso(m.sent_at), to_iso(m.stored_at), _dumps(m.attachments), m.embedding_model,
                m.embedding_content_hash, m.embedding_dimensions, to_iso(m.embedding_updated_at), _dumps(m.metadata),
                m.tier, m.access_count, to_iso(m.last_access_at), m.importance, to_iso(m.archived_at), int(m.pinned),
                m.summary_ref_id, m.token_count, int(m.active),
            ),
        )
        return inserted_rowid(cursor)

    def message(self, message_id: str) -> Message | None:
        rows = self.db.query(f"SELECT {_MSG_SELECT} FROM raw_messages m WHERE m.message_id = ?", (message_id,))
        return message_from_row(rows[0]) if rows else None

    def messages_by_ids(self, message_ids: Sequence[str]) -> dict[str, Message]:
        out: dict[str, Message] = {}
        ids = list(dict.fromkeys(message_ids))
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            for row in self.db.query(
                f"SELECT {_MSG_SELECT} FROM raw_messages m WHERE m.message_id IN ({', '.join('?' for _ in part)})", part
            ):
                message = message_from_row(row)
                out[message.message_id] = message
        return out

    def messages_by_rowids(self, rowids: Sequence[int]) -> list[Message]:
        out: list[Message] = []
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            out += [message_from_row(r) for r in self.db.query(
                f"SELECT {_MSG_SELECT} FROM raw_messages m WHERE m.id IN ({', '.join('?' for _ in part)}) ORDER BY m.id",
                part,
            )]
        return out

    def session_messages(
        self, session_id: str, *, after_seq: int | None = None, through_seq: int | None = None,
        limit: int | None = None, last: int | None = None, include_compressed: bool = True,
        active: bool | None = None, offset: int = 0,
    ) -> list[Message]:
        clauses = ["m.session_id = ?"]
        params: list[Any] = [session_id]
        if active is not None:
            clauses.append("m.active = ?")
            params.append(int(active))
        if after_seq is not None:
            clauses.append("m.seq > ?")
            params.append(after_seq)
        if through_seq is not None:
            clauses.append("m.seq <= ?")
            params.append(through_seq)
        if not include_compressed:
            clauses.append("m.archived_at IS NULL")
        where = " AND ".join(clauses)
        if last is not None:
            rows = self.db.query(
                f"SELECT {_MSG_SELECT} FROM raw_messages m WHERE {where} ORDER BY m.seq DESC LIMIT ?", (*params, last)
            )
            rows.reverse()
        else:
            tail = " LIMIT ? OFFSET ?" if limit is not None or offset else ""
            extra = [-1 if limit is None else limit, offset] if tail else []
            rows = self.db.query(
                f"SELECT {_MSG_SELECT} FROM raw_messages m WHERE {where} ORDER BY m.seq{tail}", (*params, *extra),
            )
        return [message_from_row(r) for r in rows]

    def message_at(self, session_id: str, index: int, *, active: bool | None = None) -> Message | None:
        """The message at a list position (negative counts from the end), or None.

        ``active``: the position among active (True) or inactive (False) messages only.
        """
        if index >= 0:
            sql, param = "ORDER BY m.seq ASC LIMIT 1 OFFSET ?", index
        else:
            sql, param = "ORDER BY m.seq DESC LIMIT 1 OFFSET ?", -index - 1
        state, params = ("", ()) if active is None else (" AND m.active = ?", (int(active),))
        rows = self.db.query(f"SELECT {_MSG_SELECT} FROM raw_messages m WHERE m.session_id = ?{state} {sql}",
                             (session_id, *params, param))
        return message_from_row(rows[0]) if rows else None

    def count(self, session_id: str, *, active: bool | None = None) -> int:
        if active is None:
            return int(self.db.scalar("SELECT count(*) FROM raw_messages WHERE session_id = ?", (session_id,)) or 0)
        return int(self.db.scalar("SELECT count(*) FROM raw_messages WHERE session_id = ? AND active = ?",
                                  (session_id, int(active))) or 0)

    def set_active(self, rowids: Sequence[int], active: bool) -> None:
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            self.db.execute(f"UPDATE raw_messages SET active = ? WHERE id IN ({', '.join('?' for _ in part)})",
                            (int(active), *part))

    def max_seq(self, session_id: str) -> int:
        """The highest ``seq`` among the session's messages (0 when it has none)."""
        return int(self.db.scalar("SELECT coalesce(max(seq), 0) FROM raw_messages WHERE session_id = ?",
                                  (session_id,)) or 0)

    def count_after(self, session_id: str, seq: int) -> int:
        return int(self.db.scalar(
            "SELECT count(*) FROM raw_messages WHERE session_id = ? AND seq > ?", (session_id, seq)) or 0)

    def shift_seqs(self, session_id: str, from_seq: int) -> None:
        """Make room at ``from_seq``: every later message moves one place down (two steps keep seqs unique)."""
        self.db.execute("UPDATE raw_messages SET seq = -seq - 1 WHERE session_id = ? AND seq >= ?", (session_id, from_seq))
        self.db.execute("UPDATE raw_messages SET seq = -seq WHERE session_id = ? AND seq < 0", (session_id,))

    def delete_messages(self, rowids: Sequence[int]) -> None:
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            self.db.execute(f"DELETE FROM raw_messages WHERE id IN ({', '.join('?' for _ in part)})", part)

    def set_flags(self, message_id: str, *, pinned: bool | None = None, importance: Any = ...) -> None:
        if pinned is not None:
            self.db.execute("UPDATE raw_messages SET is_pinned = ? WHERE message_id = ?", (int(pinned), message_id))
        if importance is not ...:
            self.db.execute("UPDATE raw_messages SET importance_score = ? WHERE message_id = ?", (importance, message_id))

    def track_access(self, message_ids: Iterable[str], now: datetime) -> None:
        """Seed 003: accessCount += 1, lastAccessAt = now (for messages without a live index chunk)."""
        ids = list(message_ids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self.db.execute(
                "UPDATE raw_messages SET access_count = access_count + 1, last_access_at = ? "
                f"WHERE message_id IN ({', '.join('?' for _ in part)})",
                (to_iso(now), *part),
            )

    # -- forgetting ----------------------------------------------------------------------

    def forgetting_groups(
        self, namespace: str, tier: str, cutoff: datetime, window_ms: int, min_size: int
    ) -> list[tuple[int, tuple[str | None, str | None, str | None, str | None], int]]:
        """(bucket, (platform, channel, person, bot_id), size) of the groups of live records of
        ``tier`` sent before ``cutoff`` that have at least ``min_size`` members, oldest bucket first."""
        rows = self.db.query(
            f"SELECT {_BUCKET} AS bucket, platform, channel, person, bot_id, count(*) AS n FROM raw_messages "
            "WHERE namespace = ? AND memory_stage = ? AND archived_at IS NULL AND timestamp < ? "
            "GROUP BY bucket, platform, channel, person, bot_id HAVING count(*) >= ? "
            "ORDER BY bucket, coalesce(platform, ''), coalesce(channel, ''), coalesce(person, ''), coalesce(bot_id, '')",
            (window_ms, namespace, tier, to_iso(cutoff), min_size),
        )
        return [(int(r[0]), (r[1], r[2], r[3], r[4]), int(r[5])) for r in rows]

    def group_members(
        self, namespace: str, tier: str, cutoff: datetime, window_ms: int, bucket: int,
        dims: tuple[str | None, str | None, str | None, str | None], limit: int,
    ) -> list[Message]:
        rows = self.db.query(
            f"SELECT {_MSG_SELECT} FROM raw_messages m WHERE m.namespace = ? AND m.memory_stage = ? "
            f"AND m.archived_at IS NULL AND m.timestamp < ? AND {_BUCKET.replace('timestamp', 'm.timestamp')} = ? "
            "AND m.platform IS ? AND m.channel IS ? AND m.person IS ? AND m.bot_id IS ? "
            "ORDER BY m.timestamp, m.id LIMIT ?",
            (namespace, tier, to_iso(cutoff), window_ms, bucket, *dims, limit),
        )
        return [message_from_row(r) for r in rows]

    def promote(self, rowids: Sequence[int], tier: str) -> None:
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            self.db.execute(
                f"UPDATE raw_messages SET memory_stage = ? WHERE id IN ({', '.join('?' for _ in part)})", (tier, *part)
            )

    def compress(self, rowids: Sequence[int], summary_id: str, now: datetime) -> None:
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            self.db.execute(
                "UPDATE raw_messages SET archived_at = ?, summary_ref_id = ? "
                f"WHERE id IN ({', '.join('?' for _ in part)})",
                (to_iso(now), summary_id, *part),
            )

    def namespaces_with_messages(self) -> list[str]:
        return [r[0] for r in self.db.query("SELECT DISTINCT namespace FROM raw_messages ORDER BY namespace")]

    # -- memory summaries -----------------------------------------------------------------

    def insert_summary(self, s: MemorySummary) -> None:
        self.db.execute(
            f"INSERT INTO memory_summaries ({', '.join(SUMMARY_COLUMNS)}) VALUES ({', '.join('?' for _ in SUMMARY_COLUMNS)}) "
            "ON CONFLICT(summary_id) DO UPDATE SET message_count = excluded.message_count, "
            "source_record_ids = excluded.source_record_ids, key_points = excluded.key_points, "
            "keywords = excluded.keywords, keywords_text = excluded.keywords_text, "
            "summary_text = excluded.summary_text, quality_score = excluded.quality_score, updated_at = excluded.updated_at",
            (
                s.summary_id, s.namespace, s.summary_tier, s.source_tier, to_iso(s.start_timestamp),
                to_iso(s.end_timestamp), s.message_count, _dumps(s.source_record_ids), _dumps(s.key_points),
                _dumps(s.keywords), s.keywords_text, s.summary_text, _dumps(s.dimensions), s.quality_score,
                to_iso(s.created_at), to_iso(s.updated_at),
            ),
        )

    def summary(self, summary_id: str) -> MemorySummary | None:
        rows = self.db.query(f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM memory_summaries WHERE summary_id = ?",
                             (summary_id,))
        return summary_from_row(rows[0]) if rows else None

    def summaries(
        self, namespace: str, *, tier: str | None = None, since: datetime | None = None, until: datetime | None = None,
        terms: Sequence[str] = (), session_id: str | None = None, limit: int | None = None,
    ) -> list[MemorySummary]:
        """Newest first; ``terms`` match ``keywords_text`` case-insensitively (any of them)."""
        clauses = ["namespace = ?"]
        params: list[Any] = [namespace]
        if tier is not None:
            clauses.append("summary_tier = ?")
            params.append(tier)
        if since is not None:
            clauses.append("end_timestamp >= ?")
            params.append(to_iso(since))
        if until is not None:
            clauses.append("start_timestamp < ?")
            params.append(to_iso(until))
        if terms:
            clauses.append("(" + " OR ".join("instr(casefold(keywords_text), ?) > 0" for _ in terms) + ")")
            params.extend(t.casefold() for t in terms)
        if session_id is not None:
            clauses.append("summary_id IN (SELECT summary_ref_id FROM raw_messages WHERE session_id = ?)")
            params.append(session_id)
        tail = " LIMIT ?" if limit is not None else ""
        rows = self.db.query(
            f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM memory_summaries WHERE {' AND '.join(clauses)} "
            f"ORDER BY end_timestamp DESC, summary_id{tail}",
            (*params, *([limit] if limit is not None else [])),
        )
        return [summary_from_row(r) for r in rows]

    def drop_summary_source(self, summary_id: str, rowid: int, now: datetime) -> bool:
        """Remove a deleted record from a summary's sources; delete the summary when none remain.

        Returns True when the summary itself was deleted.
        """
        summary = self.summary(summary_id)
        if summary is None:
            return False
        remaining = [r for r in summary.source_record_ids if r != rowid]
        if not remaining:
            self.db.execute("DELETE FROM memory_summaries WHERE summary_id = ?", (summary_id,))
            return True
        self.db.execute(
            "UPDATE memory_summaries SET source_record_ids = ?, message_count = ?, updated_at = ? WHERE summary_id = ?",
            (_dumps(remaining), len(remaining), to_iso(now), summary_id),
        )
        return False

    # -- working memory summaries -------------------------------------------------------------

    def latest_working(self, session_id: str) -> WorkingSummary | None:
        rows = self.db.query(
            f"SELECT {', '.join(WORKING_COLUMNS)} FROM working_memory_summaries WHERE session_id = ? "
            "ORDER BY last_seq DESC LIMIT 1",
            (session_id,),
        )
        return working_from_row(rows[0]) if rows else None

    def working_history(self, session_id: str) -> list[WorkingSummary]:
        rows = self.db.query(
            f"SELECT {', '.join(WORKING_COLUMNS)} FROM working_memory_summaries WHERE session_id = ? ORDER BY last_seq",
            (session_id,),
        )
        return [working_from_row(r) for r in rows]

    def put_working(self, w: WorkingSummary) -> None:
        self.db.execute(
            f"INSERT OR REPLACE INTO working_memory_summaries ({', '.join(WORKING_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in WORKING_COLUMNS)})",
            (w.id, w.session_id, w.namespace, w.summary, w.first_seq, w.last_seq, w.message_count, w.token_count,
             w.method, to_iso(w.created_at)),
        )

    def drop_working_from(self, session_id: str, seq: int) -> None:
        """Forget working summaries that cover ``seq`` or later (they mention a message that changed)."""
        self.db.execute("DELETE FROM working_memory_summaries WHERE session_id = ? AND last_seq >= ?", (session_id, seq))

    # -- erasure -----------------------------------------------------------------------------

    def erase_namespace(self, namespace: str) -> list[str | None]:
        """Delete every row of the namespace; return the transcript paths its sessions had."""
        paths = [r[0] for r in self.db.query("SELECT transcript_path FROM sessions WHERE namespace = ?", (namespace,))]
        self.db.execute("DELETE FROM working_memory_summaries WHERE namespace = ?", (namespace,))
        self.db.execute(
            "DELETE FROM working_memory_summaries WHERE session_id IN (SELECT id FROM sessions WHERE namespace = ?)",
            (namespace,),
        )
        self.db.execute("DELETE FROM raw_messages WHERE namespace = ?", (namespace,))
        self.db.execute("DELETE FROM memory_summaries WHERE namespace = ?", (namespace,))
        self.db.execute(
            "UPDATE tasks SET session_id = NULL WHERE session_id IN (SELECT id FROM sessions WHERE namespace = ?)",
            (namespace,),
        )
        self.db.execute("DELETE FROM sessions WHERE namespace = ?", (namespace,))
        return paths

"""Session transcripts as JSONL files (seed 000: ``sessions/<session-id>.jsonl``, episodic memory).

The database is the record; a transcript is derived from it, one JSON line per message
in ``seq`` order, and kept byte-for-byte reproducible from the rows. Crash safety comes
from the order of writes, all inside the database transaction that stores the message
(whose ``BEGIN IMMEDIATE`` also serialises appends across processes):

1. the session row says how long its transcript should be (``transcript_bytes``);
2. if the file is not that long (an earlier process died mid-append, or someone cut
   it), it is repaired first: a longer file is truncated to the recorded length, any
   other mismatch is rewritten from the database (temporary file + atomic rename);
3. the message rows and index entries are written, then the line(s) appended;
4. the session row records the new length, and the transaction commits.

A process killed anywhere in 3-4 leaves a file longer than recorded (or with a partial
last line) next to a database without the message: the next write or the next open
truncates it. So a kill loses at most the message being written, and after reopening
the file and the database agree. On open, every session's file size is checked against
its row (one ``stat`` each); ``Conversations.reconcile(full=True)`` also compares bytes.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..clock import to_iso
from ..embed import fnv1a_64
from ..errors import StorageError
from .records import Message

__all__ = ["TranscriptDir", "transcript_line", "transcript_name"]

_SAFE = re.compile(r"^[a-z0-9][a-z0-9._\-]{0,99}$")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
MARKER = ".openkoi-store"


def transcript_name(session_id: str) -> str:
    """The file name of a session's transcript.

    Lowercase ids of letters, digits, ``.``, ``_`` and ``-`` (UUIDs, ``chat-42``) are used
    as they are; any other id becomes a lowercase slug plus 16 hex digits of its FNV-64a
    hash, so it is safe on every filesystem (including case-insensitive ones).
    """
    if _SAFE.match(session_id) and session_id.split(".")[0] not in _RESERVED and not session_id.endswith("."):
        return f"{session_id}.jsonl"
    slug = re.sub(r"[^a-z0-9]+", "-", session_id.casefold()).strip("-")[:48] or "session"
    return f"{slug}-{fnv1a_64(session_id):016x}.jsonl"


def transcript_line(message: Message) -> bytes:
    """The JSONL line of a message: what was appended, never the memory state that changes later."""
    record: dict[str, Any] = {
        "v": 1,
        "message_id": message.message_id,
        "session_id": message.session_id,
        "namespace": message.namespace,
        "seq": message.seq,
        "role": message.role,
        "content": message.raw_content,
    }
    for key in ("name", "tool_call_id", "platform", "channel", "person", "bot_id"):
        value = getattr(message, key)
        if value is not None:
            record[key] = value
    for key in ("tool_calls", "additional_kwargs", "metadata", "attachments"):
        value = getattr(message, key)
        if value:
            record[key] = value
    record["sent_at"] = to_iso(message.sent_at)
    record["stored_at"] = to_iso(message.stored_at)
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class TranscriptDir:
    """The directory of transcripts of one store, and the file operations on it."""

    def __init__(self, directory: Path, *, store_id: str, fsync: bool = False) -> None:
        self.directory = directory
        self.store_id = store_id
        self.fsync = fsync
        self._claimed = False

    def path(self, name: str) -> Path:
        return self.directory / name

    def claim(self) -> None:
        """Make the directory, and make sure it belongs to this store (not to another database)."""
        if self._claimed:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            marker = self.directory / MARKER
            if marker.exists():
                owner = marker.read_text(encoding="utf-8").strip()
                if owner != self.store_id:
                    raise StorageError(
                        f"the transcript directory {self.directory} belongs to another openkoi-memory database "
                        f"(store id {owner}); give this store its own with "
                        "config={'conversations': {'transcript_dir': ...}}, or remove that directory"
                    )
            else:
                marker.write_text(self.store_id + "\n", encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"cannot use the transcript directory {self.directory} ({exc.strerror or exc})") from None
        self._claimed = True

    def size(self, name: str) -> int | None:
        try:
            return self.path(name).stat().st_size
        except FileNotFoundError:
            return None

    def append(self, name: str, data: bytes) -> int:
        """Append ``data``; return the file's new size."""
        self.claim()
        try:
            with open(self.path(name), "ab") as handle:
                handle.write(data)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
                return handle.tell()
        except OSError as exc:
            raise StorageError(f"cannot append to the transcript {self.path(name)} ({exc.strerror or exc})") from None

    def truncate(self, name: str, size: int) -> None:
        """Cut the file back to ``size`` bytes (never extends it)."""
        path = self.path(name)
        try:
            current = path.stat().st_size
        except FileNotFoundError:
            return
        if current > size:
            os.truncate(path, size)

    def ends_cleanly(self, name: str) -> bool:
        """True when the file is empty or ends with a newline."""
        path = self.path(name)
        try:
            with open(path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell() == 0:
                    return True
                handle.seek(-1, os.SEEK_END)
                return handle.read(1) == b"\n"
        except FileNotFoundError:
            return True

    def read(self, name: str) -> bytes | None:
        try:
            return self.path(name).read_bytes()
        except FileNotFoundError:
            return None

    def rewrite(self, name: str, lines: Iterable[bytes]) -> int:
        """Replace the file atomically with ``lines``; return its size."""
        self.claim()
        target = self.path(name)
        temp = target.with_name(f"{target.name}.tmp-{secrets.token_hex(4)}")
        size = 0
        try:
            with open(temp, "wb") as handle:
                for line in lines:
                    handle.write(line)
                    size += len(line)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            os.replace(temp, target)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            raise StorageError(f"cannot write the transcript {target} ({exc.strerror or exc})") from None
        return size

    def remove(self, name: str) -> None:
        self.path(name).unlink(missing_ok=True)

    def stray_files(self, known: set[str]) -> list[Path]:
        """Transcripts no session owns any more, and temporary files of interrupted rewrites."""
        if not self.directory.is_dir():
            return []
        out = []
        for path in self.directory.iterdir():
            if ".jsonl.tmp-" in path.name or (path.suffix == ".jsonl" and path.name not in known):
                out.append(path)
        return out

"""Keeping each session's JSONL transcript in step with its rows (the order of writes is in
:mod:`.transcripts`): where the files go, the writes that go with a row's, repairs and reconciling.

Every method that writes runs inside the caller's transaction, under the memory's lock.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .records import Message, ReconcileReport, Session
from .repository import MessageRepository
from .transcripts import TranscriptDir, transcript_line, transcript_name

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["TranscriptSync"]


class TranscriptSync:
    """The transcript directory of one memory (or none, when transcripts are off) and its files."""

    def __init__(self, kernel: Kernel, repo: MessageRepository) -> None:
        self.kernel = kernel
        self._repo = repo
        self._tdir: TranscriptDir | None = None
        self.root = self._resolve_root()

    def _resolve_root(self) -> Path | None:
        cfg, db = self.kernel.config.conversations, self.kernel.backend
        in_memory = db.path == ":memory:"
        # a PostgreSQL memory is shared by several machines: a local transcript would hold only a part
        shared = db.capabilities.shared
        if cfg.transcripts == "off" or db.read_only or (cfg.transcripts == "auto" and (in_memory or shared)):
            return None
        if cfg.transcript_dir:
            return Path(cfg.transcript_dir).expanduser()
        if in_memory:
            raise ConfigError(
                "conversations.transcripts = 'on' for a ':memory:' store needs a directory: set "
                "conversations.transcript_dir (a ':memory:' store has no data directory of its own)"
            )
        return self.kernel.data_dir / "sessions"

    def dir(self) -> TranscriptDir | None:
        """The directory's file operations, or None when transcripts are off."""
        if self.root is None:
            return None
        if self._tdir is None:
            db = self.kernel.backend
            store_id = db.get_meta("store_id")
            if store_id is None:
                with db.transaction():
                    store_id = db.get_meta("store_id")
                    if store_id is None:  # the id that marks the transcript directory as this store's
                        store_id = secrets.token_hex(8)
                        db.set_meta("store_id", store_id)
            self._tdir = TranscriptDir(self.root, store_id=store_id,
                                       fsync=self.kernel.config.conversations.transcript_fsync)
        return self._tdir

    def path(self, session_id: str) -> Path | None:
        """The JSONL file of a session (whether or not it exists yet), or None when transcripts are off."""
        if self.root is None:
            return None
        return self.root / transcript_name(session_id)

    def relative(self, name: str) -> str:
        """What the session row records as its transcript's path: relative to the data folder when inside it."""
        assert self.root is not None
        path = self.root / name
        try:
            return str(path.relative_to(self.kernel.data_dir))
        except ValueError:
            return str(path)

    # -- writes that go with a row's ---------------------------------------------------------------

    def insert_session(self, session: Session) -> None:
        """Write the session's row and, when transcripts are on, its empty transcript."""
        tdir = self.dir()
        if tdir is None:
            self._repo.insert_session(session)
            return
        name = transcript_name(session.id)
        session.transcript_path = self.relative(name)
        self._repo.insert_session(session)
        size = tdir.rewrite(name, [])
        self._repo.update_session(session.id, transcript_bytes=size)

    def append(self, session_id: str, messages: Sequence[Message], last_seq: int, now: datetime) -> None:
        """Append the lines of ``messages`` and record the session's new ``last_seq`` and length;
        a rollback (or a failed append) cuts the file back to its recorded length."""
        tdir = self.dir()
        if tdir is None:
            self._repo.update_session(session_id, last_seq=last_seq, updated_at=now, transcript_bytes=None)
            return
        name = transcript_name(session_id)
        _, before = self._repo.transcript_state(session_id)
        assert before is not None
        self.kernel.backend.on_rollback(lambda: tdir.truncate(name, before))
        try:
            size = tdir.append(name, b"".join(transcript_line(m) for m in messages))
            self._repo.update_session(session_id, last_seq=last_seq, updated_at=now, transcript_bytes=size)
        except BaseException:
            tdir.truncate(name, before)
            raise

    def drop_line(self, message: Message, *, was_last: bool) -> None:
        """After ``message`` was deleted: cut its line off the end when it was the last, else rewrite."""
        tdir = self.dir()
        if tdir is None:
            self._repo.update_session(message.session_id, transcript_bytes=None)
            return
        name = transcript_name(message.session_id)
        _, recorded = self._repo.transcript_state(message.session_id)
        line = transcript_line(message)
        if was_last and recorded is not None and recorded >= len(line):
            tdir.truncate(name, recorded - len(line))
            self._repo.update_session(message.session_id, transcript_bytes=recorded - len(line))
            if tdir.ends_cleanly(name):
                return
        self.rewrite(message.session_id)

    def rewrite(self, session_id: str) -> None:
        """Write the session's transcript afresh from its rows."""
        tdir = self.dir()
        if tdir is None:
            self._repo.update_session(session_id, transcript_bytes=None)
            return
        name = transcript_name(session_id)
        size = tdir.rewrite(name, (transcript_line(m) for m in self._repo.session_messages(session_id)))
        self._repo.update_session(session_id, transcript_path=self.relative(name), transcript_bytes=size)

    def repair(self, session_id: str, *, full: bool = False) -> bool:
        """Make the session's transcript match the rows; True if it changed."""
        tdir = self.dir()
        if tdir is None:
            return False
        name = transcript_name(session_id)
        path, recorded = self._repo.transcript_state(session_id)
        actual = tdir.size(name)
        if path == self.relative(name) and recorded is not None and actual is not None:
            if actual == recorded and not full:
                return False
            if actual > recorded and not full:
                tdir.truncate(name, recorded)  # a line written by a transaction that never committed
                if tdir.ends_cleanly(name):
                    return True
            if full:
                expected = b"".join(transcript_line(m) for m in self._repo.session_messages(session_id))
                if tdir.read(name) == expected:
                    return False
        self.rewrite(session_id)
        return True

    def remove_after_commit(self, session_ids: Sequence[str]) -> None:
        """Remove these sessions' transcripts once the transaction commits."""
        tdir = self.dir()
        if tdir is None or not session_ids:
            return
        names = [transcript_name(i) for i in session_ids]

        def remove() -> None:
            for name in names:
                tdir.remove(name)

        self.kernel.backend.after_commit(remove)

    # -- reading and checking ------------------------------------------------------------------------

    def read(self, session_id: str) -> list[dict[str, Any]]:
        """The session's transcript, parsed (one dict per line); [] when there is none."""
        tdir = self.dir()
        if tdir is None:
            return []
        with self.kernel.session():
            _, recorded = self._repo.transcript_state(session_id)
        data = tdir.read(transcript_name(session_id)) or b""
        if recorded is not None:
            data = data[:recorded]  # a concurrent writer's uncommitted line is not part of it yet
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    def reconcile(self, *, full: bool = False) -> ReconcileReport:
        """Check each session's file against its row, repair what differs, remove stray files."""
        report = ReconcileReport()
        tdir = self.dir()
        if tdir is None:
            return report
        with self.kernel.session() as db:
            rows = self._repo.sessions_with_transcripts()
            suspects = []
            for session_id, path, recorded in rows:
                name = transcript_name(session_id)
                report.checked += 1
                size = tdir.size(name)
                if path is None and recorded is None and size is None and self._repo.count(session_id) == 0:
                    continue  # a session row without messages or a file (e.g. made for a task): nothing to write
                if full or path != self.relative(name) or recorded is None or size != recorded:
                    suspects.append(session_id)
            stray = tdir.stray_files({transcript_name(r[0]) for r in rows})
            if not suspects and not stray:
                return report
            with db.transaction():  # waits for writers: their appends are complete or rolled back
                for session_id in suspects:
                    if self._repo.session(session_id) is not None and self.repair(session_id, full=full):
                        report.repaired.append(session_id)
                known = {transcript_name(s) for s in self._repo.session_ids(None)}
                for stray_file in tdir.stray_files(known):
                    stray_file.unlink(missing_ok=True)
                    report.removed.append(stray_file.name)
        return report

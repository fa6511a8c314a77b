"""``store.erase_namespace``, ``finish_erase`` and ``verify_erase``: the steps of an erase are
described in :mod:`shared_core.erasure`."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import to_iso
from ..conversations.service import Conversations
from ..conversations.transcripts import transcript_name
from ..errors import BusyError, OpenKoiError, StorageError, StoreClosedError
from ..files import upload_folder, upload_roots
from ..index.scope import Scope
from ..lifecycle.forgetting import LOCK_PREFIX
from ..lifecycle.locks import RunLocks
from ..memories import check_namespace
from ..workspace import Workspaces
from .records import PENDING_KEY, EraseReport
from .repository import ErasureRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Erasure"]

logger = logging.getLogger("openkoi.store")

_RETRY_FIRST, _RETRY_MAX = 0.5, 10.0  # seconds between the background finisher's tries (doubling)
# how long a retry waits for readers to end (a truncating checkpoint: writers wait meanwhile) or for the
# writer's turn (the rewrite): short, since this store's own searches wait for a try that holds its lock
_FINISH_WAIT = 0.2


class Erasure:
    """``erase_namespace``, ``finish_erase`` and ``verify_erase`` of one store (see the module docs)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.db = kernel.backend
        self._repo = ErasureRepository(kernel.backend)
        self._finisher: threading.Thread | None = None
        self._stop = threading.Event()

    # -- erase ------------------------------------------------------------------------------------

    def erase(self, namespace: str) -> EraseReport:
        check_namespace(namespace)
        kernel, db = self.kernel, self.db
        staged = db.capabilities.staged_erase  # the file is rewritten and its log cut after the commit
        with kernel.session():
            if db.in_transaction:
                raise StorageError("erase_namespace cannot run inside store.transaction(): it rewrites the file "
                                   "after its own commit; call it after the transaction block")
            before = self._all_files(namespace)
            with db.secure_delete():
                with db.transaction():
                    deleted = {table: n for table, n in self._row_counts(namespace).items() if n}
                    db.defer_foreign_keys()  # erasers may run in any order
                    kernel.memories.delete_rows(kernel.memories.rowids(Scope(namespaces=(namespace,), current_only=False)))
                    for eraser in list(kernel.hooks.erasers):
                        eraser(namespace)
                    kernel.keyword.optimize()
                    kernel.vectors.purge_deleted()
                    db.refresh_statistics()
                    if staged:
                        db.set_meta(PENDING_KEY, json.dumps({"stage": "vacuum", "since": to_iso(kernel.clock.now())}))
                kernel.vectors.reset()
            files = tuple(sorted(str(p) for p in before if not p.exists()))
            if not staged:  # nothing to wait for: vacuum now (PostgreSQL's tables; nothing in memory)
                db.vacuum()
        finish = self.finish() if staged else EraseReport(None)
        rows_left, files_left = self._leftovers(namespace)
        return EraseReport(namespace, deleted, files, (*rows_left, *files_left, *finish.remaining),
                           db.capabilities.erase_caveats)

    # -- finish ------------------------------------------------------------------------------------

    def finish(self, *, wait: float = 0.0) -> EraseReport:
        """Complete an erase whose bytes could not all go yet; a no-op when none is pending.

        ``wait``: seconds to keep retrying while another connection's snapshot holds the old pages.
        Still pending afterwards: a thread of this store keeps retrying while the store is open.
        """
        remaining = self._finish_once(_FINISH_WAIT)
        deadline = time.monotonic() + wait
        while remaining and time.monotonic() < deadline:
            time.sleep(min(_RETRY_FIRST, max(0.0, deadline - time.monotonic())))
            remaining = self._finish_once(_FINISH_WAIT, vacuum_wait=_FINISH_WAIT)
        if remaining:
            self._start_finisher()
        return EraseReport(None, remaining=remaining, notes=self.db.capabilities.erase_caveats)

    def resume(self) -> None:
        """On open: one quick try at an erase another process left pending (never fails the open)."""
        db = self.db
        if not db.capabilities.staged_erase or db.read_only or db.get_meta(PENDING_KEY) is None:
            return
        try:
            remaining = self._finish_once(0.0, vacuum_wait=0.0)
        except OpenKoiError as exc:
            logger.warning("could not finish the erase pending in %s on open: %s", db.path, exc)
            return
        if remaining:
            logger.info("an erase of %s is still pending: %s", db.path, remaining[0])

    def _finish_once(self, wait: float, *, vacuum_wait: float | None = None) -> tuple[str, ...]:
        """One try: the rewrite if it is still due (waiting for the writer's turn ``vacuum_wait``
        seconds, default the busy timeout), then the log cut (letting readers finish ``wait`` s)."""
        db = self.db
        if not db.capabilities.staged_erase or db.read_only:
            return ()
        with self.kernel.session():
            pending = _pending(db)
            if pending is None:
                return ()
            if pending.get("stage") == "vacuum":
                try:
                    db.vacuum(wait=vacuum_wait)
                except BusyError as exc:
                    return (f"{db.path} is not rewritten yet: another connection kept the write lock past the busy "
                            f"timeout ({exc}); the erase finishes when it lets go (store.finish_erase(), or "
                            "openkoi-memory erase --finish)",)
                pending = {**pending, "stage": "checkpoint"}
                with db.transaction():
                    db.set_meta(PENDING_KEY, json.dumps(pending))
            if not db.truncate_log(wait=wait):
                return (f"{db.path}-wal and free space in {db.path} still hold old pages of erased rows: another "
                        "connection reads a snapshot taken before the erase (a transaction left open, a cursor not "
                        "read to its end, a process stopped in a debugger). The erase finishes by itself as soon "
                        "as that read ends; end it (commit or close that connection), then check with "
                        "openkoi-memory erase --verify (store.verify_erase())",)
            with db.transaction():
                self._repo.clear_pending()
            db.truncate_log(wait=0.0)  # leave the log empty too; it holds nothing erased either way
            return ()

    def _start_finisher(self) -> None:
        if self._finisher is not None and self._finisher.is_alive():
            return
        self._stop.clear()
        self._finisher = threading.Thread(target=self._retry, name="openkoi-erase-finisher", daemon=True)
        self._finisher.start()

    def _retry(self) -> None:
        delay = _RETRY_FIRST
        while not self._stop.wait(delay):
            try:
                if not self._finish_once(_FINISH_WAIT, vacuum_wait=_FINISH_WAIT):
                    return
            except StoreClosedError:
                return
            except Exception as exc:  # the next try, finish_erase() or maintain() may still succeed
                logger.warning("finishing an erase of %s failed (%s: %s); retrying", self.db.path,
                               type(exc).__name__, exc)
            delay = min(delay * 2, _RETRY_MAX)

    def stop_finisher(self) -> None:
        """Stop retrying an unfinished erase (when the memory closes)."""
        self._stop.set()
        thread = self._finisher
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)

    # -- verify ------------------------------------------------------------------------------------

    def verify(self, namespace: str | None = None) -> EraseReport:
        """What remains: the namespace's rows and files (when ``namespace`` is given) and, on SQLite,
        whether old pages of an unfinished erase may still be in the file or its log."""
        db = self.db
        rows_left: tuple[str, ...] = ()
        files_left: tuple[str, ...] = ()
        if namespace is not None:
            check_namespace(namespace)
            rows_left, files_left = self._leftovers(namespace)
        bytes_left: tuple[str, ...] = ()
        if db.capabilities.staged_erase:
            with self.kernel.session():
                pending = _pending(db)
            if pending is not None:
                bytes_left = (f"an erase begun at {pending.get('since', '?')} is unfinished: {db.path} or "
                              f"{db.path}-wal may still hold old pages of erased rows; run openkoi-memory erase "
                              "--finish (store.finish_erase()) once no other connection holds a long read",)
        return EraseReport(namespace, remaining=(*rows_left, *files_left, *bytes_left),
                           notes=db.capabilities.erase_caveats, action="verify")

    # -- what a namespace has ------------------------------------------------------------------------

    def _row_counts(self, namespace: str) -> dict[str, int]:
        """Rows of the namespace per table, and its forgetting lock (a row of ``run_locks`` keyed by it)."""
        counts = self._repo.row_counts(namespace)
        lock = RunLocks(self.db, self.kernel.clock).current(LOCK_PREFIX + namespace)
        counts["run_locks"] = 0 if lock is None else 1
        return counts

    def _leftovers(self, namespace: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(rows, files) of the namespace still there, one sentence each."""
        with self.kernel.session():
            counts = {t: n for t, n in self._row_counts(namespace).items() if n}
            own = self._own_files(namespace)
        rows = (f"{sum(counts.values())} row(s) of {namespace!r} in "
                f"{', '.join(f'{t} ({n})' for t, n in sorted(counts.items()))}; erase the namespace (again, if "
                "they were written after an erase)",) if counts else ()
        files = tuple(f"{path}, a file of {namespace!r} (written after the erase, or it could not be removed: check "
                      "its permissions); erase again, or delete it" for path in sorted(own))
        return rows, files

    def _own_files(self, namespace: str) -> set[Path]:
        """The namespace's files: its upload folders, the Markdown files of its workspace folder and its
        sessions' transcripts (also those whose session is gone: they record the namespace in each line)."""
        kernel = self.kernel
        found: set[Path] = set()
        for folder in (upload_folder(root, namespace) for root in upload_roots(kernel.data_dir, kernel.backend)):
            found |= _walk(folder)
        workspace = kernel.service(Workspaces).folder_of(namespace)
        if workspace is not None:
            found |= {p for p in _walk(workspace) if p.suffix == ".md"}
        found |= _transcripts_of(kernel.service(Conversations), namespace)
        return found

    def _all_files(self, namespace: str) -> set[Path]:
        """Every file of the memory's data folder and of the namespace (for the list of what an erase removed)."""
        everything = self._own_files(namespace)
        if self.kernel.has_data_dir:
            everything |= _walk(self.kernel.data_dir)
        return everything


# -- helpers ----------------------------------------------------------------------------------------


def _pending(db: Any) -> dict[str, Any] | None:
    text = db.get_meta(PENDING_KEY)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"stage": "vacuum"}


def _transcripts_of(conversations: Conversations, namespace: str) -> set[Path]:
    """The transcripts of the namespace's sessions, and stray transcripts (no session owns them) whose
    first line records the namespace."""
    folder = conversations.transcript_dir
    if folder is None or not folder.is_dir():
        return set()
    repository = conversations.repository
    found = {folder / transcript_name(i) for i in repository.session_ids(namespace)}
    known = {transcript_name(i) for i in repository.session_ids(None)}
    wanted = f'"namespace":{json.dumps(namespace, ensure_ascii=False)},'.encode()
    for entry in os.scandir(folder):
        stray = (entry.name.endswith(".jsonl") and entry.name not in known) or ".jsonl.tmp-" in entry.name
        if not stray:
            continue
        try:
            with open(entry.path, "rb") as handle:
                if wanted in handle.readline():
                    found.add(Path(entry.path))
        except OSError:
            continue
    return {p for p in found if p.exists()}


def _walk(root: Path) -> set[Path]:
    if root.is_file():
        return {root}
    return {Path(current, name) for current, _dirs, names in os.walk(root) for name in names}

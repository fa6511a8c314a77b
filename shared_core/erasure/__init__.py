"""Erasing a namespace: every byte of it leaves the disk, or the report says what is left and why.

``store.erase_namespace(ns)`` works in three steps on an SQLite file:

1. **Rows.** One write transaction with SQLite's ``secure_delete`` on (deleted content is
   overwritten with zeros, not only unlinked): the namespace's rows in every table (each domain
   registers an eraser), its keyword postings merged out of the FTS5 indexes (``optimize``), the
   vector table copied without deleted vectors, the planner's sampled index keys
   (``sqlite_stat4``) rebuilt, and a marker that an erase is unfinished (it names no namespace).
   Once it commits, the namespace's files go: transcripts, REST uploads, workspace files,
   proposed SKILL.md files.
2. **The file.** ``VACUUM`` rewrites the database from its live rows: no free page or slack
   space keeps an older copy (of an edit, of a merge, of a row deleted before ``secure_delete``).
3. **The log.** A truncating checkpoint copies the write-ahead log into the file and cuts it to
   zero bytes; until then ``<db>-wal`` still holds the old page images. It cannot finish while
   another connection reads a snapshot taken before the erase (a process inside ``BEGIN ...``,
   a cursor not read to its end), nor can SQLite drop the old pages that snapshot still sees.
   The erase then reports ``pending`` and finishes by itself as soon as it can: a thread of the
   erasing store retries while it stays open, and any later :meth:`MemoryStore.finish_erase`,
   ``maintain()``, opening of the memory or ``openkoi-memory erase --finish`` completes it.

The marker is cleared only after the log was cut, so ``verify`` (``openkoi-memory erase --verify``)
can tell from any process whether old bytes may remain. On PostgreSQL the rows are deleted and the
tables vacuumed; what the server itself keeps (dead tuples until vacuumed, its WAL, base backups
and replicas) is listed in the report's ``notes`` and in docs/privacy.md.
"""

from __future__ import annotations

from .records import PENDING_KEY, EraseReport
from .service import Erasure

__all__ = ["EraseReport", "Erasure", "PENDING_KEY"]

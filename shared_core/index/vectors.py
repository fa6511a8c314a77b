"""The vector side of search.

Vectors live in ``memory_vec`` (a sqlite-vec ``vec0`` table, cosine distance): that is
the durable copy, written in the same transaction as the row and its FTS entry. Two
ways to search them:

* ``sqlite-vec``: exact KNN inside SQLite, with the scope as a ``chunk_rowid IN
  (subquery)`` constraint, so filters apply before top-k. No memory cost; about
  60-80 ms at 100k rows on a small machine.
* ``mirror`` (the default): an in-process copy of the vectors as a float32 matrix plus
  their sign bits (binary quantisation). Small scopes are scanned exactly; large ones
  are ranked by Hamming distance on the bits, and the best ``rerank_pool`` are then
  scored exactly, which finds the true top-k for well over 95 % of queries on real
  sentence embeddings at a few milliseconds per 100k rows.

The mirror follows other connections through ``index_log``, a table every change to a
chunk appends to (by trigger): before each search it reads the log past the last
sequence number it applied, refreshes those rows' state, and re-reads a vector only
when the row's embedding stamp changed. Its own writes reach it after commit, never
before, so a rolled-back write cannot leak into search.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..clock import from_iso
from ..config import DatabaseConfig, SearchConfig
from ..db import Backend, Database
from ..db.postgres import PostgresDatabase
from .protocols import RowState, VectorIndex
from .scope import Scope

try:  # the near-duplicate scan compiled (setup.py builds it where a C compiler is); else numpy
    from .. import _speedups
except ImportError:  # pragma: no cover - exercised by the tests that force numpy
    _speedups = None

__all__ = ["SqliteVectorIndex", "epoch_of", "stamp_of", "vector_index_for"]

_VEC0_MAX_K = 4096  # sqlite-vec refuses a KNN query for more neighbours
_BATCH = 500  # rowids per IN (...) list
_VEC_CLEARS_ON_DELETE = (0, 1, 9)  # the first sqlite-vec seen to zero a deleted vector's bytes
_SMALL_MIRROR = 1024  # rows below which a near-duplicate check just scans every vector
_SEVERAL = -1  # in _Mirror.by_content: more than one row holds that content
_CPUS = os.cpu_count() or 1  # one: no worker thread for the vector scan


def _dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Row-by-vector products with numpy's own single-threaded loop, not BLAS.

    A matrix-vector product is memory-bound, so threads gain little, and a multi-threaded
    BLAS waits for its slowest thread: on a busy 2-core machine a 10k x 384 product took
    11.5 ms through BLAS and 0.6 ms through einsum.
    """
    return np.einsum("ij,j->i", matrix, vector)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 in ``words``."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    return _POPCOUNT[words.view(np.uint8)].reshape(*words.shape, 8).sum(axis=-1, dtype=np.uint8)  # numpy < 2.0


def sign_code(vectors: np.ndarray, words: int) -> np.ndarray:
    """The sign bits of a vector (or of each row of a matrix) packed into ``words`` uint64 words."""
    bits = np.packbits(vectors > 0, axis=-1)
    pad = words * 8 - bits.shape[-1]
    if pad:
        bits = np.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
    return np.ascontiguousarray(bits).view(np.uint64)


def sign_bit_bound(threshold: float, bits: int, sigmas: float = 6.0) -> int | None:
    """How many of ``bits`` sign bits two vectors with cosine similarity ``threshold`` can differ in.

    The sign of a projection differs between two vectors with probability angle / pi (the
    SimHash argument), so their Hamming distance over ``bits`` sign bits is binomial around
    ``bits x arccos(threshold) / pi``; the bound is that mean plus ``sigmas`` standard
    deviations. None when the bound does not separate anything (a threshold near zero).
    """
    p = math.acos(max(-1.0, min(1.0, threshold))) / math.pi
    bound = int(bits * p + sigmas * math.sqrt(bits * p * (1 - p))) + 1
    return bound if bound < bits // 2 else None


def centred_threshold(threshold: float, query: np.ndarray, centre: np.ndarray) -> float | None:
    """The least cosine similarity between ``query - centre`` and ``x - centre`` for any unit
    vector ``x`` whose cosine similarity with the unit vector ``query`` exceeds ``threshold``
    (``threshold`` itself when ``centre`` is zero).

    The shift leaves the difference alone: with a = query - centre and b = x - centre,
    |a - b|^2 = |query - x|^2 < 2 - 2 x threshold =: D, so cos(a, b) = (|a|^2 + |b|^2 - D) /
    (2 |a| |b|) at least, which is smallest at |b| = sqrt(|a|^2 - D), kept within what a unit
    vector allows, |b| in [1 - |centre|, 1 + |centre|]. None when that rules nothing out.
    """
    diff = query - centre
    return _least_centred(threshold, math.sqrt(float(diff @ diff)), math.sqrt(float(centre @ centre)))


def _least_centred(threshold: float, a: float, shift: float) -> float | None:
    """:func:`centred_threshold` from |query - centre| (``a``) and |centre| (``shift``)."""
    slack = 2.0 - 2.0 * threshold
    if a == 0.0:
        return None
    low, high = max(1e-6, 1.0 - shift), 1.0 + shift
    b = min(high, max(low, math.sqrt(max(0.0, a * a - slack))))
    least = (a * a + b * b - slack) / (2.0 * a * b)
    return least if least > 0.0 else None


def epoch_of(iso: str | None) -> float:
    """Epoch seconds of a stored timestamp (infinity for none)."""
    when = from_iso(iso)
    return math.inf if when is None else when.timestamp()


def stamp_of(embedded_at: str | None, content_hash: str | None) -> str:
    """A value that changes whenever a row's vector changes."""
    return f"{embedded_at or ''}|{content_hash or ''}"


def _content_of(stamp: str) -> str:
    """The content hash in a :func:`stamp_of` value."""
    return stamp.rpartition("|")[2]


_STATE_COLUMNS = "chunk_rowid, namespace, kind, expires_at, valid_to IS NULL, embedded_at, content_hash"
_JOINED_STATE_COLUMNS = ", ".join(f"c.{column}" for column in _STATE_COLUMNS.split(", "))


def _state(row: Sequence[Any]) -> RowState:
    return RowState(row[1], row[2], epoch_of(row[3]), bool(row[4]), stamp_of(row[5], row[6]))


class _Mirror:
    """Growable arrays of vectors, sign bits and filter columns, addressed by slot.

    Two sign codes per vector: ``codes``, its own signs, which pick search's candidates, and
    the signs of the vector minus ``centre`` (the mean of the stored vectors, recomputed
    whenever the mirror is loaded or has doubled), for the near-duplicate check: their first
    two words column-major in ``centred_head`` (scanned for every row), the rest row-major in
    ``centred_tail`` (read for the few rows that pass: one cache line each).
    Embeddings share a common direction (the mean of 100k hashing vectors has norm 0.46, of
    all-MiniLM-L6-v2 vectors 0.50), so the raw signs of unrelated texts agree in many places;
    centred, 3.6x fewer rows passed the check's first stage. Search keeps the raw signs: they
    rank by cosine similarity itself (centred ones lost recall with all-MiniLM-L6-v2).
    """

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.words = -(-dims // 64)  # uint64 words per sign code (the last one zero-padded)
        self.head = min(2, self.words)  # words of the centred code in the near-duplicate check's first stage
        self.capacity = 0
        self.size = 0
        self.centre = np.zeros(dims, dtype=np.float32)
        self.centre_norm = 0.0
        self._centred_at = 0  # how many rows the mirror held when ``centre`` was computed
        self._last_centred: tuple[np.ndarray, np.ndarray, float, np.ndarray] | None = None  # see centred()
        self.slot: dict[int, int] = {}
        self.stamps: dict[int, str] = {}
        # content hash -> the one row holding it (_SEVERAL: more than one), for the exact-duplicate
        # check of every add: a dictionary lookup instead of a query
        self.by_content: dict[str, int] = {}
        self.ns_codes: dict[str, int] = {}
        self.kind_codes: dict[str, int] = {}
        self._allocate(1024)

    def _allocate(self, capacity: int) -> None:
        def grow(old: np.ndarray | None, shape: tuple[int, ...], dtype: Any, fill: Any = 0) -> np.ndarray:
            new = np.full(shape, fill, dtype=dtype)
            if old is not None:
                new[: self.size] = old[: self.size]
            return new

        def grow_columns(old: np.ndarray | None, words: int) -> np.ndarray:
            codes = np.zeros((words, capacity), dtype=np.uint64)
            if old is not None:
                codes[:, : self.size] = old[:, : self.size]
            return codes

        d = self.dims
        self.rowids = grow(getattr(self, "rowids", None), (capacity,), np.int64)
        self.alive = grow(getattr(self, "alive", None), (capacity,), bool, False)
        self.ns = grow(getattr(self, "ns", None), (capacity,), np.int32)
        self.kind = grow(getattr(self, "kind", None), (capacity,), np.int32)
        self.expires = grow(getattr(self, "expires", None), (capacity,), np.float64, math.inf)
        self.current = grow(getattr(self, "current", None), (capacity,), bool, True)
        self.vectors = grow(getattr(self, "vectors", None), (capacity, d), np.float32)
        # column-major: word w of every code is one contiguous array, scanned at memory speed
        self.codes = grow_columns(getattr(self, "codes", None), self.words)
        self.centred_head = grow_columns(getattr(self, "centred_head", None), self.head)
        self.centred_tail = grow(getattr(self, "centred_tail", None), (capacity, self.words - self.head), np.uint64)
        self.capacity = capacity

    def _code(self, name: str, table: dict[str, int]) -> int:
        code = table.get(name)
        if code is None:
            code = table[name] = len(table)
        return code

    def upsert(self, rowid: int, state: RowState, vector: np.ndarray | None) -> None:
        slot = self.slot.get(rowid)
        if slot is None:
            if vector is None:
                return  # a state change for a row we never saw with a vector
            if self.size == self.capacity:
                self._allocate(self.capacity * 2)
            if self.size >= 2 * max(self._centred_at, _SMALL_MIRROR // 2):
                self._recentre()
            slot = self.size
            self.size += 1
            self.slot[rowid] = slot
            self.rowids[slot] = rowid
        self.alive[slot] = True
        self.ns[slot] = self._code(state.namespace, self.ns_codes)
        self.kind[slot] = self._code(state.kind, self.kind_codes)
        self.expires[slot] = state.expires
        self.current[slot] = state.current
        if vector is not None:
            self.vectors[slot] = vector
            self.codes[:, slot] = sign_code(vector, self.words)
            centred = self.centred(vector)[1]
            self.centred_head[:, slot] = centred[: self.head]
            self.centred_tail[slot] = centred[self.head :]
            old = self.stamps.get(rowid)
            if old != state.stamp:
                self._forget_content(rowid, old)
                self._note_content(rowid, state.stamp)
                self.stamps[rowid] = state.stamp

    def remove(self, rowid: int) -> None:
        slot = self.slot.pop(rowid, None)
        if slot is not None:
            self.alive[slot] = False
            self._forget_content(rowid, self.stamps.pop(rowid, None))
        dead = self.size - len(self.slot)
        if dead > 1024 and dead > self.size // 4:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.size])
        for name in ("rowids", "alive", "ns", "kind", "expires", "current", "vectors"):
            array = getattr(self, name)
            array[: len(keep)] = array[keep]
        self.codes[:, : len(keep)] = self.codes[:, keep]
        self.centred_head[:, : len(keep)] = self.centred_head[:, keep]
        self.centred_tail[: len(keep)] = self.centred_tail[keep]
        self.alive[len(keep) : self.size] = False
        self.size = len(keep)
        self.slot = {int(r): i for i, r in enumerate(self.rowids[: self.size])}

    def bulk_load(self, rowids: np.ndarray, states: list[RowState], vectors: np.ndarray) -> None:
        n = len(rowids)
        self.size = 0
        self.slot = {}
        self.stamps = {}
        self._allocate(max(1024, 1 << max(0, (n - 1)).bit_length()))
        self.size = n
        self.rowids[:n] = rowids
        self.alive[:n] = True
        self.ns[:n] = [self._code(s.namespace, self.ns_codes) for s in states]
        self.kind[:n] = [self._code(s.kind, self.kind_codes) for s in states]
        self.expires[:n] = [s.expires for s in states]
        self.current[:n] = [s.current for s in states]
        self.vectors[:n] = vectors
        for start in range(0, n, 65536):  # in parts: the sign matrix of a million rows is large
            part = vectors[start : start + 65536]
            self.codes[:, start : start + len(part)] = sign_code(part, self.words).T
        self._recentre()
        self.slot = {int(r): i for i, r in enumerate(rowids)}
        self.stamps = {int(r): s.stamp for r, s in zip(rowids, states, strict=False)}
        contents = [stamp.rpartition("|")[2] for stamp in self.stamps.values()]  # _content_of, inlined
        self.by_content = dict(zip(contents, self.stamps, strict=True))
        if len(self.by_content) < len(contents):
            for content, count in Counter(contents).items():
                if count > 1:
                    self.by_content[content] = _SEVERAL
        self.by_content.pop("", None)

    def _note_content(self, rowid: int, stamp: str) -> None:
        content = _content_of(stamp)
        if content:
            held = self.by_content.get(content)
            self.by_content[content] = rowid if held is None or held == rowid else _SEVERAL

    def _forget_content(self, rowid: int, stamp: str | None) -> None:
        if stamp is not None and self.by_content.get(_content_of(stamp)) == rowid:
            del self.by_content[_content_of(stamp)]

    def centred_code(self, vector: np.ndarray) -> np.ndarray:
        """The centred sign code of a vector (or of each row of a matrix)."""
        return sign_code(vector - self.centre, self.words)

    def centred(self, vector: np.ndarray) -> tuple[float, np.ndarray]:
        """(|vector - centre|, its centred code) of one vector, remembered for the last vector asked
        about: an ``add`` asks for its new vector in the near-duplicate check and again when the
        vector is stored (the array is the same object; the memo holds it, so it stays unique)."""
        last = self._last_centred
        if last is not None and last[0] is vector and last[1] is self.centre:
            return last[2], last[3]
        diff = vector - self.centre
        norm, code = math.sqrt(float(diff @ diff)), sign_code(diff, self.words)
        self._last_centred = (vector, self.centre, norm, code)
        return norm, code

    def _recentre(self) -> None:
        """``centre`` := the mean of the stored vectors, and every centred code again from it."""
        n = self.size
        if n == 0:
            return
        self.centre = self.vectors[:n].mean(axis=0, dtype=np.float64).astype(np.float32)
        self.centre_norm = math.sqrt(float(self.centre @ self.centre))
        for start in range(0, n, 65536):
            part = self.centred_code(self.vectors[start : min(n, start + 65536)])
            self.centred_head[:, start : start + len(part)] = part[:, : self.head].T
            self.centred_tail[start : start + len(part)] = part[:, self.head :]
        self._centred_at = n

    def near_centred(self, code: np.ndarray, head_bound: int, bound: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots whose centred code differs from ``code`` in at most ``head_bound`` bits of the
        head words and ``bound`` bits in all, with those distances."""
        if _speedups is not None and self.head == 2:
            return self._near_compiled(code, head_bound, bound)
        # one head word at a time, xor with a scalar: broadcasting a column over the whole head
        # took 175 us at 100k rows against 120; at most 128 bits, so the sums fit in a byte
        distances = _popcount(self.centred_head[0, : self.size] ^ code[0])
        for word in range(1, self.head):
            distances += _popcount(self.centred_head[word, : self.size] ^ code[word])
        # nonzero() called directly: np.flatnonzero is a Python frame
        near = (distances <= head_bound).nonzero()[0]
        if self.words == self.head or near.size == 0:
            return near, distances[near]
        # take(): a third faster than fancy indexing for the few hundred rows that pass at 100k
        total = distances.take(near).astype(np.uint16)
        total += np.add.reduce(_popcount(self.centred_tail.take(near, axis=0) ^ code[self.head :]), axis=1, dtype=np.uint16)
        keep = total <= bound
        return near[keep], total[keep]

    def _near_compiled(self, code: np.ndarray, head_bound: int, bound: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`near_centred` in one compiled pass (``shared_core/_speedups.c``): at 100k rows ~135 us
        of an add against numpy's ~230."""
        code = np.ascontiguousarray(code, dtype=np.uint64)
        room = 4096  # rows that pass (a few hundred at 100k); more: a second call with room for all
        while True:
            slots, distances = np.empty(room, np.int64), np.empty(room, np.uint16)
            count = _speedups.near(self.centred_head[0], self.centred_head[1], self.centred_tail, self.words - 2,
                                  self.size, code, head_bound, bound, slots, distances)
            if count <= room:
                return slots[:count], distances[:count]
            room = count

    def scores(self, slots: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``query`` to the vectors of a few ``slots``: compiled, their rows are
        fetched from memory together instead of one after another."""
        if _speedups is None:
            return _dot(self.vectors[slots], query)
        sims = np.empty(slots.size, dtype=np.float64)
        _speedups.similarities(self.vectors, np.ascontiguousarray(slots, dtype=np.int64),
                               np.ascontiguousarray(query, dtype=np.float32), sims)
        return sims

    def mask(self, scope: Scope, now: float, slots: np.ndarray | None = None) -> np.ndarray:
        """Which slots (all of them, or just ``slots``) are live and in ``scope``'s own columns."""
        def take(array: np.ndarray) -> np.ndarray:
            return array[: self.size] if slots is None else array[slots]

        mask = take(self.alive).copy()
        if scope.namespaces is not None:
            codes = [self.ns_codes[ns] for ns in scope.namespaces if ns in self.ns_codes]
            mask &= take(self.ns) == codes[0] if len(codes) == 1 else np.isin(take(self.ns), codes)
        if scope.namespace_prefix:
            codes = [c for name, c in self.ns_codes.items() if name.startswith(scope.namespace_prefix)]
            mask &= np.isin(take(self.ns), codes)
        if scope.kinds is not None:
            codes = [self.kind_codes[k] for k in scope.kinds if k in self.kind_codes]
            mask &= take(self.kind) == codes[0] if len(codes) == 1 else np.isin(take(self.kind), codes)
        if scope.live_at is not None:
            mask &= take(self.expires) > now
        if scope.current_only:
            mask &= take(self.current)
        return mask

    def hamming(self, slots: np.ndarray | None, query_code: np.ndarray, words: range | int | None = None) -> np.ndarray:
        """Hamming distance from ``query_code`` to the codes of ``slots`` (None: every slot).

        ``words``: compare only these words of each code (an int: the first that many), a
        cheaper, coarser distance.
        """
        if words is None:
            words = range(self.words)
        elif isinstance(words, int):
            words = range(words)
        # a scope holding most rows reads the codes in place instead of gathering them
        whole = slots is None or slots.size * 2 > self.size
        small = 64 * len(words) <= 255  # the sum fits in a byte: no widening pass
        distances: np.ndarray | None = None
        for word in words:
            column = self.codes[word, : self.size] if whole else self.codes[word, slots]
            counts = _popcount(column ^ query_code[word])
            if distances is None:
                distances = counts if small else counts.astype(np.uint16)
            else:
                distances += counts
        assert distances is not None
        return distances if slots is None or not whole else distances[slots]


_pool: ThreadPoolExecutor | None = None


def _scan_pool() -> ThreadPoolExecutor:
    """The threads that run vector scans beside keyword queries (numpy and SQLite both let go
    of the GIL while they work), created on first use and again in a forked child."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=min(4, _CPUS), thread_name_prefix="openkoi-vector-scan")
    return _pool


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _vec_version(db: Any) -> tuple[int, ...]:
    """sqlite-vec's version as numbers (``v0.1.9`` -> (0, 1, 9)); (0,) when it cannot be read."""
    text = str(db.scalar("SELECT vec_version()") or "").lstrip("v").split("-")[0]
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return (0,)


def vector_index_for(db: Backend, dims: int, config: SearchConfig,
                     database: DatabaseConfig | None = None) -> VectorIndex:
    """The vector index for ``db``'s backend: :class:`SqliteVectorIndex` or ``PgVectorIndex``
    (``database``: the ``[database]`` section, for pgvector's HNSW settings)."""
    if isinstance(db, Database):
        return SqliteVectorIndex(db, dims, config)
    if isinstance(db, PostgresDatabase):
        from .vectors_pg import PgVectorIndex

        return PgVectorIndex(db, dims, config, database)
    raise TypeError(f"no vector index for a {type(db).__name__} backend")


class SqliteVectorIndex:
    """Reads and writes ``memory_vec``; answers KNN queries within a scope."""

    inline = False  # vectors are rows of their own table, written after the chunk row

    def __init__(self, db: Database, dims: int, config: SearchConfig) -> None:
        self.db = db
        self.dims = dims
        self.config = config
        self._mirror: _Mirror | None = None
        self._last_seq = 0
        self._synced_at: tuple[int, int] | None = None  # the db.snapshot the mirror last caught up with

    # -- writes (inside the caller's transaction) -----------------------------------------

    def put(self, rowid: int, vector: np.ndarray, state: RowState, *, replace: bool) -> None:
        if replace:
            self.db.execute("DELETE FROM memory_vec WHERE chunk_rowid = ?", (rowid,))
        self.db.execute(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)", (rowid, vector.tobytes())
        )
        if self._mirror is not None:
            mirror = self._mirror
            self.db.after_commit(lambda: mirror.upsert(rowid, state, vector))

    def put_many(self, rows: list[tuple[int, np.ndarray, RowState]]) -> None:
        """Insert vectors for new rows (no replace) in one statement batch."""
        self.db.executemany(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)",
            [(rowid, vector.tobytes()) for rowid, vector, _ in rows],
        )
        if self._mirror is not None:
            mirror = self._mirror

            def apply() -> None:
                for rowid, vector, state in rows:
                    mirror.upsert(rowid, state, vector)

            self.db.after_commit(apply)

    def delete(self, rowids: Iterable[int]) -> None:
        ids = list(rowids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self.db.execute(
                f"DELETE FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})", part
            )
        if self._mirror is not None and ids:
            mirror = self._mirror

            def apply() -> None:
                for rowid in ids:
                    mirror.remove(rowid)

            self.db.after_commit(apply)

    def reset(self) -> None:
        """Forget the mirror (after the vector table was rebuilt, e.g. by a re-embed)."""
        self._mirror = None
        self._last_seq = 0

    def ensure_ready(self) -> None:
        """Nothing to prepare: migration 2 created ``memory_vec`` for the embedder's dimensions."""

    def purge_deleted(self) -> None:
        """Make sure no deleted vector's bytes stay in ``memory_vec``'s chunks.

        sqlite-vec 0.1.9 and later zero a vector when it is deleted (tests/core/test_erase.py looks
        for an erased vector's bytes in the files), so there is nothing to do. Older versions only
        mark it invalid: the live vectors are copied out and back (2 s at 100k inside the erase).
        """
        if _vec_version(self.db) >= _VEC_CLEARS_ON_DELETE:
            return
        db = self.db
        db.execute("CREATE TEMP TABLE IF NOT EXISTS openkoi_vec_copy (chunk_rowid INTEGER PRIMARY KEY, embedding BLOB)")
        db.execute("DELETE FROM temp.openkoi_vec_copy")
        db.execute("INSERT INTO temp.openkoi_vec_copy SELECT chunk_rowid, embedding FROM memory_vec")
        self._recreate(self.dims)
        db.execute("INSERT INTO memory_vec (chunk_rowid, embedding) SELECT chunk_rowid, embedding FROM temp.openkoi_vec_copy")
        db.execute("DROP TABLE temp.openkoi_vec_copy")

    def rebuild(self, dims: int) -> None:
        """Start re-embedding with ``dims`` (inside a transaction): an empty vector table of that size."""
        self._recreate(dims)
        self.dims = int(dims)

    def _recreate(self, dims: int) -> None:
        self.db.execute("DROP TABLE memory_vec")
        self.db.execute(
            f"CREATE VIRTUAL TABLE memory_vec USING vec0(chunk_rowid INTEGER PRIMARY KEY, "
            f"embedding float[{int(dims)}] distance_metric=cosine, chunk_size=256)"  # as migration 43 made it
        )

    def write_all(self, rows: list[tuple[int, np.ndarray]]) -> None:
        """Vectors for rows that have none (after :meth:`rebuild`)."""
        self.db.executemany(
            "INSERT INTO memory_vec (chunk_rowid, embedding) VALUES (?, ?)", [(r, v.tobytes()) for r, v in rows]
        )

    # -- reads ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The index as ``search.vector_index`` names it (``auto``, ``mirror`` or ``sqlite-vec``)."""
        return self.config.vector_index

    @property
    def uses_mirror(self) -> bool:
        return self.config.vector_index in ("auto", "mirror")

    def search(
        self, query: np.ndarray, k: int, scope: Scope, *, now: float
    ) -> list[tuple[int, float]]:
        """(chunk_rowid, cosine similarity), best first: the top ``k`` within ``scope``."""
        if k <= 0:
            return []
        if not self.uses_mirror or (self._mirror is None and self.db.has_uncommitted_writes):
            # never build the mirror from a transaction's uncommitted state: ask SQLite directly
            return self._search_sqlite_vec(query, k, scope)
        mirror = self.sync()
        allowed = None
        if scope.needs_row_filter:
            allowed = np.zeros(mirror.size, dtype=bool)
            for rowid in self._rowids_in(scope):
                slot = mirror.slot.get(rowid)
                if slot is not None:
                    allowed[slot] = True
        return self._scan(mirror, query, k, scope, now, allowed)

    def search_in_background(self, query: np.ndarray, k: int, scope: Scope, *, now: float) -> Future | None:
        """:meth:`search` on a worker thread, for the caller to overlap with its keyword query,
        or None when that would not pay (a small mirror, no mirror, a scope that needs the
        table): then call :meth:`search`. The caller waits for the result before it lets go
        of the store's lock, so no write can change the mirror during the scan."""
        if (k <= 0 or _CPUS < 2 or not self.uses_mirror or scope.needs_row_filter or self._mirror is None
                or not self.config.parallel_scan_rows or self._mirror.size < self.config.parallel_scan_rows
                or self.db.has_uncommitted_writes):
            return None
        return _scan_pool().submit(self._scan, self.sync(), query, k, scope, now, None)

    def _scan(self, mirror: _Mirror, query: np.ndarray, k: int, scope: Scope, now: float,
              allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The top ``k`` of the mirror's rows in ``scope`` (and ``allowed``, when given): numpy only."""
        mask = mirror.mask(scope, now)
        if allowed is not None:
            mask &= allowed
        slots = np.flatnonzero(mask)
        if slots.size == 0:
            return []
        if slots.size <= max(self.config.exact_scan_rows, k):
            if slots.size * 2 > mirror.size:
                sims = _dot(mirror.vectors[: mirror.size], query)[slots]
            else:
                sims = _dot(mirror.vectors[slots], query)
            candidates = slots
        else:
            distances = mirror.hamming(slots, sign_code(query, mirror.words))
            pool = min(slots.size, max(self.config.rerank_pool, 20 * k))
            nearest = np.argpartition(distances, pool - 1)[:pool]
            candidates = slots[nearest]
            sims = _dot(mirror.vectors[candidates], query)
        top = min(k, sims.size)
        best = np.argpartition(-sims, top - 1)[:top]
        best = best[np.argsort(-sims[best], kind="stable")]
        return [(int(mirror.rowids[candidates[i]]), float(sims[i])) for i in best]

    def same_content(self, content_hash: str, scope: Scope, *, now: float) -> tuple[bool, int | None]:
        """(True, a row in ``scope`` whose content hash is ``content_hash``, or None if there is none),
        or (False, None) when the mirror cannot tell (none loaded, or several rows with that content):
        then ask the table. Rows without a vector are not in the mirror; every add stores one."""
        if not self.uses_mirror or scope.needs_row_filter or (self._mirror is None and self.db.has_uncommitted_writes):
            return False, None
        mirror = self.sync()
        held = mirror.by_content.get(content_hash)
        if held is None:
            return True, None
        slot = mirror.slot.get(held)
        if held == _SEVERAL or slot is None:
            return False, None
        return True, held if mirror.mask(scope, now, np.array([slot]))[0] else None

    def best_above(
        self, query: np.ndarray, threshold: float, scope: Scope, *, now: float
    ) -> tuple[int, float] | None:
        """The most similar row in ``scope`` if its cosine similarity exceeds ``threshold``, else None.

        The near-duplicate check of every ``add``. A row that similar differs from the query in
        few sign bits (:func:`centred_threshold`, :func:`sign_bit_bound`), so the mirror compares
        the first two words of every code with the bound for 128 bits (about a third of the work
        of a full Hamming scan), then the rest of the code for the few rows that pass with the
        bound for the whole code, and scores the survivors in scope exactly (the ``rerank_pool``
        nearest, should more be left). On LoCoMo texts, pairs above 0.9 differed in at most 26 of
        the first 128 bits (bound 43 and up) with all-MiniLM-L6-v2 and with hashing vectors;
        tests/core/test_near_duplicates.py checks the answers against an exact scan.
        """
        mirror = None
        if self.uses_mirror and not scope.needs_row_filter and not (
            self._mirror is None and self.db.has_uncommitted_writes
        ):
            mirror = self.sync()
        centred = code = None
        if mirror is not None:
            distance, code = mirror.centred(query)
            centred = _least_centred(threshold, distance, mirror.centre_norm)
        head_bound = sign_bit_bound(centred, 64 * mirror.head) if mirror is not None and centred is not None else None
        if mirror is None or code is None or centred is None or head_bound is None or mirror.size <= _SMALL_MIRROR:
            best = self.search(query, 1, scope, now=now)
            return best[0] if best and best[0][1] > threshold else None
        bound = sign_bit_bound(centred, 64 * mirror.words) or 64 * mirror.words
        near, distances = mirror.near_centred(code, head_bound, bound)
        if near.size:
            in_scope = mirror.mask(scope, now, near)
            near, distances = near[in_scope], distances[in_scope]
        if near.size == 0:
            return None
        if near.size > self.config.rerank_pool:
            near = near[np.argpartition(distances, self.config.rerank_pool - 1)[: self.config.rerank_pool]]
        sims = mirror.scores(near, query)
        i = int(np.argmax(sims))
        return (int(mirror.rowids[near[i]]), float(sims[i])) if sims[i] > threshold else None

    def similarities(self, query: np.ndarray, rowids: Sequence[int]) -> dict[int, float]:
        """Exact cosine similarity of ``query`` to each of ``rowids`` (rows without a vector are left out)."""
        if not rowids:
            return {}
        if self.uses_mirror and not (self._mirror is None and self.db.has_uncommitted_writes):
            mirror = self.sync()
            pairs = [(r, mirror.slot[r]) for r in rowids if r in mirror.slot]
            if not pairs:
                return {}
            slots = np.fromiter((s for _, s in pairs), dtype=np.int64, count=len(pairs))
            sims = _dot(mirror.vectors[slots], query)
            return {r: float(s) for (r, _), s in zip(pairs, sims, strict=False)}
        out: dict[int, float] = {}
        blob = query.astype(np.float32).tobytes()
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            for rowid, distance in self.db.query(
                "SELECT chunk_rowid, vec_distance_cosine(embedding, ?) FROM memory_vec "
                f"WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                (blob, *part),
            ):
                out[int(rowid)] = 1.0 - float(distance)
        return out

    def vectors_of(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors of some rows."""
        out: dict[int, np.ndarray] = {}
        if self.uses_mirror and self._mirror is not None and not self.db.has_uncommitted_writes:
            mirror = self.sync()
            missing = []
            for rowid in rowids:
                slot = mirror.slot.get(rowid)
                if slot is None:
                    missing.append(rowid)
                else:
                    out[rowid] = mirror.vectors[slot].copy()
            rowids = missing
        for start in range(0, len(rowids), _BATCH):
            part = list(rowids[start : start + _BATCH])
            for rowid, blob in self.db.query(
                f"SELECT chunk_rowid, embedding FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                part,
            ):
                out[int(rowid)] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def _rowids_in(self, scope: Scope) -> list[int]:
        sql, params = scope.sql("c")
        return [int(r[0]) for r in self.db.query(f"SELECT c.chunk_rowid FROM memory_chunks c WHERE {sql}", params)]

    def _search_sqlite_vec(self, query: np.ndarray, k: int, scope: Scope) -> list[tuple[int, float]]:
        sql, params = scope.sql("c")
        blob = query.astype(np.float32).tobytes()
        if k > _VEC0_MAX_K:  # past what vec0's KNN takes: the same exact answer from a scan of the scope
            rows = self.db.query(
                "SELECT v.chunk_rowid, vec_distance_cosine(v.embedding, ?) AS distance FROM memory_vec v "
                f"JOIN memory_chunks c ON c.chunk_rowid = v.chunk_rowid WHERE {sql} ORDER BY distance LIMIT ?",
                (blob, *params, k),
            )
        else:
            rows = self.db.query(
                "SELECT chunk_rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ? "
                f"AND chunk_rowid IN (SELECT c.chunk_rowid FROM memory_chunks c WHERE {sql}) ORDER BY distance",
                (blob, k, *params),
            )
        return [(int(rowid), 1.0 - float(distance)) for rowid, distance in rows]

    # -- keeping the mirror current -------------------------------------------------------

    def sync(self) -> _Mirror:
        """Load the mirror on first use; afterwards apply what ``index_log`` says changed."""
        mirror = self._mirror
        if mirror is None:
            return self._full_load()
        if self.db.has_uncommitted_writes:
            # this transaction's writes are in the log; they reach the mirror after commit
            return mirror
        snapshot = self.db.snapshot
        if snapshot is not None and snapshot == self._synced_at:
            return mirror  # caught up earlier in this write transaction: no one else can have written since
        # the log past our position and each changed row's state, in one statement (one snapshot); a
        # log longer than the limit (another process's bulk load, say) is cheaper to reload in full
        # (the limit is written into the SQL, rounded so the text changes rarely: SQLite ran this
        # statement in 35 us with `LIMIT ?` and 13 with a literal)
        limit = max(5000, -(-mirror.size // 20 // 5000) * 5000)
        log = self.db.query(
            f"SELECT l.seq, l.chunk_rowid, {_JOINED_STATE_COLUMNS} FROM index_log l LEFT JOIN memory_chunks c "
            f"ON c.chunk_rowid = l.chunk_rowid WHERE l.seq > ? ORDER BY l.seq LIMIT {limit + 1}",
            (self._last_seq,),
        )
        if not log:
            self._synced_at = snapshot
            return mirror
        # sequence numbers have no gaps (AUTOINCREMENT; a rollback takes its numbers back) except where
        # maintenance trimmed the log's old end: a first number past the next one means we missed some
        if int(log[0][0]) != self._last_seq + 1 or len(log) > limit:
            return self._full_load()
        newest = int(log[-1][0])
        changed = list(dict.fromkeys(int(r[1]) for r in log))
        states = {int(r[1]): _state(r[2:]) for r in log if r[2] is not None}  # a deleted row joins nothing
        stale = [r for r, s in states.items() if mirror.stamps.get(r) != s.stamp]
        fetched: dict[int, np.ndarray] = {}
        for start in range(0, len(stale), _BATCH):
            part = stale[start : start + _BATCH]
            for rowid, blob in self.db.query(
                f"SELECT chunk_rowid, embedding FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                part,
            ):
                fetched[int(rowid)] = np.frombuffer(blob, dtype=np.float32)
        for rowid in changed:
            state = states.get(rowid)
            if state is None:
                mirror.remove(rowid)
            elif rowid in fetched:
                mirror.upsert(rowid, state, fetched[rowid])
            elif rowid in stale:
                mirror.remove(rowid)  # a row without a vector is not vector-searchable
            else:
                mirror.upsert(rowid, state, None)
        self._last_seq = newest
        self._synced_at = snapshot
        return mirror

    def _full_load(self) -> _Mirror:
        db = self.db
        own_snapshot = not db.conn.in_transaction
        with db.lock:
            if own_snapshot:
                db.execute("BEGIN")  # one read snapshot for the log position and the rows
            try:
                newest = int(db.scalar("SELECT max(seq) FROM index_log") or 0)
                vectors = db.query("SELECT chunk_rowid, embedding FROM memory_vec")
                states = {int(r[0]): _state(r) for r in db.query(f"SELECT {_STATE_COLUMNS} FROM memory_chunks")}
            finally:
                if own_snapshot:
                    db.execute("COMMIT")
        keep = [(int(rowid), blob) for rowid, blob in vectors if int(rowid) in states]
        mirror = _Mirror(self.dims)
        if keep:
            rowids = np.fromiter((r for r, _ in keep), dtype=np.int64, count=len(keep))
            matrix = np.frombuffer(b"".join(b for _, b in keep), dtype=np.float32).reshape(len(keep), self.dims)
            mirror.bulk_load(rowids, [states[r] for r, _ in keep], matrix)
        self._mirror = mirror
        self._last_seq = newest
        self._synced_at = db.snapshot
        return mirror

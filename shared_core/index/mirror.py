"""The in-process copy of a memory's vectors that searches and near-duplicate checks scan.

A float32 matrix plus two sign codes per vector (binary quantisation): small scopes are scanned
exactly; large ones are ranked by Hamming distance on the bits and the best ``rerank_pool``
scored exactly. :class:`~.vectors.SqliteVectorIndex` keeps it in step with ``memory_vec``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from .protocols import RowState, content_of
from .scope import Scope

try:  # the near-duplicate scan compiled (setup.py builds it where a C compiler is); else numpy
    import shared_core._speedups as _speedups
except ImportError:  # pragma: no cover - exercised by the tests that force numpy
    _speedups = None

__all__ = ["Mirror", "SEVERAL", "SMALL_MIRROR", "centred_threshold", "dot", "least_centred", "popcount",
           "sign_bit_bound", "sign_code"]

SMALL_MIRROR = 1024  # rows below which a near-duplicate check just scans every vector
SEVERAL = -1  # in Mirror.by_content: more than one row holds that content


def dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Row-by-vector products with numpy's own single-threaded loop, not BLAS.

    A matrix-vector product is memory-bound, so threads gain little, and a multi-threaded
    BLAS waits for its slowest thread: on a busy 2-core machine a 10k x 384 product took
    11.5 ms through BLAS and 0.6 ms through einsum.
    """
    return np.einsum("ij,j->i", matrix, vector)


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 in ``words``."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    return _BYTE_BITS[words.view(np.uint8)].reshape(*words.shape, 8).sum(axis=-1, dtype=np.uint8)  # numpy < 2.0


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
    return least_centred(threshold, math.sqrt(float(diff @ diff)), math.sqrt(float(centre @ centre)))


def least_centred(threshold: float, a: float, shift: float) -> float | None:
    """:func:`centred_threshold` from |query - centre| (``a``) and |centre| (``shift``)."""
    slack = 2.0 - 2.0 * threshold
    if a == 0.0:
        return None
    low, high = max(1e-6, 1.0 - shift), 1.0 + shift
    b = min(high, max(low, math.sqrt(max(0.0, a * a - slack))))
    least = (a * a + b * b - slack) / (2.0 * a * b)
    return least if least > 0.0 else None


class Mirror:
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
        # content hash -> the one row holding it (SEVERAL: more than one), for the exact-duplicate
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
            if self.size >= 2 * max(self._centred_at, SMALL_MIRROR // 2):
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
                    self.by_content[content] = SEVERAL
        self.by_content.pop("", None)

    def _note_content(self, rowid: int, stamp: str) -> None:
        content = content_of(stamp)
        if content:
            held = self.by_content.get(content)
            self.by_content[content] = rowid if held is None or held == rowid else SEVERAL

    def _forget_content(self, rowid: int, stamp: str | None) -> None:
        if stamp is not None and self.by_content.get(content_of(stamp)) == rowid:
            del self.by_content[content_of(stamp)]

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
        distances = popcount(self.centred_head[0, : self.size] ^ code[0])
        for word in range(1, self.head):
            distances += popcount(self.centred_head[word, : self.size] ^ code[word])
        # nonzero() called directly: np.flatnonzero is a Python frame
        near = (distances <= head_bound).nonzero()[0]
        if self.words == self.head or near.size == 0:
            return near, distances[near]
        # take(): a third faster than fancy indexing for the few hundred rows that pass at 100k
        total = distances.take(near).astype(np.uint16)
        total += np.add.reduce(popcount(self.centred_tail.take(near, axis=0) ^ code[self.head :]), axis=1, dtype=np.uint16)
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
            return dot(self.vectors[slots], query)
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
            counts = popcount(column ^ query_code[word])
            if distances is None:
                distances = counts if small else counts.astype(np.uint16)
            else:
                distances += counts
        assert distances is not None
        return distances if slots is None or not whole else distances[slots]

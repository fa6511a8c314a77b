"""The default embedder: a static word-vector table distilled from all-MiniLM-L6-v2.

A text's vector is the mean of its WordPiece tokens' rows in a 29,525 x 256 table, L2-normalised
(model2vec's recipe: each token's row is what the sentence model makes of that token alone,
weighted down for frequent tokens, reduced to 256 dimensions by PCA). It knows that "diet" is
near "vegetarian" and "vehicle" near "Tesla", which the hashing embedder cannot, and needs only
numpy and the 7 MB table shipped in the package (``data/minilm-static-256.npz``; how it was
built: bench/quality/distill_static.py; licence: ``data/NOTICE``), read once per process.

Static vectors lean one way (frequent words' rows share directions: the mean of 30,000
LoCoMo-like texts' unit vectors has norm 0.81), which makes their sign bits, the vector index's
first filter, say less. The embedder removes the two directions they lean along most, as SIF
removes a first principal component: the top eigenvectors of the rows' second moment weighted by
Zipf's law (1/rank from "the" on: BERT's vocabulary lists whole words by frequency, the assumption
the table's own weights were built on). That leaves norm 0.62 and the same LoCoMo recall. The
shipped table's two directions ship beside it (``data/minilm-static-256.directions.npy``, what
:func:`common_directions` computes from it, ~0.1 s a process otherwise).
``centred=False`` gives the vectors of ``static/minilm-256``, the name memories made before this
recorded (they keep those vectors until ``reembed`` moves them).

It is a bag of words with meanings, not a sentence model: word order and negation are lost and
numbers are mostly unknown, so two facts that differ in a number or a "not" get nearly the same
vector. Duplicates are never decided by similarity alone (:mod:`shared_core.restatement`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbedderProfile
from .wordpiece import WordPiece

__all__ = ["StaticEmbedder", "StaticTable", "DEFAULT_TABLE", "common_directions"]

DEFAULT_TABLE = Path(__file__).with_name("data") / "minilm-static-256.npz"
DEFAULT_DIRECTIONS = DEFAULT_TABLE.with_name("minilm-static-256.directions.npy")
_FORMAT = "openkoi-static-table-1"
COMMON_DIRECTIONS = 2


@dataclass(frozen=True)
class StaticTable:
    """A loaded table: int8 rows and their scales, the tokeniser over its vocabulary, its metadata."""

    vectors: np.ndarray  # (tokens, dims) int8
    scales: np.ndarray  # (tokens,) float32: row i is vectors[i] * scales[i]
    tokenizer: WordPiece
    meta: dict[str, Any]

    @property
    def dims(self) -> int:
        return int(self.vectors.shape[1])

    @classmethod
    def load(cls, path: str | Path) -> StaticTable:
        """Read a table written by bench/quality/distill_static.py (numpy only, no pickles)."""
        try:
            with np.load(Path(path), allow_pickle=False) as saved:
                vectors, scales = saved["vectors"], saved["scales"]
                vocab = bytes(saved["vocab"]).decode("utf-8").split("\n")
                meta = json.loads(bytes(saved["meta"]).decode("utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"the static embedder's table {path} is missing; reinstall openkoi-memory "
                "(the table ships inside the package), or use HashingEmbedder()"
            ) from None
        except (KeyError, ValueError, OSError) as exc:
            raise ValueError(f"{path} is not a static embedding table ({exc}); rebuild it with "
                             "bench/quality/distill_static.py") from None
        if meta.get("format") != _FORMAT or vectors.dtype != np.int8 or vectors.ndim != 2 \
                or scales.shape != (len(vocab),) or vectors.shape[0] != len(vocab):
            raise ValueError(f"{path} is not a {_FORMAT} table; rebuild it with bench/quality/distill_static.py")
        model = meta.get("tokenizer", {}).get("model", {})
        tokenizer = WordPiece(vocab, unk_token=model.get("unk_token", "[UNK]"),
                              prefix=model.get("continuing_subword_prefix", "##"))
        return cls(vectors, scales.astype(np.float32), tokenizer, meta)


def common_directions(table: StaticTable, count: int = COMMON_DIRECTIONS) -> np.ndarray:
    """The ``count`` directions text vectors lean along most, as a (dims, count) orthonormal matrix.

    The top eigenvectors of the rows' second moment weighted by Zipf's law (row ``i`` by
    1/rank, ranks counted from "the": BERT's vocabulary lists whole words by frequency), i.e.
    the principal directions of an average text's token rows. Computed from the table alone, so
    one table always gives the same directions.
    """
    start = table.tokenizer.index.get("the")
    if start is None:
        raise ValueError("the table has no token 'the' to rank its words from; use StaticEmbedder(..., centred=False)")
    if not 0 < count < table.dims:
        raise ValueError(f"count must be between 1 and {table.dims - 1}, got {count}")
    # float32 products (one BLAS call, ~0.1 s once per process; float64 took seconds): the
    # projector they give differs from float64's by about 1e-7
    root_weights = np.sqrt(1.0 / np.arange(1, len(table.scales) - start + 1, dtype=np.float64)).astype(np.float32)
    rows = table.vectors[start:].astype(np.float32) * (table.scales[start:] * root_weights)[:, None]
    moment = (rows.T @ rows).astype(np.float64)
    _, vectors = np.linalg.eigh(moment)  # ascending eigenvalues
    return np.ascontiguousarray(vectors[:, ::-1][:, :count], dtype=np.float32)


_tables: dict[Path, StaticTable] = {}
_tables_lock = threading.Lock()


def _shared_table(path: Path) -> StaticTable:
    """One loaded copy of each table per process (every store opens an embedder)."""
    key = path.resolve()
    table = _tables.get(key)
    if table is None:
        with _tables_lock:
            table = _tables.get(key)
            if table is None:
                table = _tables[key] = StaticTable.load(key)
    return table


_directions: dict[tuple[Path, int], np.ndarray] = {}


def _shared_directions(path: Path, count: int) -> np.ndarray:
    key = (path.resolve(), count)
    directions = _directions.get(key)
    if directions is None:  # two threads racing compute the same matrix
        if key == (DEFAULT_TABLE.resolve(), COMMON_DIRECTIONS) and DEFAULT_DIRECTIONS.exists():
            directions = np.load(DEFAULT_DIRECTIONS, allow_pickle=False)
        else:
            directions = common_directions(_shared_table(key[0]), count)
        _directions[key] = directions
    return directions


class StaticEmbedder:
    """Mean of static token vectors distilled from all-MiniLM-L6-v2, less their common direction; 256 dims, numpy only.

    ``path``: another table in the same format (the default is the one shipped). The table is
    read on first use and shared by every instance in the process. ``centred=False``: keep the
    common direction, the vectors of ``static/minilm-256`` (memories that recorded that name).
    """

    # measured on LoCoMo and bench/quality/paraphrases.py (docs/search.md): see the docs there
    profile = EmbedderProfile(similarity_floor=0.2, vector_weight=2.0, kb_threshold=0.65)

    def __init__(self, path: str | Path | None = None, *, centred: bool = True) -> None:
        self.path = Path(path) if path is not None else DEFAULT_TABLE
        self.centred = centred
        self._table: StaticTable | None = None
        self._directions: np.ndarray | None = None  # looked up once: resolving the path took ~0.1 ms an embed
        self.dims = 256 if path is None else self.table.dims
        base = "static/minilm-256" if path is None else f"static/{self.path.stem}"
        self.name = base + "c" if centred else base

    def __repr__(self) -> str:
        return f"StaticEmbedder({self.name!r}, dims={self.dims})"

    @property
    def table(self) -> StaticTable:
        if self._table is None:
            self._table = _shared_table(self.path)
        return self._table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text; blank text gives zeros, text of unknown words only the ``[UNK]`` row."""
        table = self.table
        if table.dims != self.dims:
            raise ValueError(f"the table {self.path} has {table.dims} dimensions, not {self.dims}")
        tokenizer = table.tokenizer
        per_text = [tokenizer.ids(text) for text in texts]
        for i, ids in enumerate(per_text):
            if not ids and texts[i].strip():  # symbols or a script the vocabulary lacks: not nothing
                per_text[i] = [tokenizer.unk_id]
        out = np.zeros((len(per_text), self.dims), dtype=np.float32)
        by_length: dict[int, list[int]] = {}
        for i, ids in enumerate(per_text):
            if ids:
                by_length.setdefault(len(ids), []).append(i)
        # texts of one token count at a time: a (texts, tokens, dims) gather and one batched product
        # with the rows' scales (np.add.reduceat over ragged rows was 8x slower)
        for members in by_length.values():
            ids_matrix = np.array([per_text[i] for i in members], dtype=np.int64)
            rows = table.vectors.take(ids_matrix, axis=0).astype(np.float32)
            out[members] = np.matmul(table.scales.take(ids_matrix)[:, None, :], rows)[:, 0, :]
        if self.centred:
            if self._directions is None:
                self._directions = _shared_directions(self.path, COMMON_DIRECTIONS)
            out -= (out @ self._directions) @ self._directions.T
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
        np.divide(out, norms, out=out, where=norms > 0)
        return out

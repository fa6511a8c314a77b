"""Speed against peers in one run: the same texts and vectors in every store.

    python bench/peers.py                                  # 10k and 100k, hashing vectors, every peer found
    python bench/peers.py --sizes 2000 --queries 50        # a quick check
    python bench/peers.py --peers openkoi,chroma --vectors random

Texts, queries and vectors are bench/core.py's (LoCoMo turns recombined, LoCoMo questions,
hashing or random 384-d vectors), computed once and handed to every system as
precomputed embeddings, so nothing here measures an embedding model. For each size and
system: ingest (memories/s, from the texts and vectors in memory to stored, including
building the framework's own objects), search p50/p95 for top-10 by query vector,
recall@10 against numpy's exact top-10 of the same vectors, and the ratio to openkoi's
vector search. Systems:

* numpy: brute-force cosine over the matrix, the floor (nothing stored, nothing persisted);
* openkoi: ``MemoryStore.add_many`` into a file; ``search(vector=..., fusion="vector")``
  and the default hybrid ``search(text, vector=...)`` (BM25 + vectors, ranking, access
  tracking and Hebbian links on: what an agent gets);
* langchain-community ``SQLiteVec`` (sqlite-vec ``vec0``, exact): its own schema and SQL,
  on a connection from the ``sqlean`` SQLite build that openkoi also uses (see below);
* LangGraph ``SqliteStore`` with its vector index (``vec_distance_cosine`` over every row),
  on a ``sqlean`` connection as well;
* Chroma ``PersistentClient`` in process (HNSW, approximate);
* LlamaIndex ``SimpleVectorStore`` (a dict in memory; persisting it is a JSON dump).

Why ``sqlean`` connections for the two SQLite peers: both load sqlite-vec with
``enable_load_extension``, which this machine's pyenv Python (like macOS's) does not have.
Both accept a connection, so they get one from ``sqlean.py``, the bundled SQLite build that
openkoi's driver falls back to here: the same SQLite version and the same sqlite-vec for
everyone, and their own schema and queries unchanged.

Peers are optional: a system whose package is missing is skipped with the pip command.
Ingest runs one system at a time; the queries then go round-robin (query 1 to every system,
then query 2, ...), so that a busy spell on a shared machine slows every system alike. Slow
systems get at least ``--min-queries`` queries and drop out after ``--budget`` seconds of
searching.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import shutil
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from core import corpus, locomo_texts, percentiles, vectors_cached  # noqa: E402
from machine import describe as machine  # noqa: E402

from shared_core import HashingEmbedder, MemoryStore, NewMemory  # noqa: E402

K = 10
Search = Callable[[str, np.ndarray], list[int]]


@dataclass
class Data:
    texts: list[str]
    vectors: np.ndarray
    query_texts: list[str]
    query_vectors: np.ndarray
    exact: list[np.ndarray] = field(default_factory=list)

    def lookup(self) -> dict[str, np.ndarray]:
        """Text -> its precomputed vector, for peers that insist on calling an embedding function."""
        table = dict(zip(self.texts, self.vectors, strict=True))
        table.update(zip(self.query_texts, self.query_vectors, strict=True))
        return table


class Peer(ABC):
    """One system: ``ingest`` everything, then named ``searches`` (text, vector) -> row indices."""

    name = ""
    how = ""
    requires: tuple[str, ...] = ()
    pip = ""

    def missing(self) -> str | None:
        absent = [m for m in self.requires if importlib.util.find_spec(m) is None]
        return f"skipped: pip install {self.pip}" if absent else None

    def open(self, workdir: Path, data: Data) -> None:
        self.workdir = workdir

    @abstractmethod
    def ingest(self, data: Data) -> None: ...

    @abstractmethod
    def searches(self) -> dict[str, Search]: ...

    @abstractmethod
    def close(self) -> None:
        """Release the store (and its memory) before the next system runs."""


class NumpyFloor(Peer):
    name, how = "numpy", "brute-force cosine over a float32 matrix in memory (the floor)"

    def ingest(self, data: Data) -> None:
        self.matrix = np.ascontiguousarray(data.vectors, dtype=np.float32)

    def searches(self) -> dict[str, Search]:
        def scan(_text: str, q: np.ndarray) -> list[int]:
            scores = self.matrix @ q
            top = np.argpartition(-scores, K)[:K]
            return top[np.argsort(-scores[top])].tolist()
        return {"numpy": scan}

    def close(self) -> None:
        self.matrix = None


class OpenKoi(Peer):
    name, how = "openkoi", "MemoryStore file, add_many"

    def open(self, workdir: Path, data: Data) -> None:
        super().open(workdir, data)
        self.store = MemoryStore.open(workdir / "openkoi.db", embedder=HashingEmbedder(data.vectors.shape[1]))

    def ingest(self, data: Data) -> None:
        items = [NewMemory(text=t, vector=v, id=str(i), namespace="bench")
                 for i, (t, v) in enumerate(zip(data.texts, data.vectors, strict=True))]
        self.store.add_many(items, batch_size=1000)

    def searches(self) -> dict[str, Search]:
        store = self.store

        def vector(_text: str, q: np.ndarray) -> list[int]:
            hits = store.search(vector=q, namespace="bench", limit=K, fusion="vector", track_access=False)
            return [int(h.id) for h in hits]

        def hybrid(text: str, q: np.ndarray) -> list[int]:
            return [int(h.id) for h in store.search(text, vector=q, namespace="bench", limit=K)]

        return {"openkoi vector": vector, "openkoi hybrid": hybrid}

    def close(self) -> None:
        self.store.close()


def _lookup_embeddings(table: dict[str, np.ndarray], dims: int) -> Any:
    from langchain_core.embeddings import Embeddings

    class Lookup(Embeddings):
        """Returns the precomputed vector of each text (zeros for the peers' own probe texts)."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [self.embed_query(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            vector = table.get(text)
            return [0.0] * dims if vector is None else vector.tolist()

    return Lookup()


def _sqlean_connection(path: Path, **kwargs: Any) -> Any:
    import sqlean
    import sqlite_vec

    conn = sqlean.connect(str(path), **kwargs)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


class LangChainSQLiteVec(Peer):
    name, how = "SQLiteVec", "langchain-community SQLiteVec (sqlite-vec vec0), sqlean connection"
    requires, pip = ("langchain_community", "sqlean"), "langchain-community"

    def open(self, workdir: Path, data: Data) -> None:
        import sqlean
        from langchain_community.vectorstores import SQLiteVec

        super().open(workdir, data)
        self.conn = _sqlean_connection(workdir / "sqlitevec.db")
        self.conn.row_factory = sqlean.Row  # SQLiteVec.create_connection's setting
        self.vs = SQLiteVec(table="bench", connection=self.conn,
                            embedding=_lookup_embeddings(data.lookup(), data.vectors.shape[1]))

    def ingest(self, data: Data) -> None:
        for start in range(0, len(data.texts), 1000):
            chunk = data.texts[start : start + 1000]
            self.vs.add_texts(chunk, metadatas=[{"i": start + j} for j in range(len(chunk))])

    def searches(self) -> dict[str, Search]:
        def search(_text: str, q: np.ndarray) -> list[int]:
            docs = self.vs.similarity_search_by_vector(q.tolist(), k=K)
            return [d.metadata["i"] for d in docs]
        return {"SQLiteVec": search}

    def close(self) -> None:
        self.conn.close()


class LangGraphSqliteStore(Peer):
    name, how = "LangGraph SqliteStore", "langgraph SqliteStore with index (vec_distance_cosine scan), sqlean connection"
    requires, pip = ("langgraph.store.sqlite", "sqlean"), "langgraph-checkpoint-sqlite"

    def open(self, workdir: Path, data: Data) -> None:
        from langgraph.store.sqlite import SqliteStore

        super().open(workdir, data)
        # from_conn_string's settings: autocommit, usable from any thread
        self.conn = _sqlean_connection(workdir / "langgraph.db", check_same_thread=False, isolation_level=None)
        embed = _lookup_embeddings(data.lookup(), data.vectors.shape[1])
        # SqliteStore reads "text_fields" (LangGraph's other stores: "fields"); without it, it embeds the JSON
        self.store = SqliteStore(self.conn, index={"dims": data.vectors.shape[1], "embed": embed,
                                                   "text_fields": ["text"]})
        self.store.setup()

    def ingest(self, data: Data) -> None:
        from langgraph.store.base import PutOp

        for start in range(0, len(data.texts), 1000):
            self.store.batch([PutOp(("bench",), str(start + j), {"text": t})
                              for j, t in enumerate(data.texts[start : start + 1000])])

    def searches(self) -> dict[str, Search]:
        def search(text: str, _q: np.ndarray) -> list[int]:  # embeds the query text: the lookup's vector
            return [int(item.key) for item in self.store.search(("bench",), query=text, limit=K)]
        return {"LangGraph SqliteStore": search}

    def close(self) -> None:
        self.conn.close()


class Chroma(Peer):
    name, how = "Chroma", "chromadb PersistentClient in process (HNSW, cosine)"
    requires, pip = ("chromadb",), "chromadb"

    def open(self, workdir: Path, data: Data) -> None:
        import chromadb
        from chromadb.config import Settings

        super().open(workdir, data)
        self.client = chromadb.PersistentClient(path=str(workdir / "chroma"),
                                                settings=Settings(anonymized_telemetry=False))
        self.collection = self.client.create_collection("bench", metadata={"hnsw:space": "cosine"},
                                                        embedding_function=None)

    def ingest(self, data: Data) -> None:
        step = self.client.get_max_batch_size()
        for start in range(0, len(data.texts), step):
            end = start + step
            self.collection.add(ids=[str(i) for i in range(start, min(end, len(data.texts)))],
                                embeddings=data.vectors[start:end], documents=data.texts[start:end])

    def searches(self) -> dict[str, Search]:
        def search(_text: str, q: np.ndarray) -> list[int]:
            found = self.collection.query(query_embeddings=q[None, :], n_results=K, include=[])
            return [int(i) for i in found["ids"][0]]
        return {"Chroma": search}

    def close(self) -> None:
        from chromadb.api.client import SharedSystemClient

        self.collection = self.client = None
        SharedSystemClient.clear_system_cache()  # Chroma keeps clients per path for the process


class LlamaIndexSimple(Peer):
    name, how = "LlamaIndex SimpleVectorStore", "llama-index-core SimpleVectorStore (in memory)"
    requires, pip = ("llama_index.core",), "llama-index-core"

    def open(self, workdir: Path, data: Data) -> None:
        from llama_index.core.vector_stores import SimpleVectorStore

        super().open(workdir, data)
        self.vs = SimpleVectorStore()

    def ingest(self, data: Data) -> None:
        from llama_index.core.schema import TextNode

        self.vs.add([TextNode(id_=str(i), text=t, embedding=v.tolist())
                     for i, (t, v) in enumerate(zip(data.texts, data.vectors, strict=True))])

    def searches(self) -> dict[str, Search]:
        from llama_index.core.vector_stores.types import VectorStoreQuery

        def search(_text: str, q: np.ndarray) -> list[int]:
            result = self.vs.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=K))
            return [int(i) for i in result.ids]
        return {"LlamaIndex SimpleVectorStore": search}

    def close(self) -> None:
        self.vs = None


PEERS: dict[str, type[Peer]] = {
    "numpy": NumpyFloor, "openkoi": OpenKoi, "sqlitevec": LangChainSQLiteVec, "langgraph": LangGraphSqliteStore,
    "chroma": Chroma, "llamaindex": LlamaIndexSimple,
}


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for dist in ("sqlite-vec", "chromadb", "langchain-community", "langgraph-checkpoint-sqlite", "llama-index-core"):
        try:
            found.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found)


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def data_for(size: int, kind: str, turns: list[str], questions: list[str], n_queries: int) -> Data:
    texts = corpus(size, turns)
    query_texts = random.Random(size).sample(sorted(set(questions)), n_queries)  # distinct: the lookup keys
    data = Data(texts, vectors_cached(kind, texts), query_texts, vectors_cached(kind, query_texts, seed=2))
    for q in data.query_vectors:
        scores = data.vectors @ q
        top = np.argpartition(-scores, K)[:K]
        data.exact.append(top[np.argsort(-scores[top])])
    return data


@dataclass
class _Run:
    """One search mode of one ingested system, collecting its measurements."""

    label: str
    peer: Peer
    search: Search
    ingest_s: float | None
    directory: Path
    latencies: list[float] = field(default_factory=list)
    recalls: list[float] = field(default_factory=list)
    searching_s: float = 0.0


def measure(peers: list[Peer], data: Data, workdir: Path, budget: float, min_queries: int) -> list[dict]:
    """Ingest into each system in turn, then ask the queries round-robin: query 1 to every
    system, then query 2, ... so that a busy spell on a shared machine slows all alike."""
    runs: list[_Run] = []
    try:
        for peer in peers:
            directory = workdir / f"{len(data.texts)}-{peer.name.replace(' ', '_')}"
            directory.mkdir()
            gc.collect()
            print(f"  {peer.name}: ingest ...", file=sys.stderr)
            peer.open(directory, data)
            started = time.perf_counter()
            peer.ingest(data)
            ingest_s = None if isinstance(peer, NumpyFloor) else time.perf_counter() - started
            for label, search in peer.searches().items():
                search(data.query_texts[0], data.query_vectors[0])  # warm-up: caches, lazy loads
                runs.append(_Run(label, peer, search, ingest_s, directory))
        print(f"  searching, {len(data.query_texts)} queries round-robin ...", file=sys.stderr)
        for text, q, truth in zip(data.query_texts, data.query_vectors, data.exact, strict=True):
            for run in runs:
                if len(run.latencies) >= min_queries and run.searching_s > budget:
                    continue  # a slow system has had its share
                started = time.perf_counter()
                found = run.search(text, q)
                elapsed = time.perf_counter() - started
                run.latencies.append(elapsed * 1000)
                run.searching_s += elapsed
                run.recalls.append(len(set(found) & set(truth.tolist())) / K)
        rows = []
        for run in runs:
            p50, p95 = percentiles(run.latencies)
            rows.append({"system": run.label, "how": run.peer.how, "size": len(data.texts),
                         "vector_search": run.label != "openkoi hybrid", "ingest_s": run.ingest_s,
                         "p50": p50, "p95": p95, "recall10": float(np.mean(run.recalls)),
                         "queries": len(run.latencies), "disk_mb": _dir_bytes(run.directory) / 2**20})
            print(f"    {run.label}: p50 {p50:.1f} ms, recall {rows[-1]['recall10']:.3f}", file=sys.stderr)
        return rows
    finally:
        for peer in {id(run.peer): run.peer for run in runs}.values():
            peer.close()
        for run in runs:
            shutil.rmtree(run.directory, ignore_errors=True)


def ratios(rows: list[dict]) -> None:
    """Each row's ingest time and search p50 divided by openkoi's (vector search) at the same size."""
    for size in {r["size"] for r in rows}:
        base = next((r for r in rows if r["size"] == size and r["system"] == "openkoi vector"), None)
        for r in rows:
            if r["size"] != size or base is None:
                continue
            r["ingest_ratio"] = r["ingest_s"] / base["ingest_s"] if r["ingest_s"] else None
            r["search_ratio"] = r["p50"] / base["p50"]


def table(rows: list[dict]) -> str:
    head = ("| memories | system | ingest /s | ingest time / openkoi | search p50 / p95 ms | "
            "p50 / openkoi vector | recall@10 | queries | on disk MB |")
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ingest = f"{r['size'] / r['ingest_s']:,.0f}" if r["ingest_s"] else "-"
        iratio = f"{r['ingest_ratio']:.2f}x" if r.get("ingest_ratio") else "-"
        sratio = f"{r['search_ratio']:.2f}x" if r.get("search_ratio") else "-"
        disk = f"{r['disk_mb']:.0f}" if r["disk_mb"] else "- (memory)"
        recall = f"{r['recall10']:.3f}" if r["vector_search"] else "- (BM25 + vectors)"
        lines.append(f"| {r['size']:,} | {r['system']} | {ingest} | {iratio} | {r['p50']:.1f} / {r['p95']:.1f} | "
                     f"{sratio} | {recall} | {r['queries']} | {disk} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--vectors", default="hashing", choices=["hashing", "random", "minilm"])
    parser.add_argument("--peers", default=",".join(PEERS), help=f"comma list of {', '.join(PEERS)}")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--min-queries", type=int, default=30)
    parser.add_argument("--budget", type=float, default=30.0, help="seconds of searching per system and size")
    parser.add_argument("--json", type=Path, help="also write raw results here")
    args = parser.parse_args(argv)
    unknown = set(args.peers.split(",")) - set(PEERS)
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}; choose from {', '.join(PEERS)}")

    peers = []
    for key in args.peers.split(","):
        peer = PEERS[key]()
        reason = peer.missing()
        if reason:
            print(f"{peer.name}: {reason}", file=sys.stderr)
        else:
            peers.append(peer)
    turns, questions = locomo_texts()
    load_before = os.getloadavg()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="openkoi-peers-") as tmp:
        for size in args.sizes:
            print(f"preparing {size:,} x {args.vectors} ...", file=sys.stderr)
            data = data_for(size, args.vectors, turns, questions, args.queries)
            rows.extend(measure(peers, data, Path(tmp), args.budget, args.min_queries))
            del data
    ratios(rows)
    load_after = os.getloadavg()
    print(f"machine: {machine()}\n")
    print(f"load average (1 min) before / after: {load_before[0]:.2f} / {load_after[0]:.2f}\n")
    print(f"command: python bench/peers.py {' '.join(argv if argv is not None else sys.argv[1:])}\n")
    print(f"vectors: {args.vectors}, 384-d, top-{K}; {versions()}\n")
    print(table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": machine(), "vectors": args.vectors, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

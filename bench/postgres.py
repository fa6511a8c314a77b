"""The PostgreSQL backend's speed: ingest, search, HNSW recall, several processes at once; SQLite beside it.

    python bench/postgres.py                          # 10k and 100k memories, hashing + random vectors
    python bench/postgres.py --sizes 1000000 --vectors random --sqlite   # the 1M run (long: see below)
    python bench/postgres.py --url postgresql://user@host/db             # an external server

Without ``--url`` it starts a private PostgreSQL 16 + pgvector (the ``pgserver`` package) in a
temporary directory with ``shared_buffers`` sized to the data. For each size and kind of
vector it builds one memory in its own schema (``add_many`` of precomputed vectors, 1,000
per transaction, the HNSW index kept up to date as rows arrive) and reports: ingest
(memories/s); single ``add`` with the default embedder and dedup on (adds/s); ``search()``
p50/p95 (hybrid, the default); vector-only search p50/p95 through the HNSW index and its
recall@10 against an exact numpy scan of the same vectors; a search scoped to a small
namespace (the exact path); and searches per second with ``--processes`` processes
searching the one memory at once. ``--sqlite`` adds bench/core.py's SQLite rows for the same
sizes, measured in the same run. Texts are LoCoMo turns recombined; queries are LoCoMo
questions. Prints Markdown for docs/scaling.md.

The 1M run builds the HNSW index incrementally over about an hour on two cores; the
index build dominates, as it would for any app that keeps the index current.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "pgmode"))

import core  # noqa: E402  (bench/core.py: corpus, vectors, percentiles, the SQLite run)
from harness import utf8_locale  # noqa: E402  (tests/pgmode: initdb under a UTF-8 locale)

from shared_core import HashingEmbedder, MemoryStore, NewMemory  # noqa: E402


def start_server(directory: Path, memory_gb: float) -> tuple[str, object]:
    import pgserver
    import psycopg

    with utf8_locale():  # "stop", not "delete": the restart below must find the settings on disk
        server = pgserver.get_server(directory, cleanup_mode="stop")
    url = server.get_uri()
    settings = {"shared_buffers": f"{max(128, int(memory_gb * 1024 / 4))}MB", "maintenance_work_mem": "512MB",
                "max_connections": "100", "max_wal_size": "4GB"}
    with psycopg.connect(url, autocommit=True) as conn:
        for key, value in settings.items():
            conn.execute(f"ALTER SYSTEM SET {key} = '{value}'")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    server.cleanup()  # restart, so shared_buffers takes effect
    server = pgserver.get_server(directory, cleanup_mode="delete")
    return server.get_uri(), server


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def _searcher(url: str, queries: list[str], vectors: np.ndarray, seconds: float, out: mp.Queue) -> None:
    with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
        done, started, i = 0, time.perf_counter(), 0
        while time.perf_counter() - started < seconds:
            store.search(queries[i % len(queries)], vector=vectors[i % len(vectors)], namespace="bench", limit=10,
                         track_access=False)
            done, i = done + 1, i + 1
        out.put(done / (time.perf_counter() - started))


def run(url: str, size: int, kind: str, turns: list[str], questions: list[str], n_queries: int,
        processes: int) -> dict:
    texts = core.corpus(size, turns)
    vectors = core.vectors_for(kind, texts)
    rng = random.Random(size)
    query_texts = rng.sample(questions, n_queries)
    query_vectors = core.vectors_for(kind, query_texts, seed=2)
    target = with_schema(url, f"bench_{kind}_{size}_{uuid.uuid4().hex[:6]}")
    result: dict = {"size": size, "vectors": kind}
    with MemoryStore.open(target, embedder=HashingEmbedder()) as store:
        items = [NewMemory(text=t, vector=v, namespace="bench") for t, v in zip(texts, vectors, strict=False)]
        small = [NewMemory(text=t, vector=v, namespace="small") for t, v in zip(texts[:2000], vectors[:2000], strict=False)]
        gc.collect()
        started = time.perf_counter()
        store.add_many(items, batch_size=1000)
        result["ingest_s"] = time.perf_counter() - started
        result["ingest_per_s"] = size / result["ingest_s"]
        store.add_many(small, batch_size=1000)
        del items, small
        with store.db.connection() as conn:
            conn.execute("ANALYZE")

        exact = []
        for q in query_vectors:
            scores = vectors @ q
            top = np.argpartition(-scores, 10)[:10]
            exact.append(top[np.argsort(-scores[top])])
        index_of = {int(r[0]): i for i, r in enumerate(store.db.query(
            "SELECT chunk_rowid FROM memory_chunks WHERE namespace = 'bench' ORDER BY chunk_rowid"))}

        hybrid_ms, vector_ms, small_ms, recalls = [], [], [], []
        for text, q, truth in zip(query_texts, query_vectors, exact, strict=True):
            started = time.perf_counter()
            store.search(text, vector=q, namespace="bench", limit=10, track_access=False)
            hybrid_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            hits = store.search(vector=q, namespace="bench", limit=10, fusion="vector", track_access=False)
            vector_ms.append((time.perf_counter() - started) * 1000)
            recalls.append(len({index_of[h.memory.rowid] for h in hits} & {int(t) for t in truth}) / 10)
            started = time.perf_counter()
            store.search(text, vector=q, namespace="small", limit=10, track_access=False)
            small_ms.append((time.perf_counter() - started) * 1000)
        result["hybrid_p50"], result["hybrid_p95"] = core.percentiles(hybrid_ms)
        result["vector_p50"], result["vector_p95"] = core.percentiles(vector_ms)
        result["small_p50"], result["small_p95"] = core.percentiles(small_ms)
        result["recall10"] = float(np.mean(recalls))

        single = [f"single add {i}: " + t for i, t in enumerate(core.corpus(300, turns, seed=99))]
        started = time.perf_counter()
        for text in single:
            store.add(text, namespace="bench")
        result["single_add_per_s"] = len(single) / (time.perf_counter() - started)
        result["bytes"] = store.db.storage_bytes()

    queue: mp.Queue = mp.Queue()
    workers = [mp.Process(target=_searcher, args=(target, query_texts, query_vectors, 10.0, queue))
               for _ in range(processes)]
    [w.start() for w in workers]
    rates = [queue.get(timeout=300) for _ in workers]
    [w.join() for w in workers]
    result["processes"] = processes
    result["qps"] = sum(rates)
    with MemoryStore.open(target) as store, store.db.connection() as conn:
        conn.execute(f'DROP SCHEMA "{store.db.schema}" CASCADE')
    return result


def table(rows: list[dict]) -> str:
    head = ("| memories | vectors | ingest /s | single add /s | search p50 / p95 ms | vector (HNSW) p50 / p95 ms | "
            "recall@10 | 2k-memory namespace p50 / p95 ms | searches/s, N processes | size on disk |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        lines.append(
            f"| {r['size']:,} | {r['vectors']} | {r['ingest_per_s']:,.0f} | {r['single_add_per_s']:,.0f} | "
            f"{r['hybrid_p50']:.1f} / {r['hybrid_p95']:.1f} | {r['vector_p50']:.1f} / {r['vector_p95']:.1f} | "
            f"{r['recall10']:.3f} | {r['small_p50']:.1f} / {r['small_p95']:.1f} | "
            f"{r['qps']:,.0f} ({r['processes']}) | {r['bytes'] / 2**20:,.0f} MB |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--vectors", default="hashing,random", help="comma list of hashing, random, minilm")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2, help="processes searching at once (the scale-out row)")
    parser.add_argument("--url", help="an existing server (default: a private pgserver in a temporary directory)")
    parser.add_argument("--sqlite", action="store_true", help="also run bench/core.py's SQLite rows, same sizes")
    parser.add_argument("--json", type=Path, help="also write raw results here")
    args = parser.parse_args(argv)
    turns, questions = core.locomo_texts()
    rows, sqlite_rows = [], []
    with tempfile.TemporaryDirectory(prefix="openkoi-bench-pg-") as tmp:
        url, server = (args.url, None) if args.url else start_server(Path(tmp) / "pg", memory_gb=4)
        for size in args.sizes:
            for kind in args.vectors.split(","):
                print(f"postgres: {size:,} x {kind} ...", file=sys.stderr)
                rows.append(run(url, size, kind, turns, questions, args.queries, args.processes))
                print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
                if args.sqlite:
                    print(f"sqlite: {size:,} x {kind} ...", file=sys.stderr)
                    sqlite_rows.append(core.run(size, kind, turns, questions, args.queries, Path(tmp)))
        import psycopg

        with psycopg.connect(url) as conn:
            version = conn.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
                                   ).fetchone()
        del server
    print(f"machine: {core.describe_machine()}; {version[0].split(' on ')[0]}, pgvector {version[1]}\n")
    print(f"command: python bench/postgres.py {' '.join(argv if argv is not None else sys.argv[1:])}\n")
    print(table(rows))
    if sqlite_rows:
        print("\nSQLite, same run (bench/core.py):\n")
        print(core.table(sqlite_rows))
    if args.json:
        args.json.write_text(json.dumps({"postgres": rows, "sqlite": sqlite_rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

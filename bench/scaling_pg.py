"""``bench/scaling.py --backend postgres``: the scaling curve on PostgreSQL + pgvector.

    python bench/scaling.py --backend postgres                       # 10k and 100k, a private server
    python bench/scaling.py --backend postgres --sizes 1000000 --data-dir bench/.cache/pg --reuse --append

Each size is one bench/postgres.py run (the same corpus, vectors, load through ``add_many``,
searches, recall@10 against numpy's exact scan, single adds, two searching processes), plus
the cold start: ``--runs`` new Python processes each open the memory and run one hybrid search
(timed from just before ``MemoryStore.open`` to the results, the median reported), then 50
more, and report their RSS (the vectors stay on the server: the client holds none). Rows go to
``--json`` (default bench/results/scaling-pg.json; ``--append`` merges sizes into it) and a
Markdown table is printed. Server options (``--url``, ``--data-dir``, ``--reuse``) are
bench/postgres.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import postgres  # noqa: E402  (bench/postgres.py: the server, the load and the measurements)
from core import locomo_texts  # noqa: E402
from machine import describe as machine  # noqa: E402

DEFAULT_JSON = BENCH / "results" / "scaling-pg.json"

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from shared_core import HashingEmbedder, MemoryStore

def rss():
    return {{k: int(v.split()[0]) / 1024 for k, _, v in (l.partition(":") for l in open("/proc/self/status"))
            if k in ("VmRSS", "RssAnon", "RssFile")}}

queries, vectors = {queries!r}, np.asarray({vectors!r}, dtype=np.float32)
opened = time.perf_counter()
store = MemoryStore.open({url!r}, embedder=HashingEmbedder({dims}))
store.search(queries[0], vector=vectors[0], namespace="bench", limit=10, track_access=False)
first = time.perf_counter()
warm = []
for text, vector in zip(queries[1:], vectors[1:]):
    began = time.perf_counter()
    store.search(text, vector=vector, namespace="bench", limit=10, track_access=False)
    warm.append((time.perf_counter() - began) * 1000)
print(json.dumps({{"cold_ms": (first - opened) * 1000, "rss": rss(), "warm_p50": sorted(warm)[len(warm) // 2]}}))
store.close()
"""


def cold_starts(url: str, dims: int, queries: list[str], vectors: np.ndarray, runs: int) -> dict:
    """The median of ``runs`` new processes: open + first hybrid search, and RSS after 51 searches."""
    results = []
    for _ in range(runs):
        code = CHILD.format(root=str(BENCH.parent), url=url, dims=dims, queries=queries,
                            vectors=vectors.astype(float).round(6).tolist())
        out = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=3600,
                             check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    results.sort(key=lambda r: r["cold_ms"])
    middle = results[len(results) // 2]
    return {"cold_ms": middle["cold_ms"], "cold_runs_ms": [r["cold_ms"] for r in results],
            "rss_mb": middle["rss"]["VmRSS"], "rss_anon_mb": middle["rss"]["RssAnon"],
            "rss_file_mb": middle["rss"]["RssFile"], "cold_warm_p50": middle["warm_p50"]}


def cold_table(rows: list[dict]) -> str:
    head = ("| memories | vectors | open + first hybrid search, new process, ms (median; all runs) | "
            "client RSS after 51 searches, MB (own + mapped files) | hybrid p50 ms |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        runs = ", ".join(f"{ms:,.0f}" for ms in r["cold_runs_ms"])
        lines.append(f"| {r['size']:,} | {r['vectors']} | {r['cold_ms']:,.0f} ({runs}) | {r['rss_mb']:,.0f} "
                     f"({r['rss_anon_mb']:,.0f} + {r['rss_file_mb']:,.0f}) | {r['hybrid_p50']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/scaling.py --backend postgres", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--vectors", default="minilm-static", choices=["hashing", "random", "minilm-static"])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2, help="processes searching at once")
    parser.add_argument("--runs", type=int, default=5, help="new processes timed for the cold start")
    parser.add_argument("--url", help="an existing server (default: a private pgserver)")
    parser.add_argument("--server", choices=list(postgres.SERVERS), default="pgserver", help="the private server")
    parser.add_argument("--data-dir", type=Path, help="keep the private server's data here")
    parser.add_argument("--reuse", action="store_true", help="search the memories an earlier run built there")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})")
    parser.add_argument("--append", action="store_true", help="merge into the results file instead of replacing it")
    args = parser.parse_args(argv)
    if min(args.sizes) <= 2000:
        parser.error("sizes must be above 2,000 (the 2,000-memory namespace is searched beside them)")
    postgres.check_vectors([args.vectors])

    previous = json.loads(args.json.read_text()) if args.append and args.json.exists() else {"rows": []}
    turns, questions = locomo_texts()
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="openkoi-scaling-pg-") as tmp:
        url, server = (args.url, None) if args.url else postgres.start_server(args.data_dir or Path(tmp) / "pg",
                                                                               keep=args.data_dir is not None,
                                                                               kind=args.server)
        for size in args.sizes:
            schema = f"bench_{args.vectors.replace('-', '_')}_{size}"
            print(f"postgres: {size:,} x {args.vectors} ...", file=sys.stderr)
            if not args.reuse:
                postgres.drop(url, schema)
            row = postgres.run(url, size, args.vectors, turns, questions, args.queries, args.processes, args.reuse)
            query_texts = random.Random(size).sample(questions, 51)
            query_vectors = postgres.vectors(args.vectors, query_texts, seed=2)
            row.update(cold_starts(postgres.with_schema(url, schema), row["dims"], query_texts, query_vectors,
                                   args.runs))
            row["backend"], row["load_avg"] = "postgres", [load_before, os.getloadavg()[0]]
            rows.append(row)
            print(postgres.table(rows[-1:]).splitlines()[-1], file=sys.stderr)
            if args.data_dir is None:  # kept only in a --data-dir, for --reuse
                postgres.drop(url, schema)
        described = postgres.describe_server(url, rows)
        if server is not None:  # stop it before its temporary directory goes
            server.cleanup()
    measured = {(r["size"], r["vectors"]) for r in rows}
    merged = sorted([r for r in previous["rows"] if (r["size"], r["vectors"]) not in measured] + rows,
                    key=lambda r: (r["vectors"], r["size"]))
    command = f"python bench/scaling.py --backend postgres {' '.join(argv)}".strip()
    runs = [*previous.get("runs", []), {"command": command, "machine": f"{machine()}; {described}", "sizes": args.sizes}]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": runs, "rows": merged}, indent=2))
    print(f"load average (1 min) at start: {load_before:.2f}\n")
    for r in runs:
        print(f"machine: {r['machine']}\n\ncommand: {r['command']}\n")
    drawn = [r for r in merged if r["vectors"] == args.vectors]
    print(postgres.table(drawn) + "\n\n" + cold_table(drawn))
    print(f"\nresults: {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

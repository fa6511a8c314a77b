"""Scaling curve: ingest and search cost from 1k to 1M memories, plotted to docs/scaling.png.

    python bench/scaling.py                                   # 1k, 10k, 100k
    python bench/scaling.py --sizes 1000000 --append          # the 1M point, added to the last run's
    python bench/scaling.py --sizes 1000 5000 --plot /tmp/s.png --json /tmp/s.json   # a quick check
    python bench/scaling.py --sizes 100000 1000000 --cached --append   # cold start and RSS, on cached stores
    python bench/scaling.py --backend postgres --sizes 100000       # PostgreSQL + pgvector (bench/scaling_pg.py)

Each size is one bench/core.py run (the same corpus, vectors, queries and measurements:
bulk ingest, single adds, hybrid search, vector search through the mirror and through
sqlite-vec, and numpy's exact scan as the floor). With ``--cached``, each size is instead measured
on a store built once and kept in bench/.cache (bench/cold_start.py): the same measurements plus
the cold start (open + first hybrid search in a NEW process, the median of ``--runs`` processes)
and that process's RSS, split into its own memory and the shared pages of mapped files. The rows
go to a JSON file
(``--json``, default bench/results/scaling.json); ``--append`` merges the new sizes into
it (replacing a size measured before), so the slow 1M point can be its own run. The plot
is drawn from everything in that file; the Markdown table is printed.

1M needs about 3 GB of RAM (the benchmark's own copy of the vectors, 1.5 GB, and the items it
adds), about 5 GB of disk for the store and its vector file (in bench/.cache with ``--cached``)
and, the first time, the hashing embedder's time for 1M texts (tens of minutes on 2 cores;
cached in bench/.cache after).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from cold_start import cached_run  # noqa: E402
from core import embedder_for, locomo_texts, run, table  # noqa: E402
from machine import describe as machine  # noqa: E402

DEFAULT_JSON = BENCH / "results" / "scaling.json"
DEFAULT_PLOT = BENCH.parent / "docs" / "scaling.png"
SEARCHES = [  # (result key, label) in the order they are drawn
    ("hybrid", "search() hybrid, default"),
    ("vector", "vector search (mirror)"),
    ("sqlite_vec", "vector search (sqlite-vec vec0)"),
    ("numpy", "numpy exact scan (floor)"),
]


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: r["size"])
    sizes = [r["size"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for key, label in SEARCHES:
        p50 = [r[f"{key}_p50"] for r in rows]
        p95 = [r[f"{key}_p95"] for r in rows]
        (line,) = left.plot(sizes, p50, marker="o", label=label)
        left.fill_between(sizes, p50, p95, color=line.get_color(), alpha=0.12)
    left.set(xscale="log", yscale="log", xlabel="memories", ylabel="ms per query (p50; band to p95)",
             title="search, top-10")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    right.plot(sizes, [r["ingest_per_s"] for r in rows], marker="o", label="add_many (precomputed vectors)")
    right.plot(sizes, [r["single_add_per_s"] for r in rows], marker="o",
               label="add() one at a time (embeds, dedup on)")
    right.set(xscale="log", yscale="log", xlabel="memories already stored", ylabel="memories per second",
              title="ingest")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.suptitle(textwrap.fill(title, 150), fontsize=9)  # the machine line is long
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _uncached(row: dict) -> str:
    if "uncached_hybrid_p50" not in row:  # measured before this column, or where pages cannot be dropped
        return "-"
    adds = row.get("uncached_single_add_per_s")
    return (f"{row['uncached_hybrid_p50']:.1f} / {row['uncached_hybrid_p95']:.1f}, "
            + (f"{adds:,.0f}" if adds is not None else "-"))


def cold_table(rows: list[dict]) -> str:
    """Cold start and memory, for the rows measured with ``--cached``."""
    head = ("| memories | vectors | open + first hybrid search, new process, ms (median; all runs) | "
            "RSS after 51 searches, MB (own + mapped files) | vector file on disk, MB | hybrid p50 ms | "
            "vector file not cached: hybrid p50 / p95 ms, single adds /s |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        if "cold_ms" not in r:
            continue
        runs = ", ".join(f"{ms:,.0f}" for ms in r["cold_runs_ms"])
        lines.append(f"| {r['size']:,} | {r['vectors']} | {r['cold_ms']:,.0f} ({runs}) | {r['rss_mb']:,.0f} "
                     f"({r['rss_anon_mb']:,.0f} + {r['rss_file_mb']:,.0f}) | {r['file_mb']:,.0f} | "
                     f"{r['hybrid_p50']:.1f} | {_uncached(r)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    backend = argparse.ArgumentParser(add_help=False)
    backend.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    chosen, rest = backend.parse_known_args(sys.argv[1:] if argv is None else argv)
    if chosen.backend == "postgres":  # its own options: bench/scaling_pg.py
        from scaling_pg import main as postgres_main

        return postgres_main(rest)
    argv = rest
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--vectors", default="hashing", choices=["hashing", "random", "minilm", "static"],
                        help="hashing (default), random, minilm (all-MiniLM-L6-v2, cached) or static (the "
                             "default embedder's: real-text vectors at a million's scale)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})")
    parser.add_argument("--append", action="store_true", help="merge into the results file instead of replacing it")
    parser.add_argument("--plot", type=Path, default=DEFAULT_PLOT, help=f"PNG to write (default {DEFAULT_PLOT})")
    parser.add_argument("--cached", action="store_true",
                        help="measure on stores built once and kept in bench/.cache, with cold start and RSS")
    parser.add_argument("--runs", type=int, default=5, help="new processes timed for the cold start (--cached)")
    args = parser.parse_args(argv)
    if min(args.sizes) <= 10:
        parser.error("sizes must be above 10 (top-10 search)")

    previous = json.loads(args.json.read_text()) if args.append and args.json.exists() else {"rows": []}
    turns, questions = locomo_texts()
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="openkoi-scaling-") as tmp:
        for size in args.sizes:
            print(f"running {size:,} x {args.vectors} ...", file=sys.stderr)
            if args.cached:
                rows.append(cached_run(size, args.vectors, turns, questions, args.queries, Path(tmp), runs=args.runs))
            else:
                rows.append(run(size, args.vectors, turns, questions, args.queries, Path(tmp)))
            rows[-1]["load_avg"] = [load_before, os.getloadavg()[0]]
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
    measured = {r["size"] for r in rows}
    merged = sorted([r for r in previous["rows"] if r["size"] not in measured or r["vectors"] != args.vectors]
                    + rows, key=lambda r: (r["vectors"], r["size"]))
    command = f"python bench/scaling.py {' '.join(argv if argv is not None else sys.argv[1:])}".strip()
    runs = [*previous.get("runs", []), {"command": command, "machine": machine(), "sizes": args.sizes}]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": runs, "rows": merged}, indent=2))

    drawn = [r for r in merged if r["vectors"] == args.vectors]
    loads = [x for r in drawn for x in r.get("load_avg", [])]
    busy = f"; 1-min load average {min(loads):.1f}-{max(loads):.1f}" if loads else ""
    plot(drawn, args.plot, f"openkoi-memory, {args.vectors} vectors, {embedder_for(args.vectors).dims}-d; {machine()}{busy}")
    print(f"machine: {machine()}\n")
    print(f"load average (1 min) at start: {load_before:.2f}\n")
    for r in runs:
        print(f"command: {r['command']}\n")
    print(table(drawn))
    if any("cold_ms" in r for r in drawn):
        print("\n" + cold_table(drawn))
    print(f"\nplot: {args.plot}\nresults: {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

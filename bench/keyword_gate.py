"""What counting the keyword gate within the searched scope costs (issue 21, part 4).

    python bench/keyword_gate.py                       # 100k rows, one namespace of 2k, 200 queries
    python bench/keyword_gate.py --rows 20000 --scope-rows 500

The file holds ``--rows`` memories (LoCoMo turns recombined, as in bench/core.py): a team's
namespace and one user's of ``--scope-rows``. Each LoCoMo question is searched in the user's
namespace (keyword side only, ``fusion="keyword"``) twice on the same file, in one run:

* **file-wide gate** (before): words held by more than 5 % of the *file's* rows are left out,
  whatever the namespace searched (``KeywordIndex.prepare(text)`` without a scope);
* **scoped gate** (now): a word is left out only if it is that common *within the namespace*;
  in a namespace of 2,000 rows or fewer, never.

It prints p50/p95 of the keyword search (prepare + FTS5) for both, and how many queries lost
a result of the user's namespace to the file-wide gate (top-10 ids differ; a search that
missed matching memories found fewer). Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from core import corpus, locomo_texts, percentiles  # noqa: E402
from machine import describe as describe_machine  # noqa: E402

from shared_core import HashingEmbedder, MemoryStore, NewMemory  # noqa: E402
from shared_core.index.scope import Scope  # noqa: E402

NAMESPACE = "user:ann"


def build(path: Path, rows: int, scope_rows: int, turns: list[str]) -> None:
    texts = corpus(rows, turns)
    rng = random.Random(3)
    ann = set(rng.sample(range(rows), scope_rows))  # the user's rows spread over the file, as they come in
    zero = [0.0] * 383 + [1.0]  # the keyword side only: every vector the same
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([NewMemory(text=t, vector=zero, namespace=NAMESPACE if i in ann else "team")
                        for i, t in enumerate(texts)], batch_size=2000)


def measure(store: MemoryStore, queries: list[str], scoped: bool, limit: int = 10) -> tuple[list[float], list[list]]:
    index = store.kernel.keyword
    scope = Scope(namespaces=(NAMESPACE,), kinds=None, live_at=None)
    times, found = [], []
    for text in queries:
        started = time.perf_counter()
        prepared = index.prepare(text, scope) if scoped else index.prepare(text)
        hits = index.search(prepared, scope, limit)
        times.append((time.perf_counter() - started) * 1000)
        found.append([rowid for rowid, _ in hits])
    return times, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--scope-rows", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    turns, questions = locomo_texts()
    queries = random.Random(5).sample(questions, min(args.queries, len(questions)))
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        path = Path(tmp) / "gate.db"
        started = time.perf_counter()
        build(path, args.rows, args.scope_rows, turns)
        print(f"built {args.rows:,} rows ({args.scope_rows:,} in {NAMESPACE}) in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
        with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
            measure(store, queries[:20], scoped=True)  # warm the page cache and the stem/df caches
            measure(store, queries[:20], scoped=False)
            rounds = {True: [], False: []}
            results = {}
            for _ in range(3):  # alternate, so that neither side gets a quieter moment of the machine
                for scoped in (False, True):
                    times, found = measure(store, queries, scoped)
                    rounds[scoped].append(times)
                    results[scoped] = found
    print(f"Machine: {describe_machine()}\n")
    print(f"{args.rows:,} rows, a namespace of {args.scope_rows:,}, {len(queries)} LoCoMo questions searched in it "
          "(keyword side: prepare + FTS5, top 10); median of 3 rounds\n")
    print("| gate | p50 ms | p95 ms | queries with fewer or other results |")
    print("| --- | --- | --- | --- |")
    changed = sum(a != b for a, b in zip(results[False], results[True], strict=True))
    fewer = sum(len(a) < len(b) for a, b in zip(results[False], results[True], strict=True))
    for scoped, label in ((False, "file-wide (before)"), (True, "within the scope (now)")):
        p50 = statistics.median(percentiles(t)[0] for t in rounds[scoped])
        p95 = statistics.median(percentiles(t)[1] for t in rounds[scoped])
        note = f"{changed} differ, {fewer} found fewer" if not scoped else "reference"
        print(f"| {label} | {p50:.1f} | {p95:.1f} | {note} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

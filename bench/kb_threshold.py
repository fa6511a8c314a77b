"""Choose the knowledge-base vector threshold for an embedder, measured on LoCoMo.

Seed 003 keeps knowledge-base chunks whose cosine similarity to the query is at least 0.7,
a value for OpenAI-style sentence embeddings. Other embedders put similarities on other
scales, so the threshold is a per-embedder setting (``EmbedderProfile.kb_threshold``). This
script measures where it should sit:

* Corpus: each LoCoMo conversation's sessions become knowledge-base documents (one text
  document per session, chunked 1000/200 like any document), each conversation in its own
  namespace.
* On-topic queries: the answerable questions (categories 1-4). A chunk is relevant when it
  holds one of the question's evidence turns.
* Off-topic queries: each conversation's questions asked against the next conversation's
  namespace, where nothing is relevant.

For each threshold it prints (1) the vector side alone: the share of on-topic questions whose
best relevant chunk reaches the threshold, and the share of irrelevant chunks that do; and
(2) the knowledge-base search as shipped (hybrid, threshold on the vector side only, strong
keyword matches kept): recall@5 on-topic and the mean number of chunks returned off-topic.

    python bench/kb_threshold.py [--data /work/shared/data/locomo10.json] [--conversations 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared_core import MemoryStore  # noqa: E402
from shared_core.embed import profile_of  # noqa: E402

THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
STRENGTHS = (0.0, 0.3, 0.4, 0.5, 0.7, 1.01)


def sessions(conversation: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    out = []
    for key, turns in conversation.items():
        if re.fullmatch(r"session_\d+", key) and turns:
            out.append((key, [(t["dia_id"], f"{t['speaker']}: {t['text']}") for t in turns]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.environ.get("LOCOMO", "/work/shared/data/locomo10.json"))
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--embedder", default="static", help="static, hashing, or sentence-transformers/<model>")
    args = parser.parse_args()
    data = json.loads(Path(args.data).read_text())[: args.conversations]
    started = time.perf_counter()
    store = MemoryStore.open(":memory:", config={"models": {"embedder": args.embedder},
                                                 "knowledge_base": {"similarity_threshold": 0.0}})
    kb = store.documents
    gold_chunks: list[dict[str, set[str]]] = []  # per conversation: chunk id -> turn ids it holds
    chunk_vectors: list[np.ndarray] = []
    for n, sample in enumerate(data):
        namespace = f"conv{n}"
        chunk_turns: dict[str, set[str]] = {}
        for name, turns in sessions(sample["conversation"]):
            text = "\n".join(line for _, line in turns)
            document = kb.ingest_text(text, name=f"{name}.txt", namespace=namespace)
            spans, position = [], 0
            for turn_id, line in turns:
                spans.append((turn_id, position, position + len(line)))
                position += len(line) + 1
            for chunk in kb.get_chunks(document.id):
                chunk_turns[chunk.id] = {t for t, a, b in spans if a < chunk.end and b > chunk.start}
        gold_chunks.append(chunk_turns)
        chunk_vectors.append(store.embed([store.get(cid).text for cid in chunk_turns]))
    chunks_total = sum(len(g) for g in gold_chunks)

    best_gold, noise = [], []
    on_topic: list[list[tuple[float | None, float, bool]]] = []  # per question: (similarity, coverage, relevant)
    off_topic: list[list[tuple[float | None, float, bool]]] = []
    for n, sample in enumerate(data):
        namespace = f"conv{n}"
        other = f"conv{(n + 1) % len(data)}"
        for qa in sample["qa"]:
            if qa.get("category") == 5:
                continue
            evidence = {e.strip() for e in qa.get("evidence", []) if isinstance(e, str)}
            relevant = {cid for cid, turns in gold_chunks[n].items() if turns & evidence}
            if not relevant:
                continue
            query = qa["question"]
            on_topic.append(candidates(store, kb, query, namespace, relevant))
            if len(data) > 1:
                off_topic.append(candidates(store, kb, query, other, set()))
            vector = store.embed([query])[0]
            ids = list(gold_chunks[n])
            sims = chunk_vectors[n] @ vector
            mask = np.array([cid in relevant for cid in ids])
            best_gold.append(float(sims[mask].max()))
            noise.extend(float(s) for s in sims[~mask])
    best_gold_arr, noise_arr = np.array(best_gold), np.array(noise)

    print(f"embedder {store.embedder.name} (profile kb_threshold {profile_of(store.embedder).kb_threshold}, "
          f"similarity_floor {profile_of(store.embedder).similarity_floor})")
    print(f"{len(data)} conversations, {chunks_total} chunks, {len(on_topic)} on-topic and {len(off_topic)} "
          f"off-topic questions; {platform.processor() or platform.machine()}, {time.perf_counter() - started:.0f} s")
    print()
    print("| threshold | best relevant chunk >= t | irrelevant chunks >= t |")
    print("| ---: | ---: | ---: |")
    for t in THRESHOLDS:
        print(f"| {t:.2f} | {np.mean(best_gold_arr >= t):.1%} | {np.mean(noise_arr >= t):.2%} |")
    print()
    print("knowledge-base search, limit 5: recall@5 on-topic / mean chunks returned off-topic")
    print()
    print("| threshold | " + " | ".join(f"keyword_strength {s:g}" if s <= 1 else "vector side only"
                                        for s in STRENGTHS) + " |")
    print("| ---: | " + " | ".join("---:" for _ in STRENGTHS) + " |")
    for t in THRESHOLDS:
        cells = []
        for s in STRENGTHS:
            recall = np.mean([any(rel for _, _, rel in kept(c, t, s)) for c in on_topic])
            returned = np.mean([len(kept(c, t, s)) for c in off_topic]) if off_topic else float("nan")
            cells.append(f"{recall:.1%} / {returned:.2f}")
        print(f"| {t:.2f} | " + " | ".join(cells) + " |")
    store.close()


def candidates(store, kb, query, namespace, relevant):  # noqa: ANN001, ANN201
    """The core search's ranked candidates, with what the knowledge-base filter looks at."""
    hits = store.search(query, namespace=namespace, kind="document", limit=20, track_access=False)
    coverage = kb._coverage(query, [h for h in hits if (h.parts.bm25 or 0) > 0])
    return [(h.parts.similarity, coverage.get(h.memory.rowid, 0.0), h.id in relevant) for h in hits]


def kept(candidates, threshold, strength, limit=5):  # noqa: ANN001, ANN201
    out = [c for c in candidates if (c[0] is not None and c[0] >= threshold) or (c[1] > 0 and c[1] >= strength)]
    # keyword_strength 0 keeps every keyword match: the plain hybrid search, no threshold at all
    return out[:limit]


if __name__ == "__main__":
    main()

"""Evidence retrieval on LoCoMo: recall@5, recall@10 and NDCG@10 per question category.

Each conversation's turns go into a fresh in-memory store (one memory per turn, text
"Speaker: what they said", plus the image caption when a turn shares a photo, in its session:
``session_id``, as a chat's messages are). Every
question is asked; the gold evidence turns are looked for in the top 10. Methods:
``bm25`` (FTS5 only), ``vector`` (embedder only), ``hybrid`` (the default fusion and
ranking) and ``hybrid + time`` (a time in the question, "in June", "last year", "after the
road trip", raises the turns said then: each turn carries its session's date, and the
questions are asked the day after the last session), or any fusion setting given with --grid.

    python bench/quality/locomo.py                       # hashing embedder, 3 methods
    python bench/quality/locomo.py --embedder static     # the default embedder (numpy only)
    python bench/quality/locomo.py --embedder minilm     # needs sentence-transformers
    python bench/quality/locomo.py --grid                # fusion settings grid (tuning)

LoCoMo categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
"Preference" questions (would/likely/prefer/favourite/enjoy...) are also reported apart.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from shared_core import ManualClock, MemoryStore, NewMemory  # noqa: E402
from shared_core.embed import HashingEmbedder, embedder_from_name  # noqa: E402


def _find_data() -> Path:
    """$LOCOMO_PATH, else ../shared/data/locomo10.json beside the checkout, else this workplace's /work/shared."""
    if os.environ.get("LOCOMO_PATH"):
        return Path(os.environ["LOCOMO_PATH"])
    for candidate in (ROOT.parent / "shared" / "data" / "locomo10.json", Path("/work/shared/data/locomo10.json")):
        if candidate.exists():
            return candidate
    return ROOT.parent / "shared" / "data" / "locomo10.json"


DEFAULT_DATA = _find_data()
CACHE = ROOT / "bench" / ".cache"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
PREFERENCE = re.compile(r"\b(would|likely|prefer\w*|favou?rite|enjoy\w*|interested|like to)\b", re.IGNORECASE)
_DIA = re.compile(r"^D(\d+):(\d+)$")


@dataclass
class Question:
    text: str
    evidence: frozenset[str]
    category: int

    @property
    def preference(self) -> bool:
        return bool(PREFERENCE.search(self.text))


@dataclass
class Conversation:
    sample_id: str
    turns: list[tuple[str, str]]  # (dia_id, text)
    questions: list[Question]
    said_at: dict[str, datetime] = field(default_factory=dict)  # dia_id -> its session's date and time
    session_of: dict[str, str] = field(default_factory=dict)  # dia_id -> its session ("session_3")

    @property
    def asked_at(self) -> datetime | None:
        """When the questions are asked: the day after the last session."""
        return max(self.said_at.values()) + timedelta(days=1) if self.said_at else None


def session_time(text: str) -> datetime | None:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware datetime (UTC), None if unreadable."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


@dataclass
class LoadReport:
    conversations: list[Conversation]
    skipped_evidence: int = 0
    repaired_evidence: int = 0
    skipped_questions: int = 0


def normalise_evidence(raw: str) -> tuple[list[str], int, int]:
    """Turn ids from one evidence entry: (ids, repaired, skipped). Handles 'D8:6; D9:17', 'D:11:26', 'D30:05'."""
    ids, repaired, skipped = [], 0, 0
    for part in re.split(r"[;,]", raw):
        part = part.strip()
        if not part:
            continue
        fixed = part.replace("D:", "D", 1) if part.startswith("D:") else part
        match = _DIA.match(fixed)
        if not match:
            skipped += 1
            continue
        canonical = f"D{int(match.group(1))}:{int(match.group(2))}"
        repaired += canonical != part
        ids.append(canonical)
    return ids, repaired, skipped


def load(path: Path = DEFAULT_DATA) -> LoadReport:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    report = LoadReport([])
    for sample in data:
        conv = sample["conversation"]
        turns = []
        said_at: dict[str, datetime] = {}
        session_of: dict[str, str] = {}
        for key, value in conv.items():
            if not (key.startswith("session_") and isinstance(value, list)):
                continue
            when = session_time(str(conv.get(f"{key}_date_time", "")))
            for turn in value:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                turns.append((turn["dia_id"], text))
                session_of[turn["dia_id"]] = key
                if when is not None:
                    said_at[turn["dia_id"]] = when
        known = {dia for dia, _ in turns}
        questions = []
        for qa in sample["qa"]:
            evidence: set[str] = set()
            for raw in qa.get("evidence") or []:
                ids, repaired, skipped = normalise_evidence(str(raw))
                report.repaired_evidence += repaired
                report.skipped_evidence += skipped
                for dia in ids:
                    if dia in known:
                        evidence.add(dia)
                    else:
                        report.skipped_evidence += 1
            if not evidence:
                report.skipped_questions += 1
                continue
            questions.append(Question(qa["question"], frozenset(evidence), int(qa["category"])))
        report.conversations.append(Conversation(sample["sample_id"], turns, questions, said_at, session_of))
    return report


# -- embedders ----------------------------------------------------------------------------------


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache (real models are slow on 2 cores)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dims = inner.dims
        self.profile = getattr(inner, "profile", None)
        CACHE.mkdir(parents=True, exist_ok=True)
        self.path = CACHE / f"embeddings-{re.sub(r'[^a-zA-Z0-9_.-]', '_', self.name)}.npz"
        self.cache: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as saved:
                self.cache = {k: saved[k] for k in saved.files}
        self.dirty = False

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in self.cache]
        if todo:
            vectors = np.asarray(self.inner.embed([texts[i] for i in todo]), dtype=np.float32)
            for i, v in zip(todo, vectors, strict=False):
                self.cache[keys[i]] = v
            self.dirty = True
        return np.stack([self.cache[k] for k in keys])

    def save(self) -> None:
        if self.dirty:
            np.savez(self.path, **self.cache)
            self.dirty = False


def make_embedder(name: str) -> Any:
    """``hashing``, ``static``, ``minilm`` (cached: needs sentence-transformers), or any name
    :func:`~shared_core.embed.embedder_from_name` builds (``static/minilm-256``: the uncentred static vectors)."""
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        from shared_core.embed import SentenceTransformerEmbedder

        return CachedEmbedder(SentenceTransformerEmbedder("all-MiniLM-L6-v2"))
    try:
        return embedder_from_name(name)
    except ValueError as exc:
        raise SystemExit(f"unknown embedder {name!r}; use hashing, static, minilm or an embedder name ({exc})") from None


# -- metrics ------------------------------------------------------------------------------------


def recall_at(ranked: list[str], gold: frozenset[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold)


def ndcg_at(ranked: list[str], gold: frozenset[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, dia in enumerate(ranked[:k]) if dia in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal


@dataclass
class Scores:
    n: int = 0
    r5: float = 0.0
    r10: float = 0.0
    ndcg10: float = 0.0

    def add(self, ranked: list[str], gold: frozenset[str]) -> None:
        self.n += 1
        self.r5 += recall_at(ranked, gold, 5)
        self.r10 += recall_at(ranked, gold, 10)
        self.ndcg10 += ndcg_at(ranked, gold, 10)

    def row(self) -> tuple[float, float, float]:
        if not self.n:
            return (float("nan"),) * 3
        return (self.r5 / self.n, self.r10 / self.n, self.ndcg10 / self.n)


@dataclass
class MethodResult:
    name: str
    overall: Scores = field(default_factory=Scores)
    answerable: Scores = field(default_factory=Scores)  # categories 1-4
    by_category: dict[int, Scores] = field(default_factory=dict)
    preference: Scores = field(default_factory=Scores)
    seconds: float = 0.0


# -- evaluation ---------------------------------------------------------------------------------

METHODS = {
    "bm25": {"fusion": "keyword", "time_phrases": "off"},
    "vector": {"fusion": "vector", "time_phrases": "off"},
    "hybrid": {"time_phrases": "off"},
    "hybrid + time": {"time_phrases": "boost"},  # a time in the question raises the turns of that time
}


def evaluate(report: LoadReport, embedder: Any, methods: dict[str, dict[str, Any]],
             limit_conversations: int | None = None, *, conversations: Iterable[int] | None = None,
             config: dict[str, dict[str, Any]] | None = None) -> list[MethodResult]:
    """Every method over every conversation (or those numbered in ``conversations``); vectors are
    computed once and reused. ``config``: store settings under the methods' search settings."""
    results = {name: MethodResult(name) for name in methods}
    chosen = report.conversations[:limit_conversations]
    if conversations is not None:
        chosen = [report.conversations[i] for i in conversations]
    for conv in chosen:
        turn_vectors = np.asarray(embedder.embed([text for _, text in conv.turns]), dtype=np.float32)
        query_vectors = np.asarray(embedder.embed([q.text for q in conv.questions]), dtype=np.float32)
        for name, options in methods.items():
            store_config = {section: dict(values) for section, values in (config or {}).items()}
            store_config["search"] = {**store_config.get("search", {}), "track_access": False,
                                      **{k: v for k, v in options.items() if k != "fusion"}}
            # The replay's clock stands on the day the questions are asked, so recency is the same on any date.
            clock = ManualClock(conv.asked_at) if conv.asked_at else None
            with MemoryStore.open(":memory:", embedder=embedder, config=store_config, clock=clock) as store:
                store.add_many(
                    [NewMemory(text=text, id=dia, namespace=conv.sample_id, kind="message", vector=vec,
                               created_at=conv.said_at.get(dia), session_id=conv.session_of.get(dia))
                     for (dia, text), vec in zip(conv.turns, turn_vectors, strict=False)],
                    batch_size=2000,
                )
                result = results[name]
                started = time.perf_counter()
                for question, qvec in zip(conv.questions, query_vectors, strict=False):
                    hits = store.search(question.text, vector=qvec, namespace=conv.sample_id, limit=10,
                                        fusion=options.get("fusion"), track_access=False, asked_at=conv.asked_at)
                    ranked = [hit.id for hit in hits]
                    result.overall.add(ranked, question.evidence)
                    if question.category != 5:
                        result.answerable.add(ranked, question.evidence)
                    result.by_category.setdefault(question.category, Scores()).add(ranked, question.evidence)
                    if question.preference:
                        result.preference.add(ranked, question.evidence)
                result.seconds += time.perf_counter() - started
    if hasattr(embedder, "save"):
        embedder.save()
    return list(results.values())


def table(results: Iterable[MethodResult]) -> str:
    lines = [
        "| method | R@5 (1-4) | R@10 (1-4) | NDCG@10 (1-4) | multi-hop R@10 | temporal R@10 | open-domain R@10 "
        "| single-hop R@10 | adversarial R@10 | preference R@10 | queries/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        r5, r10, nd = r.answerable.row()
        cats = [r.by_category.get(c, Scores()).row()[1] for c in (1, 2, 3, 4, 5)]
        pref = r.preference.row()[1]
        qps = r.overall.n / r.seconds if r.seconds else float("nan")
        lines.append(
            f"| {r.name} | {r5:.3f} | {r10:.3f} | {nd:.3f} | "
            + " | ".join(f"{c:.3f}" for c in cats)
            + f" | {pref:.3f} | {qps:.0f} |"
        )
    return "\n".join(lines)


def grid_methods(embedder_name: str) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {"bm25": {"fusion": "keyword"}, "vector": {"fusion": "vector"}}
    floors = [0.2, 0.3, 0.35, 0.4, 0.5] if embedder_name in ("hashing", "static") else [0.0, 0.1, 0.2, 0.3]
    for floor in floors:
        for weight in (0.15, 0.3, 0.5, 0.8, 1.2):
            methods[f"keyword_first f={floor} w={weight}"] = {
                "fusion": "keyword_first", "similarity_floor": floor, "vector_weight": weight}
    for weight in (0.2, 0.35, 0.5, 0.65):
        methods[f"weighted f={floors[1]} w={weight}"] = {
            "fusion": "weighted", "similarity_floor": floors[1], "vector_weight": weight}
    methods["rrf"] = {"fusion": "rrf", "similarity_floor": 0.0}
    return methods


SPLITS = {
    "all": lambda report: None,
    "tune": lambda report: range(0, min(5, len(report.conversations))),
    "held-out": lambda report: range(5, len(report.conversations)),
}


def settings(pairs: list[str]) -> dict[str, dict[str, Any]]:
    """``["ranking.recency_rate=0"]`` as ``{"ranking": {"recency_rate": 0}}`` (values read as JSON, else text)."""
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        section, dot, name = key.partition(".")
        if not sep or not dot or not section or not name:
            raise SystemExit(f"--set wants SECTION.KEY=VALUE, got {pair!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(section, {})[name] = value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedder", default="hashing", help="hashing, static, minilm, or an embedder name")
    parser.add_argument("--grid", action="store_true", help="evaluate a grid of fusion settings")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--methods", help="comma-separated subset of the methods (default: all of them)")
    parser.add_argument("--split", choices=sorted(SPLITS), default="all",
                        help="tune: conversations 0-4, held-out: 5-9 (tune settings on one, report the other)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a store setting for every method, e.g. ranking.recency_rate=0 (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    config = settings(args.set)

    report = load(args.data)
    questions = sum(len(c.questions) for c in report.conversations)
    print(f"LoCoMo: {len(report.conversations)} conversations, "
          f"{sum(len(c.turns) for c in report.conversations)} turns, {questions} questions with evidence; "
          f"evidence ids repaired: {report.repaired_evidence}, skipped: {report.skipped_evidence}; "
          f"questions without usable evidence skipped: {report.skipped_questions}")
    embedder = make_embedder(args.embedder)
    methods = grid_methods(args.embedder) if args.grid else METHODS
    if args.methods:
        unknown = [m for m in args.methods.split(",") if m not in methods]
        if unknown:
            raise SystemExit(f"unknown methods {unknown}; choose from {', '.join(methods)}")
        methods = {m: methods[m] for m in args.methods.split(",")}
    results = evaluate(report, embedder, methods, args.conversations, conversations=SPLITS[args.split](report),
                       config=config)
    print(f"\nembedder: {embedder.name}; conversations: {args.split}; settings: {config or 'defaults'}\n")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(
            [{"method": r.name, "answerable": r.answerable.row(), "preference": r.preference.row(),
              "by_category": {c: s.row() for c, s in r.by_category.items()}} for r in results], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

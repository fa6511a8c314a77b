"""Seed 003's forgetting engine: raw messages move short -> mid -> long or are compressed into summaries.

One run, for one namespace, under the cross-process lock ``memory_forgetting:<namespace>``:

1. short tier, then mid tier (so a record old enough for both moves twice in one run,
   and a second run right after changes nothing):
2. candidates are live records of the tier older than its maximum age (7 / 90 days);
3. they are grouped by time bucket (1 day for short, 7 days for mid, counted from the
   Unix epoch in UTC) x dimension key (platform, channel, person, botId); groups of fewer
   than 3 are skipped (and, unlike in a plain "first 500" scan, never use up the budget);
   whole groups are taken, oldest bucket first, up to 500 records per tier per run;
4. each record gets the value score (``ranking.memory_value_score``); at or above the
   tier's threshold (0.65 / 0.45) it moves up a tier (its embedding document, which names
   the tier, is re-embedded); below it, it is compressed: the group's low scorers become
   one ``memory_summaries`` row (L1 from short, L2 from mid) written by the rule-based
   summariser, each linked to it (``summary_ref_id``) and it to them
   (``source_record_ids``); their ``archived_at`` is set, their verbatim text stays in
   ``raw_messages``, and their index chunks move to the core archive (reason
   ``compressed``): out of live search, still keyword-searchable. The summary is indexed
   as kind ``summary``. Pinned records are never compressed (``protect_pinned``).

Everything of a tier is written in one transaction, which first checks that the lock is
still this run's and skips any group whose records changed since they were read.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..clock import to_iso
from ..conversations.embedding_doc import collapse_whitespace, truncate_at_boundary, unix_ms
from ..conversations.incoming import searchable_text
from ..conversations.records import CHUNK_PREFIX, MemorySummary, Message, media_refs
from ..conversations.repository import MessageRepository
from ..conversations.service import Conversations
from ..embed import fnv1a_64
from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, Memory, NewMemory, check_namespace
from ..ranking import DAY_MS, ValueScore, memory_value_score
from ..summarize import Scored, extractive_pick, score_sentence, split_sentences, top_keywords
from .locks import RunLock, RunLocks

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = [
    "ForgettingEngine",
    "ForgettingReport",
    "TierReport",
    "RuleBasedMemorySummarizer",
    "SUMMARY_TIERS",
    "LOCK_PREFIX",
]

logger = logging.getLogger("openkoi.forgetting")

SUMMARY_TIERS = {"short": "L1", "mid": "L2", "long": "L3"}  # seed 003: the tier the material came from
LOCK_PREFIX = "memory_forgetting:"
_DIM_KEYS = ("platform", "channel", "person", "bot_id")
_DIM_WORDS = dict(zip(_DIM_KEYS, "on|in|with|via bot".split("|"), strict=True))  # "12 messages on slack in #ops"


@dataclass
class TierReport:
    """What one tier transition did (or, in a dry run, would do)."""

    tier: str
    next_tier: str
    threshold: float
    candidates: int = 0  # records read (members of the groups taken)
    groups: int = 0  # groups processed
    groups_skipped: int = 0  # groups under the minimum size
    groups_deferred: int = 0  # groups left for a later run (over max_candidates, or changed meanwhile)
    promoted: int = 0
    compressed: int = 0
    summaries: list[str] = field(default_factory=list)


@dataclass
class ForgettingReport:
    """The outcome of :meth:`ForgettingEngine.run`. ``status``: ok, skipped_locked, lost_lock or dry_run."""

    namespace: str
    status: str
    started_at: datetime
    finished_at: datetime | None = None
    tiers: list[TierReport] = field(default_factory=list)
    lock_token: str | None = None

    @property
    def promoted(self) -> dict[str, int]:
        return {f"{t.tier}->{t.next_tier}": t.promoted for t in self.tiers}

    @property
    def compressed(self) -> dict[str, int]:
        return {t.tier: t.compressed for t in self.tiers}

    @property
    def summary_ids(self) -> list[str]:
        return [s for t in self.tiers for s in t.summaries]

    @property
    def changed(self) -> bool:
        return self.status == "ok" and any(t.promoted or t.compressed for t in self.tiers)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["started_at"] = to_iso(self.started_at)
        out["finished_at"] = to_iso(self.finished_at)
        return out

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("tier", "threshold", "candidates", "groups", "skipped (&lt; min)",
                                                  "deferred", "promoted", "compressed", "summaries"))
        rows = "".join(
            f"<tr><td>{t.tier} &rarr; {t.next_tier}</td><td>{t.threshold:g}</td><td>{t.candidates}</td>"
            f"<td>{t.groups}</td><td>{t.groups_skipped}</td><td>{t.groups_deferred}</td><td>{t.promoted}</td>"
            f"<td>{t.compressed}</td><td>{len(t.summaries)}</td></tr>"
            for t in self.tiers
        )
        caption = f"forgetting {html.escape(self.namespace)}: {html.escape(self.status)}"
        return f"<table><caption>{caption}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


class RuleBasedMemorySummarizer:
    """Seed 003's ``RuleBasedMemorySummarizer``: key points, keywords, summary text, quality score.

    * keywords: :func:`shared_core.summarize.top_keywords` (importance keywords first), at most 10;
    * key points: the best sentences by :func:`~shared_core.summarize.score_sentence`, at most 5,
      in time order, each cut at a word boundary to 200 characters;
    * summary text: ``"<n> messages [on <platform>] [in <channel>] [with <person>] [via bot <bot>]
      from <first> to <last> UTC: <key points, each ending with a full stop>"``, at most 1000 characters;
    * quality: ``0.5 x min(1, key points / 3) + 0.5 x coverage``, where coverage is the share
      of the records that contain a keyword or gave a key point.
    """

    max_keywords = 10
    max_key_points = 5
    key_point_chars = 200
    summary_chars = 1000

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        summary_id: str,
        namespace: str,
        source_tier: str,
        window_start: datetime,
        window_end: datetime,
        dimensions: dict[str, Any],
        now: datetime,
    ) -> MemorySummary:
        if not messages:
            raise ValueError("a summary needs at least one message")
        texts = [searchable_text(m) or "" for m in messages]
        keywords = top_keywords(texts, self.max_keywords)
        candidates: list[Scored] = []
        owner: dict[int, int] = {}
        for i, text in enumerate(texts):
            for sentence in split_sentences(text):
                owner[len(candidates)] = i
                candidates.append(Scored(len(candidates), sentence, score_sentence(sentence, keywords)))
        picked = extractive_pick(candidates, token_budget=10_000, max_items=self.max_key_points)
        key_points = [truncate_at_boundary(collapse_whitespace(c.text), self.key_point_chars) for c in picked]
        contributed = {owner[c.index] for c in picked}
        folded = [t.casefold() for t in texts]
        covered = sum(1 for i, t in enumerate(folded) if i in contributed or any(k in t for k in keywords))
        quality = round(0.5 * min(1.0, len(key_points) / 3) + 0.5 * covered / len(messages), 4)
        first, last = messages[0].sent_at, messages[-1].sent_at
        header = f"{len(messages)} messages{_where(dimensions)} from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC"
        text = f"{header}: {' '.join(_sentence(k) for k in key_points)}" if key_points else f"{header}."
        return MemorySummary(
            summary_id=summary_id, namespace=namespace, summary_tier=SUMMARY_TIERS[source_tier],
            source_tier=source_tier, start_timestamp=window_start, end_timestamp=window_end,
            message_count=len(messages), source_record_ids=[m.id for m in messages], key_points=key_points,
            keywords=keywords, keywords_text=" ".join(keywords), summary_text=truncate_at_boundary(text, self.summary_chars),
            dimensions={"platform": dimensions.get("platform"), "channel": dimensions.get("channel"),
                        "person": dimensions.get("person"), "botId": dimensions.get("bot_id")},
            quality_score=quality, created_at=now, updated_at=now,
        )


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _where(dimensions: dict[str, Any]) -> str:
    parts = []
    for key in _DIM_KEYS:
        if dimensions.get(key):
            parts.append(f" {_DIM_WORDS[key]} {dimensions[key]}")
    return "".join(parts)


@dataclass
class _Group:
    bucket: int
    dims: tuple[str | None, str | None, str | None, str | None]
    members: list[Message]
    chunks: dict[str | None, Memory]  # message_id (the chunk's owner) -> live index chunk
    keep: list[tuple[Message, ValueScore]] = field(default_factory=list)
    squash: list[tuple[Message, ValueScore]] = field(default_factory=list)
    summary: MemorySummary | None = None
    summary_chunk: Any = None
    promoted_docs: dict[str, tuple[str, Any]] = field(default_factory=dict)  # message_id -> (doc, vector)


class _LockLost(Exception):
    pass


class ForgettingEngine:
    """Runs seed 003's forgetting over a namespace's raw messages; reached as ``store.forgetting``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.locks = RunLocks(kernel.backend, kernel.clock)
        self.summarizer = RuleBasedMemorySummarizer()

    def erase(self, namespace: str) -> None:
        """Remove the namespace's forgetting lock (``erase_namespace``)."""
        self.locks.erase(LOCK_PREFIX + namespace)

    @property
    def _repo(self) -> MessageRepository:
        return self.kernel.service(Conversations).repository

    # -- scoring -------------------------------------------------------------------------------

    def value(self, message: Message | str, *, now: datetime | None = None) -> ValueScore:
        """Seed 003's value score of a message (or message id) now, with its parts."""
        if isinstance(message, str):
            found = self._repo.message(message)
            if found is None:
                raise NotFoundError(f"no message {message!r}")
            message = found
        cfg = self.kernel.config.forgetting
        now = now or self.kernel.clock.now()
        return memory_value_score(
            age_ms=unix_ms(now) - unix_ms(message.sent_at),  # type: ignore[arg-type]
            access_count=message.access_count, importance=message.importance,
            text=searchable_text(message) or "", has_media=bool(media_refs(message.attachments, message.content_blocks)),
            pinned=message.pinned, recency_weight=cfg.recency_weight, access_weight=cfg.access_weight,
            importance_weight=cfg.importance_weight, media_weight=cfg.media_weight, pinned_boost=cfg.pinned_boost,
            horizon_days=cfg.recency_horizon_days, media_with=cfg.media_score_with,
            media_without=cfg.media_score_without, keywords=cfg.importance_keywords,
            hits_divisor=cfg.keyword_hits_divisor,
        )

    # -- running -------------------------------------------------------------------------------

    def run(self, namespace: str = DEFAULT_NAMESPACE, *, dry_run: bool = False) -> ForgettingReport:
        """One forgetting cycle for ``namespace``; a second concurrent run returns ``skipped_locked``.

        ``dry_run=True`` reports what would happen without taking the lock or writing.
        Running twice in a row changes nothing the second time, unless the first stopped
        at ``max_candidates``.
        """
        check_namespace(namespace)
        cfg = self.kernel.config.forgetting
        started = self.kernel.clock.now()
        report = ForgettingReport(namespace, "dry_run" if dry_run else "ok", started)
        lock: RunLock | None = None
        if not dry_run:
            lock = self.locks.acquire(LOCK_PREFIX + namespace, cfg.lock_ttl_ms)
            if lock is None:
                report.status = "skipped_locked"
                report.finished_at = self.kernel.clock.now()
                return report
            report.lock_token = lock.token
        try:
            steps = (("short", "mid", cfg.short_to_mid_threshold, cfg.short_max_age_days, cfg.short_group_window_days),
                     ("mid", "long", cfg.mid_to_long_threshold, cfg.mid_max_age_days, cfg.mid_group_window_days))
            for tier, next_tier, threshold, max_age, window in steps:
                tier_report = TierReport(tier, next_tier, threshold)
                report.tiers.append(tier_report)
                self._transition(namespace, tier_report, max_age, window, lock, started)
                if lock is not None and not self.locks.refresh(lock, cfg.lock_ttl_ms):
                    raise _LockLost
        except _LockLost:
            report.status = "lost_lock"
            logger.warning("forgetting run for %r lost its lock (it outlived the %d ms TTL); stopped",
                           namespace, cfg.lock_ttl_ms)
        finally:
            if lock is not None and not self.kernel.backend.closed:
                self.locks.release(lock)
        report.finished_at = self.kernel.clock.now()
        return report

    def run_all(self, *, dry_run: bool = False) -> list[ForgettingReport]:
        """:meth:`run` for every namespace that has messages."""
        with self.kernel.session():
            namespaces = self._repo.namespaces_with_messages()
        return [self.run(ns, dry_run=dry_run) for ns in namespaces]

    def _transition(self, namespace: str, report: TierReport, max_age_days: float, window_days: float,
                    lock: RunLock | None, now: datetime) -> None:
        cutoff = now - timedelta(days=max_age_days)
        window_ms = max(1, round(window_days * DAY_MS))
        groups = self._select(namespace, report, cutoff, window_ms)
        for group in groups:
            self._plan(group, report, namespace, window_ms, now)
        if lock is None:  # dry run
            report.groups = len(groups)
            report.promoted = sum(len(g.keep) for g in groups)
            report.compressed = sum(len(g.squash) for g in groups)
            report.summaries = [g.summary.summary_id for g in groups if g.summary is not None]
            return
        self._embed(groups, report.next_tier)
        with self.kernel.session(write=True):
            if not self.locks.holds(lock):
                raise _LockLost
            for group in groups:
                if self._write(group, report, now):
                    report.groups += 1
                else:
                    report.groups_deferred += 1

    def _select(self, namespace: str, report: TierReport, cutoff: datetime, window_ms: int) -> list[_Group]:
        """Whole groups, oldest bucket first, up to ``max_candidates`` records (a first group larger
        than that is cut to its oldest records)."""
        cfg = self.kernel.config.forgetting
        with self.kernel.session():
            rows = self._repo.forgetting_groups(namespace, report.tier, cutoff, window_ms, 1)
            big = [r for r in rows if r[2] >= cfg.min_group_size]
            report.groups_skipped = len(rows) - len(big)
            groups: list[_Group] = []
            budget = cfg.max_candidates
            for bucket, dims, size in big:
                if budget <= 0 or (size > budget and groups):
                    report.groups_deferred += 1
                    continue
                members = self._repo.group_members(namespace, report.tier, cutoff, window_ms, bucket, dims,
                                                   min(size, budget))
                if len(members) < cfg.min_group_size:
                    continue
                ids = [CHUNK_PREFIX + m.message_id for m in members]
                chunks = {c.owner_id: c for c in self.kernel.memories.get_many(ids)}
                groups.append(_Group(bucket, dims, members, chunks))
                budget -= len(members)
                report.candidates += len(members)
            return groups

    def _plan(self, group: _Group, report: TierReport, namespace: str, window_ms: int, now: datetime) -> None:
        cfg = self.kernel.config.forgetting
        for message in group.members:
            score = self.value(message, now=now)
            if score.total >= report.threshold or (cfg.protect_pinned and message.pinned):
                group.keep.append((message, score))
            else:
                group.squash.append((message, score))
        if group.squash:
            squashed = [m for m, _ in group.squash]
            dims = dict(zip(_DIM_KEYS, group.dims, strict=False))
            payload = "\x1f".join([namespace, report.tier, str(group.bucket), json.dumps(group.dims),
                                   ",".join(sorted(m.message_id for m in squashed))])
            start = datetime.fromtimestamp(group.bucket * window_ms / 1000, tz=timezone.utc)
            end = datetime.fromtimestamp(((group.bucket + 1) * window_ms - 1) / 1000, tz=timezone.utc)
            group.summary = self.summarizer.summarize(
                squashed, summary_id=f"ms_{fnv1a_64(payload):016x}", namespace=namespace, source_tier=report.tier,
                window_start=start, window_end=end, dimensions=dims, now=now,
            )

    def _embed(self, groups: Sequence[_Group], next_tier: str) -> None:
        """Embed outside the write transaction: promoted records' new documents and the summaries."""
        conversations = self.kernel.service(Conversations)
        docs: list[tuple[_Group, str, str]] = []
        for group in groups:
            for message, _ in group.keep:
                chunk = group.chunks.get(message.message_id)
                if chunk is not None:
                    docs.append((group, message.message_id, conversations.embedding_document(
                        message, text=chunk.text, tier=next_tier)))
        if docs:
            vectors = self.kernel.embed([d for _, _, d in docs])
            for (group, message_id, doc), vector in zip(docs, vectors, strict=False):
                group.promoted_docs[message_id] = (doc, vector)
        summaries = [g for g in groups if g.summary is not None]
        if summaries and getattr(self.kernel.embedder, "embeds_text", True):  # else: summaries stay unindexed
            prepared = self.kernel.memories.prepare([_summary_chunk(g.summary) for g in summaries])  # type: ignore[arg-type]
            for group, prepared_chunk in zip(summaries, prepared, strict=False):
                group.summary_chunk = prepared_chunk

    def _write(self, group: _Group, report: TierReport, now: datetime) -> bool:
        """Inside the tier's transaction; False (nothing written) when the group changed since it was read."""
        current = {m.id: m for m in self._repo.messages_by_rowids([m.id for m in group.members])}
        for message in group.members:
            fresh = current.get(message.id)
            if fresh is None or fresh.tier != report.tier or fresh.archived_at is not None \
                    or fresh.pinned != message.pinned or fresh.summary_ref_id != message.summary_ref_id:
                return False
        memories = self.kernel.memories
        if group.keep:
            self._repo.promote([m.id for m, _ in group.keep], report.next_tier)
            for message, _ in group.keep:
                chunk = memories.get_row(CHUNK_PREFIX + message.message_id)
                if chunk is not None and message.message_id in group.promoted_docs:
                    doc, vector = group.promoted_docs[message.message_id]
                    memories.update(chunk, vector=vector, embedding_text=doc, refresh_hit=False)
            report.promoted += len(group.keep)
        if group.summary is not None:
            squashed = [m for m, _ in group.squash]
            self._repo.insert_summary(group.summary)
            if group.summary_chunk is not None:
                memories.write(group.summary_chunk, dedup=False)
            self._repo.compress([m.id for m in squashed], group.summary.summary_id, now)
            chunks = memories.get_many([CHUNK_PREFIX + m.message_id for m in squashed])
            if chunks:
                self.kernel.archive.move([c.rowid for c in chunks], "compressed")
            report.compressed += len(squashed)
            report.summaries.append(group.summary.summary_id)
        return True

    # -- reading summaries ---------------------------------------------------------------------

    def summaries(
        self,
        namespace: str = DEFAULT_NAMESPACE,
        *,
        tier: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[MemorySummary]:
        """The namespace's memory summaries, newest window first (``tier``: L1, L2 or L3)."""
        check_namespace(namespace)
        if tier is not None and tier not in ("L1", "L2", "L3"):
            raise ValueError(f"summary tier must be L1, L2 or L3, got {tier!r}")
        with self.kernel.session():
            return self._repo.summaries(namespace, tier=tier, since=since, until=until, limit=limit)

    def summary(self, summary_id: str) -> MemorySummary:
        with self.kernel.session():
            found = self._repo.summary(summary_id)
            if found is None:
                raise NotFoundError(f"no memory summary {summary_id!r}")
            return found

    def sources(self, summary_id: str) -> list[Message]:
        """The raw messages a summary was made from (verbatim, ``archived_at`` set)."""
        summary = self.summary(summary_id)
        with self.kernel.session():
            return self._repo.messages_by_rowids(summary.source_record_ids)

    def lock(self, namespace: str = DEFAULT_NAMESPACE) -> Any:
        """``with store.forgetting.lock(ns) as held:`` hold the run lock (``held`` is None if taken)."""
        check_namespace(namespace)
        return self.locks.hold(LOCK_PREFIX + namespace, self.kernel.config.forgetting.lock_ttl_ms)


def _summary_chunk(summary: MemorySummary) -> NewMemory:
    metadata = {
        "summary_tier": summary.summary_tier, "source_tier": summary.source_tier,
        "message_count": summary.message_count, "start_timestamp": to_iso(summary.start_timestamp),
        "end_timestamp": to_iso(summary.end_timestamp), "quality_score": summary.quality_score,
        **{k: v for k, v in summary.dimensions.items() if v is not None},
    }
    return NewMemory(
        text=summary.summary_text, id=summary.summary_id, kind="summary", namespace=summary.namespace,
        tags=summary.keywords, source="forgetting", metadata=metadata, owner_id=summary.summary_id,
        created_at=summary.end_timestamp,
    )

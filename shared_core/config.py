"""Settings: ``config.toml`` + environment + keyword overrides, every seed constant named.

Where a value comes from a seed document, the comment names the seed (000 OpenKoi,
001 OpenMotoko, 002 Koshi, 003 OpenLoomi, 004 the agent fleet). Precedence, lowest
first: defaults, the TOML file (``OPENKOI_CONFIG`` or ``~/.openkoi/config.toml``),
then the ``overrides`` mapping given in code.

>>> cfg = Config.load(overrides={"ranking": {"score_weight": 0.3}})
>>> cfg.ranking.score_weight
0.3
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from .errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "Config",
    "ModelsConfig",
    "MemoryConfig",
    "RankingConfig",
    "SearchConfig",
    "ForgettingConfig",
    "InsightsConfig",
    "RecallConfig",
    "ContextConfig",
    "KnowledgeBaseConfig",
    "LinksConfig",
    "LearningConfig",
    "UsageConfig",
    "ConversationsConfig",
    "WorkspaceConfig",
    "DatabaseConfig",
    "ServerConfig",
    "default_data_dir",
    "default_config_path",
    "parse_size",
]

APP_NAME = "openkoi"


def default_data_dir() -> Path:
    """``$OPENKOI_DATA``, else the XDG data dir (``~/.local/share/openkoi`` on Linux)."""
    env = os.environ.get("OPENKOI_DATA")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_config_path() -> Path:
    """``$OPENKOI_CONFIG``, else ``~/.openkoi/config.toml`` (seed 000)."""
    env = os.environ.get("OPENKOI_CONFIG")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".openkoi" / "config.toml"


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6,
          "mib": 2**20, "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


def parse_size(value: int | float | str) -> int:
    """Bytes from ``100MB``, ``1.5GiB`` or a plain number of bytes."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ConfigError(f"size must not be negative, got {value}")
        return int(value)
    match = _SIZE.match(str(value))
    if not match or (match.group(2) or "").lower() not in _UNITS:
        raise ConfigError(f"cannot read {value!r} as a size; write e.g. 100MB, 512KiB or 1048576")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])


@dataclass
class ModelsConfig:
    """Which embedder to use when none is passed in code (seed 000 ``[models]``)."""

    embedder: str = "static"  # "static" (the table shipped), "hashing" or "sentence-transformers/<model>"


@dataclass
class MemoryConfig:
    """Feedback, dedup, decay and pruning of memories."""

    reinforce_weight: float = 3.0  # seed 002: reinforce adds +3 to score
    demote_weight: float = 1.0  # seed 002: demote subtracts 1
    fact_dedup_threshold: float = 0.9  # seed 001: cosine > 0.9 is a duplicate fact
    learning_dedup_threshold: float = 0.8  # seed 000: similarity > 0.8 reinforces a learning
    learning_reinforce_bump: float = 0.1  # confidence added when a learning is reinforced (capped at 1.0)
    learning_decay_rate: float = 0.05  # seed 000: per week
    learning_prune_threshold: float = 0.1  # seed 000: below this a learning is pruned
    learning_initial_confidence: float = 0.8  # seed 000: its decay timeline starts at 0.80
    fact_versioning: bool = True  # detect that a new fact supersedes an old one on add (beyond the seeds)
    fact_version_near_threshold: float = -1.0  # model candidates: similarity above this (< 0: embedder's floor)
    task_journal: bool = True  # write-ahead journal of unfinished tasks, so a crash loses nothing
    task_stale_hours: float = 24.0  # a journal untouched this long belongs to a dead process
    archive_pruned: bool = True  # DESIGN.md: pruning archives unless configured to delete
    max_size: int = 100 * 10**6  # seed 002: maxSize 100MB
    prune_percent: float = 1.0  # seed 002: archive the bottom 1 %
    # what size pruning may archive: agent-written memories. Documents, vector-store nodes and
    # framework items have lifecycles of their own; learnings decay by their own rule (seed 000).
    prune_kinds: tuple[str, ...] = ("fact", "note", "episode", "message", "summary", "insight")
    prune_schedule: str = "0 4 * * *"  # seed 002: 4am daily
    schedule_timezone: str = "local"  # the zone cron schedules are read in: "local", "UTC" or an IANA name
    # seed 004's auto-categorisation: a fact added without a category gets one (docs/context.md)
    auto_categorize: bool = True
    categorizer: str = "rules"  # rules (the keyword map) | model (store.text_model, rules as fallback)
    category_keywords: dict = field(default_factory=dict)  # {} = the built-in map; a table replaces it
    # facts no rule matches: "" leaves them uncategorised (found by the flat fallback), or e.g. "general"
    default_category: str = ""

    def __post_init__(self) -> None:
        self.max_size = parse_size(self.max_size)
        if self.categorizer not in {"rules", "model"}:
            raise ConfigError(f"memory.categorizer {self.categorizer!r} is unknown; use rules or model")
        if not isinstance(self.category_keywords, dict) or not all(
            isinstance(k, str) and k.strip() and isinstance(v, (list, tuple)) and all(isinstance(w, str) for w in v)
            for k, v in self.category_keywords.items()
        ):
            raise ConfigError('memory.category_keywords must be a table of category = ["keyword", ...]')
        from .lifecycle.cron import CronSchedule, resolve_timezone

        try:
            CronSchedule.parse(self.prune_schedule)
            resolve_timezone(self.schedule_timezone)
        except ValueError as exc:
            raise ConfigError(f"memory: {exc}") from None
        for name in ("fact_dedup_threshold", "learning_dedup_threshold", "learning_prune_threshold",
                     "learning_initial_confidence", "learning_reinforce_bump"):
            _check_range(self, name, 0.0, 1.0)
        _check_range(self, "prune_percent", 0.0, 100.0)
        if self.reinforce_weight < 0 or self.demote_weight < 0:
            raise ConfigError("memory.reinforce_weight and memory.demote_weight are magnitudes; use values >= 0")
        if self.learning_decay_rate < 0:
            raise ConfigError("memory.learning_decay_rate is a rate per week; use a value >= 0")
        if self.fact_version_near_threshold > 1.0:
            raise ConfigError("memory.fact_version_near_threshold must be at most 1 (or negative for the embedder's floor)")
        if self.task_stale_hours <= 0:
            raise ConfigError("memory.task_stale_hours must be positive")


@dataclass
class RankingConfig:
    """Seed 002's rank: relevance x exp(score x score_weight) x 1/(1 + days x recency_rate)."""

    score_weight: float = 0.2
    recency_rate: float = 0.01  # per day since last hit (or creation)
    # seed 001 gives no numbers for these; ours are documented in docs/learning.md
    bre_magnitude_penalty: float = 0.2  # BRE: cosine x confidence / magnitude ** penalty
    episode_importance_weight: float = 0.5  # episodes: relevance x (1 - w + w x importance)
    procedure_usage_weight: float = 0.1  # procedures: relevance x (1 + w x ln(1 + uses))


@dataclass
class SearchConfig:
    """Hybrid search: FTS5 BM25 + vector KNN, fused (see docs/search.md for the measurements)."""

    fusion: str = "keyword_first"  # keyword_first | weighted | rrf | keyword | vector
    vector_weight: float = -1.0  # < 0: use the embedder's own recommendation
    similarity_floor: float = -1.0  # < 0: use the embedder's own recommendation
    rrf_k: int = 60
    keyword_scale: str = "best"  # best | full_match: what BM25 is divided by before fusion (docs/search.md)
    candidates: int = 50  # per side, at least 5 x limit
    text_weight: float = 1.0  # BM25 column weights (seed 002's FTS table: content, tags, source)
    tags_weight: float = 2.0
    source_weight: float = 0.5
    max_df_ratio: float = 0.05  # query terms in more than this share of the file's and the searched scope's rows ...
    df_gate_min_rows: int = 2000  # ... and in more rows than this (in both) are dropped: a speed measure
    vector_index: str = "auto"  # auto | mirror | sqlite-vec
    exact_scan_rows: int = 20000  # below this many rows the mirror scans exact float vectors
    rerank_pool: int = 256  # binary-quantised candidates reranked exactly (at least 20 x k)
    parallel_scan_rows: int = 2000  # mirrors this big scan on a worker thread while FTS5 ranks (0: never)
    track_access: bool = True  # seed 003: access_count += 1, last_access_at = now on return
    default_limit: int = 10

    def __post_init__(self) -> None:
        if self.fusion not in {"keyword_first", "weighted", "rrf", "keyword", "vector"}:
            raise ConfigError(
                f"search.fusion {self.fusion!r} is unknown; use keyword_first, weighted, rrf, keyword or vector"
            )
        if self.keyword_scale not in {"best", "full_match"}:
            raise ConfigError(f"search.keyword_scale {self.keyword_scale!r} is unknown; use best or full_match")
        if self.vector_index not in {"auto", "mirror", "sqlite-vec"}:
            raise ConfigError(f"search.vector_index {self.vector_index!r} is unknown; use auto, mirror or sqlite-vec")
        _check_range(self, "max_df_ratio", 0.0, 1.0)
        if self.candidates < 1 or self.rerank_pool < 1:
            raise ConfigError("search.candidates and search.rerank_pool must be positive")
        if self.parallel_scan_rows < 0:
            raise ConfigError("search.parallel_scan_rows must not be negative (0 turns the worker thread off)")


@dataclass
class ForgettingConfig:
    """Seed 003's forgetting engine: value score, tier thresholds, grouping, lock."""

    recency_weight: float = 0.35
    access_weight: float = 0.30
    importance_weight: float = 0.25
    media_weight: float = 0.10
    pinned_boost: float = 0.3
    recency_horizon_days: float = 180.0
    media_score_with: float = 0.7
    media_score_without: float = 0.25
    keyword_hits_divisor: float = 4.0
    importance_keywords: tuple[str, ...] = (
        "deadline", "todo", "urgent", "risk", "decision", "blocker",
        "meeting", "action item", "milestone", "bug", "incident", "follow up",
    )
    short_to_mid_threshold: float = 0.65
    short_max_age_days: float = 7.0
    mid_to_long_threshold: float = 0.45
    mid_max_age_days: float = 90.0
    short_group_window_days: float = 1.0
    mid_group_window_days: float = 7.0
    min_group_size: int = 3
    max_candidates: int = 500
    lock_ttl_ms: int = 60_000
    # seed 003's query flow uses 0.7, a value for real sentence embedders; < 0 takes the
    # embedder's own threshold (EmbedderProfile.kb_threshold: 0.7 sentence models, 0.35 hashing)
    vector_threshold: float = -1.0
    scan_limit_factor: int = 10  # seed 003: scanLimit = limit * 10
    min_raw_results_without_fallback: int = 3  # seed 003: minRawResultsWithoutFallback (value not given)
    protect_pinned: bool = True  # beyond the seed: a pinned record is never compressed, it moves up a tier

    def __post_init__(self) -> None:
        for name in ("short_to_mid_threshold", "mid_to_long_threshold"):
            _check_range(self, name, 0.0, 1.0)
        if self.vector_threshold > 1.0:
            raise ConfigError("forgetting.vector_threshold is a cosine similarity: use a value <= 1 (or < 0 for auto)")
        for name in ("short_max_age_days", "mid_max_age_days", "short_group_window_days", "mid_group_window_days",
                     "recency_horizon_days", "keyword_hits_divisor"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"forgetting.{name} must be greater than 0, got {getattr(self, name)}")
        if self.min_group_size < 1 or self.max_candidates < 1 or self.scan_limit_factor < 1:
            raise ConfigError("forgetting.min_group_size, max_candidates and scan_limit_factor must be at least 1")
        if self.lock_ttl_ms < 1:
            raise ConfigError("forgetting.lock_ttl_ms must be a positive number of milliseconds")


IMPORTANCE_LEVELS = ("critical", "high", "medium", "low")  # seed 003's insight importance
URGENCY_LEVELS = ("immediate", "urgent", "medium", "low")  # seed 003's insight urgency


@dataclass
class InsightsConfig:
    """Seed 003's insight value score and weight adjustment (docs/lifecycle.md, "Insights").

    Where the seed names a number it is the default here; where it leaves one open
    (the importance/urgency scales, the frequency maximum, freshness past 30 days, how
    often decay applies) the default is ours and documented.
    """

    # valueScore = 0.45 frequency + 0.25 freshness + 0.20 relevance + 0.10 favourite (seed 003)
    frequency_weight: float = 0.45
    freshness_weight: float = 0.25
    relevance_weight: float = 0.20
    favorite_weight: float = 0.10
    frequency_max_accesses: int = 50  # ours: log1p(count) / log1p(50) reaches 1.0 at 50 accesses
    frequency_window_days: float = 30.0  # seed 003: the frequency counts accessCount30d
    # freshness by age since the insight last changed: <1 day 1.0, <7 days 0.8, <30 days 0.45 (seed 003)
    freshness_bands: tuple = ((1.0, 1.0), (7.0, 0.8), (30.0, 0.45))
    freshness_past_30_days: float = 0.1  # ours: the seed leaves freshness past 30 days open
    # relevance = importance x 0.7 + urgency x 0.3 (seed 003); the scales are ours
    relevance_importance_weight: float = 0.7
    relevance_urgency_weight: float = 0.3
    importance_scale: dict = field(default_factory=lambda: {"critical": 1.0, "high": 0.75, "medium": 0.5, "low": 0.25})
    urgency_scale: dict = field(default_factory=lambda: {"immediate": 1.0, "urgent": 0.75, "medium": 0.5, "low": 0.25})
    # weight adjustment (seed 003)
    favorite_multiplier: float = 1.5
    favorite_days: float = 7.0
    view_multiplier: float = 1.1
    view_hours: float = 24.0
    view_min_inactive_days: float = 1.0
    weight_cap: float = 5.0
    weight_floor: float = 0.3
    # inactivity bands: from 7 days 0.95, from 14 days 0.85, from 30 days 0.7 (seed 003)
    decay_bands: tuple = ((7.0, 0.95), (14.0, 0.85), (30.0, 0.7))
    decay_period_days: float = 1.0  # ours: a band's rate applies once per day of inactivity (a daily job)
    trend_ratio: float = 0.25  # seed 003: rising when recent 7d >= previous 7d + 25 %
    trend_window_days: float = 7.0
    active_window_days: float = 30.0  # seed 003: active when accessCount30d > 0
    access_log_days: float = 30.0  # access events older than this are dropped by maintain()
    extract_prompt_tokens: int = 3000  # messages per model call, by token count
    extract_max_tokens: int = 800  # the model's answer budget
    extract_max_insights: int = 10  # per model call

    def __post_init__(self) -> None:
        weights = (self.frequency_weight, self.freshness_weight, self.relevance_weight, self.favorite_weight)
        if any(w < 0 for w in weights):
            raise ConfigError("insights: the value-score weights must not be negative")
        if self.frequency_max_accesses < 1:
            raise ConfigError("insights.frequency_max_accesses must be at least 1")
        self.freshness_bands = _bands(self.freshness_bands, "freshness_bands")
        self.decay_bands = _bands(self.decay_bands, "decay_bands")
        for name, levels in (("importance_scale", IMPORTANCE_LEVELS), ("urgency_scale", URGENCY_LEVELS)):
            scale = getattr(self, name)
            if not isinstance(scale, dict) or not scale:
                raise ConfigError(f"insights.{name} must be a table of level = value, e.g. {{high = 0.75}}")
            for level, value in scale.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                    raise ConfigError(f"insights.{name}.{level} must be a number between 0 and 1, got {value!r}")
            scale = {str(k).lower(): float(v) for k, v in scale.items()}
            missing = [level for level in levels if level not in scale]
            if missing:
                raise ConfigError(f"insights.{name} needs a value for {', '.join(missing)} (extra levels are fine)")
            setattr(self, name, scale)
        if self.weight_floor < 0 or self.weight_cap < self.weight_floor:
            raise ConfigError("insights: need 0 <= weight_floor <= weight_cap")
        for name in ("favorite_multiplier", "view_multiplier"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"insights.{name} must be positive")
        for name in ("decay_period_days", "trend_window_days", "active_window_days", "frequency_window_days"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"insights.{name} must be positive")
        if self.access_log_days < max(self.frequency_window_days, self.active_window_days, 2 * self.trend_window_days):
            raise ConfigError(
                "insights.access_log_days must cover the frequency and active windows and two trend windows"
            )
        if self.trend_ratio < 0:
            raise ConfigError("insights.trend_ratio must not be negative")


def _bands(value: Any, name: str) -> tuple[tuple[float, float], ...]:
    """``[[days, value], ...]`` from TOML or code, checked and sorted by days."""
    try:
        bands = tuple((float(days), float(rate)) for days, rate in value)
    except (TypeError, ValueError):
        raise ConfigError(f"insights.{name} must be a list of [days, value] pairs, got {value!r}") from None
    if not bands or any(days < 0 or rate < 0 for days, rate in bands):
        raise ConfigError(f"insights.{name} needs at least one [days, value] pair with non-negative numbers")
    return tuple(sorted(bands))


@dataclass
class RecallConfig:
    """Seed 000's token-budgeted recall priorities."""

    anti_patterns: int = 5
    skills: int = 3
    learnings: int = 5
    similar_tasks: int = 3
    budget_fraction: float = 0.1  # recall gets 1/10 of the task budget
    task_token_budget: int = 200_000
    similar_tasks_min_remaining: float = 0.5  # seed 000: similar tasks only if more than half the budget remains
    category_boost: float = 0.5  # a learning from the task's own category ranks as if this much more relevant
    candidates: int = 20  # learnings/tasks considered per priority before ranking

    def __post_init__(self) -> None:
        _check_range(self, "budget_fraction", 0.0, 1.0)
        _check_range(self, "similar_tasks_min_remaining", 0.0, 1.0)
        for name in ("anti_patterns", "skills", "learnings", "similar_tasks", "task_token_budget", "candidates"):
            if getattr(self, name) < 0:
                raise ConfigError(f"recall.{name} must not be negative")


@dataclass
class LearningConfig:
    """Seed 000's learning extraction: the rule thresholds and the text-model tier."""

    regression_drop: float = 0.1  # a score drop above this between iterations is an AntiPattern
    diminishing_min_iterations: int = 3  # diminishing returns needs 3+ iterations ...
    diminishing_gain: float = 0.02  # ... and the last iteration improving by less than this
    blocker_severity: str = "blocker"  # the finding severity that counts as a blocker
    blocker_min_count: int = 2  # same dimension, 2+ blockers across iterations: AntiPattern
    model_min_cycles: int = 2  # text-model extraction only when cycles >= 2 ...
    model_min_findings: int = 3  # ... and some evaluation produced >= 3 findings
    model_max_learnings: int = 3  # 1-3 single-sentence learnings
    model_max_tokens: int = 500  # ~500-token budget (answer; the summary in the prompt is cut to it too)
    default_category: str = "general"  # skill effectiveness needs a category; tasks without one use this

    def __post_init__(self) -> None:
        if self.regression_drop < 0 or self.diminishing_gain < 0:
            raise ConfigError("learning.regression_drop and learning.diminishing_gain must not be negative")
        for name in ("diminishing_min_iterations", "blocker_min_count", "model_min_cycles", "model_min_findings",
                     "model_max_learnings", "model_max_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"learning.{name} must be at least 1")
        if not self.default_category.strip():
            raise ConfigError("learning.default_category must not be empty")


@dataclass
class UsageConfig:
    """Seed 000's usage events and pattern mining (the seed names the tables, not the numbers)."""

    timezone: str = "UTC"  # day / hour / day_of_week are computed in this zone
    log_tasks: bool = True  # every flushed task logs a usage event
    min_samples: int = 3  # a pattern needs this many occurrences
    min_confidence: float = 0.5  # ... and this confidence to be recorded
    propose_confidence: float = 0.7  # a pattern this confident proposes a SKILL.md ...
    propose_min_samples: int = 5  # ... once seen this many times
    window_days: int = 90  # mine events from the last 90 days

    def __post_init__(self) -> None:
        _check_range(self, "min_confidence", 0.0, 1.0)
        _check_range(self, "propose_confidence", 0.0, 1.0)
        if self.min_samples < 1 or self.propose_min_samples < 1 or self.window_days < 1:
            raise ConfigError("usage.min_samples, usage.propose_min_samples and usage.window_days must be at least 1")
        try:
            from zoneinfo import ZoneInfo

            ZoneInfo(self.timezone)
        except Exception:
            raise ConfigError(f"usage.timezone {self.timezone!r} is not a known time zone; use e.g. UTC or Europe/Berlin") from None


# the prompt addendum's sections, in the order they are filled, with their default shares of the budget
ADDENDUM_SHARES = {
    "system_files": 0.30, "working_summary": 0.15, "salient_facts": 0.10, "known_facts": 0.10, "relevant_facts": 0.15,
    "learnings": 0.20, "episodes": 0.10,
}


@dataclass
class ContextConfig:
    """Working window, compaction presets and the prompt addendum (seeds 000, 001, 004); docs/context.md."""

    working_keep: int = 20  # seed 001
    working_summarize_after: int = 40  # seed 001
    flush_at: float = 0.6  # seed 004: proactive flush at 60 % of the window
    compact_at: float = 0.7  # seed 004: compaction at 70 % of the window
    keep_last: int = 4  # seed 004: summary + the last 4 messages
    summary_tokens: int = 500  # seed 000
    split_ratio: float = 2 / 3  # seed 000: the older two-thirds are compacted, the recent third kept
    window_tokens: int = 200_000  # the model's context window (ours: seed 000's default token budget)
    max_tokens: int = 0  # seed 000's trigger: compact past max_tokens; 0 = compact_at x window_tokens
    preset: str = "openkoi"  # the ContextManager policy when none is named: openkoi | openmotoko | fleet
    message_overhead_tokens: int = 4  # ours: role and separators of one chat message
    keep_system: bool = True  # leading system messages (the agent's prompt) are never compacted
    max_facts: int = 20  # facts kept from one extraction (a model's list is cut to this)
    extract_batch_tokens: int = 8000  # ours: messages per model call when reading a long conversation for facts
    fact_max_chars: int = 300  # longer "facts" are refused (a fact is one sentence)
    # salience (seed 004): ln(1 + accesses) x exp(0.2 x score) x 0.5 ** (days since use / half-life)
    salience_threshold: float = 1.5  # ours: e.g. 4 accesses today (1.61), or 20 a half-life ago (1.52)
    salience_half_life_days: float = 7.0  # ours
    salient_facts: int = 5  # high-salience facts surfaced without a query, at most
    known_facts: int = 10  # the namespace's most salient other facts, always in the prompt (issue 21), at most
    relevant_facts: int = 5  # query-relevant facts (three-tier retrieval), at most
    category_min_results: int = 3  # fewer scoped facts than this: the flat fallback fills up (seed 004)
    max_query_categories: int = 3  # categories searched for one query, at most
    recent_episodes: int = 3  # seed 001: recent episodes (and other sessions' summaries), at most
    learnings_entries: int = 5  # newest entries of each learnings file (seed 004: auto-injected), at most
    # the addendum's budget (default: recall.budget_fraction x recall.task_token_budget, seed 000) is
    # filled in this order, each section first up to its share, then what is left in the same order
    # (a table may name only some sections; the others keep these defaults)
    addendum_shares: dict = field(default_factory=lambda: dict(ADDENDUM_SHARES))

    def __post_init__(self) -> None:
        if self.working_keep < 1 or self.working_summarize_after <= self.working_keep:
            raise ConfigError(
                "context.working_keep must be at least 1 and context.working_summarize_after larger than it "
                f"(seed 001: 20 and 40), got {self.working_keep} and {self.working_summarize_after}"
            )
        if self.summary_tokens < 1:
            raise ConfigError("context.summary_tokens must be at least 1")
        if not 0.0 < self.flush_at <= 1.0 or not 0.0 < self.compact_at <= 1.0:
            raise ConfigError(f"context.flush_at and context.compact_at are fractions of the window in (0, 1], "
                              f"got {self.flush_at} and {self.compact_at} (seed 004: 0.6 and 0.7)")
        if not 0.0 < self.split_ratio < 1.0:
            raise ConfigError(f"context.split_ratio must be between 0 and 1 (seed 000: 2/3), got {self.split_ratio}")
        if self.preset not in {"openkoi", "openmotoko", "fleet"}:
            raise ConfigError(f"context.preset {self.preset!r} is unknown; use openkoi, openmotoko or fleet")
        for name in ("keep_last", "window_tokens", "max_facts", "fact_max_chars", "extract_batch_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"context.{name} must be at least 1, got {getattr(self, name)}")
        for name in ("max_tokens", "message_overhead_tokens", "salient_facts", "known_facts", "relevant_facts",
                     "recent_episodes",
                     "learnings_entries", "category_min_results"):
            if getattr(self, name) < 0:
                raise ConfigError(f"context.{name} must not be negative, got {getattr(self, name)}")
        if self.max_query_categories < 1:
            raise ConfigError("context.max_query_categories must be at least 1")
        if self.salience_threshold < 0 or self.salience_half_life_days <= 0:
            raise ConfigError("context.salience_threshold must be >= 0 and context.salience_half_life_days > 0")
        shares = self.addendum_shares
        if not isinstance(shares, dict) or set(shares) - set(ADDENDUM_SHARES) or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in shares.values()
        ):
            raise ConfigError(f"context.addendum_shares takes non-negative shares for {', '.join(ADDENDUM_SHARES)}, "
                              f"got {shares!r}")
        self.addendum_shares = {k: float(shares.get(k, v)) for k, v in ADDENDUM_SHARES.items()}


@dataclass
class ConversationsConfig:
    """Sessions, messages and their transcripts (seeds 000 and 003); see docs/conversations.md."""

    # seed 000 keeps full transcripts as <data dir>/sessions/<session-id>.jsonl. "auto": on for
    # file stores, off for ":memory:" ones (which have no directory of their own) and PostgreSQL
    # ones (shared by machines that would each hold part of a transcript); "on" for a ":memory:"
    # store needs transcript_dir.
    transcripts: str = "auto"  # auto | on | off
    transcript_dir: str = ""  # "" = <store.data_dir>/sessions
    transcript_fsync: bool = False  # fsync each append (survives power loss, not just a killed process)
    embedding_max_chars: int = 8000  # seed 003: Text is cut to at most 8000 characters ...
    embedding_boundary_window: float = 0.25  # ... at a boundary within the final 25 % (seed: "within 75 %")

    def __post_init__(self) -> None:
        if self.transcripts not in {"auto", "on", "off"}:
            raise ConfigError(f"conversations.transcripts {self.transcripts!r} is unknown; use auto, on or off")
        if self.embedding_max_chars < 1:
            raise ConfigError("conversations.embedding_max_chars must be at least 1")
        _check_range(self, "embedding_boundary_window", 0.0, 1.0)


@dataclass
class WorkspaceConfig:
    """Seed 004's workspace folder of Markdown files (docs/context.md, "Workspace files")."""

    # "auto": on for file stores (under their data dir), off for ":memory:" stores unless root is set
    enabled: str = "auto"  # auto | on | off
    root: str = ""  # "" = <store.data_dir>/workspaces; a namespace's workspace is <root>/<namespace slug>
    system_files: tuple[str, ...] = ("AGENTS.md", "SOUL.md", "USER.md")  # seed 004: loaded into the system prompt
    learnings_files: tuple[str, ...] = ("learnings/errors.md", "learnings/corrections.md")  # seed 004: auto-injected
    daily_dir: str = "memory"  # seed 004: memory/YYYY-MM-DD.md
    timezone: str = "UTC"  # the day a daily-log entry belongs to is read in this zone
    chunk_chars: int = 1000  # index chunk size (seed 003's 1000 characters, reused)
    auto_sync: bool = True  # build_context() and search() re-index files edited by hand first

    def __post_init__(self) -> None:
        if self.enabled not in {"auto", "on", "off"}:
            raise ConfigError(f"workspace.enabled {self.enabled!r} is unknown; use auto, on or off")
        if self.chunk_chars < 100:
            raise ConfigError(f"workspace.chunk_chars must be at least 100, got {self.chunk_chars}")
        for name in ("system_files", "learnings_files"):
            for item in getattr(self, name):
                if not isinstance(item, str) or not item.endswith(".md") or item.startswith(("/", "..")):
                    raise ConfigError(f"workspace.{name} must list relative .md paths, got {item!r}")
        try:
            from zoneinfo import ZoneInfo

            ZoneInfo(self.timezone)
        except Exception:
            raise ConfigError(f"workspace.timezone {self.timezone!r} is not a known time zone; use e.g. UTC") from None


@dataclass
class KnowledgeBaseConfig:
    """Seed 003's knowledge base."""

    chunk_size: int = 1000  # seed 003: RecursiveCharacterTextSplitter, 1000 characters ...
    chunk_overlap: int = 200  # ... with 200 characters of overlap
    batch_size: int = 1000  # seed 003: chunks inserted in batches of 1000 (rows per transaction)
    default_limit: int = 5  # seed 003: searchKnowledgeBase returns 5 results by default
    similarity_threshold: float = -1.0  # < 0: use the embedder's own recommendation (0.7 for sentence models)
    chunk_unit: str = "characters"  # characters | tokens (chunk_size and chunk_overlap counted in that unit)
    token_encoding: str = "cl100k_base"  # tiktoken encoding for chunk_unit = "tokens" (estimate when unavailable)
    keyword_strength: float = 0.4  # a keyword match below the threshold stays if it holds this share of the query (measured)
    # bounded work per file (docs/knowledge-base.md, "Limits: bounded work per file"): each is checked before parsing or as extraction goes
    max_file_bytes: int = 200 * 2**20  # files larger than this are refused
    max_pages: int = 5000  # PDFs (and iWork previews) with more pages, presentations with more slides, are refused
    max_characters: int = 10_000_000  # documents whose text grows past this are refused
    max_unzipped_bytes: int = 512 * 2**20  # OOXML/iWork zips declaring more than this are refused (zip bombs)
    max_zip_ratio: float = 200.0  # ... and so are members compressed more than this (above 1 MiB)
    max_zip_entries: int = 10_000
    max_part_bytes: int = 64 * 2**20  # one XML part of a zip (uncompressed): a 1M-cell worksheet is ~50 MiB
    max_xml_elements: int = 2_000_000  # XML elements parsed into a tree (~150 bytes of memory each)
    max_paragraphs: int = 200_000  # paragraphs of a Word/PowerPoint file, empty ones too (max_characters / 50)
    max_cells: int = 1_000_000  # cells of a spreadsheet, CSV or table (~max_characters / 10)
    max_pdf_objects: int = 1_000_000  # objects a PDF declares (pypdf reads its whole cross-reference table)
    max_pdf_page_bytes: int = 4 * 2**20  # one PDF page's content, decompressed (pypdf parses ~1 MB/s)
    max_seconds_per_file: float = 120.0  # reading one file, checked between pages, rows and paragraphs

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ConfigError(f"knowledge_base.chunk_size must be at least 1, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"knowledge_base.chunk_overlap must be at least 0 and smaller than chunk_size ({self.chunk_size}), "
                f"got {self.chunk_overlap}"
            )
        if self.chunk_unit not in {"characters", "tokens"}:
            raise ConfigError(f"knowledge_base.chunk_unit {self.chunk_unit!r} is unknown; use characters or tokens")
        if self.batch_size < 1 or self.default_limit < 1:
            raise ConfigError("knowledge_base.batch_size and knowledge_base.default_limit must be at least 1")
        if self.similarity_threshold > 1.0:
            raise ConfigError(
                f"knowledge_base.similarity_threshold is a cosine similarity (at most 1), got {self.similarity_threshold}"
            )
        _check_range(self, "keyword_strength", 0.0, 10.0)
        for name in ("max_file_bytes", "max_pages", "max_characters", "max_unzipped_bytes", "max_zip_entries",
                     "max_part_bytes", "max_xml_elements", "max_paragraphs", "max_cells", "max_pdf_objects",
                     "max_pdf_page_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"knowledge_base.{name} must be a positive whole number, got {value!r}")
        if self.max_zip_ratio <= 1:
            raise ConfigError(f"knowledge_base.max_zip_ratio must be above 1, got {self.max_zip_ratio}")
        seconds = self.max_seconds_per_file
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
            raise ConfigError(f"knowledge_base.max_seconds_per_file must be a positive number of seconds, got {seconds!r}")


@dataclass
class LinksConfig:
    """Hebbian links (seed 002, its v2): memories returned together link, and links can expand a search."""

    enabled: bool = True  # record co-recall links on every tracked search
    max_linked_hits: int = 10  # only the top hits of a search are linked (bounds the pairs to 45)
    initial_strength: float = 1.0  # seed 002: strength REAL DEFAULT 1.0
    increment: float = 1.0  # added on each further co-recall
    expand_by_default: bool = False  # search(expand_links=None) follows this
    expand_min_strength: float = 3.0  # ours: "strongly linked" = co-recalled three times
    expand_limit: int = 5  # neighbours added to one search at most
    half_strength: float = 3.0  # a neighbour gets strength / (strength + 3) of its parent's relevance

    def __post_init__(self) -> None:
        if self.max_linked_hits < 0 or self.expand_limit < 0:
            raise ConfigError("links.max_linked_hits and links.expand_limit must not be negative")
        if self.initial_strength <= 0 or self.increment < 0 or self.half_strength <= 0:
            raise ConfigError("links: initial_strength and half_strength must be positive, increment >= 0")


@dataclass
class DatabaseConfig:
    """Where the memory lives and the PostgreSQL backend's settings (issue 10, docs/scaling.md).

    ``url``: the memory ``MemoryStore.open()`` opens when given no path (``$OPENKOI_DATABASE_URL``
    wins over it): a ``postgresql://`` URL, or a file path; "" means ``<data_dir>/openkoi.db``.
    """

    url: str = ""
    pool_size: int = 8  # connections per process and memory (psycopg-pool)
    hnsw_m: int = 16  # pgvector HNSW build settings (pgvector's defaults)
    hnsw_ef_construction: int = 64
    hnsw_ef_search: int = 100  # candidates per HNSW search; raised up to 1,000 when filters leave fewer than k
    exact_scan_rows: int = 2000  # scopes up to this many rows skip the index: an exact scan, fast at this size
    cache_mb: int = 64  # SQLite page cache per connection (SQLite's own default is 2 MB)
    checkpoint_pages: int = 10_000  # WAL pages that trigger a checkpoint (SQLite's default 1,000; 4 KB each)
    background_checkpoints: bool = True  # copy committed WAL pages from a thread as well (shared_core/db/sqlite/checkpoints.py)
    busy_timeout_s: float = 10.0  # how long a write waits for another writer before BusyError (REST: 503)

    def __post_init__(self) -> None:
        if self.cache_mb < 1:
            raise ConfigError("database.cache_mb must be at least 1")
        if self.checkpoint_pages < 1:
            raise ConfigError("database.checkpoint_pages must be at least 1")
        if self.pool_size < 1:
            raise ConfigError("database.pool_size must be at least 1")
        if not 0 <= self.busy_timeout_s <= 3600:
            raise ConfigError("database.busy_timeout_s must be 0-3600 seconds")
        if not 2 <= self.hnsw_m <= 100 or not 4 <= self.hnsw_ef_construction <= 1000:
            raise ConfigError("database.hnsw_m must be 2-100 and database.hnsw_ef_construction 4-1000 (pgvector's limits)")
        if not 1 <= self.hnsw_ef_search <= 1000:
            raise ConfigError("database.hnsw_ef_search must be 1-1000 (pgvector's limit)")
        if self.exact_scan_rows < 0:
            raise ConfigError("database.exact_scan_rows must not be negative")


@dataclass
class ServerConfig:
    """``openkoi-memory serve`` (REST API) and ``openkoi-memory mcp`` (docs/server.md)."""

    host: str = "127.0.0.1"  # seed 003: the API is local, http://localhost:3415/api/
    port: int = 3415  # seed 003
    tokens_file: str = ""  # "" = $OPENKOI_TOKENS, else tokens.toml beside config.toml
    max_body_bytes: int = 2**20  # larger request bodies are refused with 413
    max_upload_bytes: int = 50 * 2**20  # larger document uploads are refused with 413
    documents_roots: tuple[str, ...] = ()  # folders POST /api/kb/ingest may read from; none: off
    allowed_hosts: tuple[str, ...] = ()  # Host names it answers to besides its address ("*": any); docs/server.md
    allowed_origins: tuple[str, ...] = ()  # web apps (https://app.example) that may write through a browser
    maintenance: bool = True  # run maintain(if_due=True) on memory.prune_schedule in the background
    maintenance_poll_seconds: float = 60.0  # how often the background thread asks whether a run is due

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"server.port must be between 0 and 65535, got {self.port}")
        for name in ("max_body_bytes", "max_upload_bytes"):
            if getattr(self, name) < 1024:
                raise ConfigError(f"server.{name} must be at least 1024 bytes, got {getattr(self, name)}")
        if self.maintenance_poll_seconds <= 0:
            raise ConfigError("server.maintenance_poll_seconds must be positive")
        for host in self.allowed_hosts:
            if not isinstance(host, str) or not host.strip() or "/" in host:
                raise ConfigError(f"server.allowed_hosts holds host names such as 'mybox.local' or '*', got {host!r}")
        for origin in self.allowed_origins:
            if (not isinstance(origin, str) or not origin.startswith(("http://", "https://"))
                    or "/" in origin.split("://", 1)[1].rstrip("/")):
                raise ConfigError(f"server.allowed_origins holds origins such as 'https://app.example' "
                                  f"(scheme, host, optional port; no path), got {origin!r}")


_SECTIONS = {
    "models": ModelsConfig,
    "memory": MemoryConfig,
    "ranking": RankingConfig,
    "search": SearchConfig,
    "forgetting": ForgettingConfig,
    "insights": InsightsConfig,
    "recall": RecallConfig,
    "context": ContextConfig,
    "knowledge_base": KnowledgeBaseConfig,
    "links": LinksConfig,
    "learning": LearningConfig,
    "usage": UsageConfig,
    "conversations": ConversationsConfig,
    "workspace": WorkspaceConfig,
    "database": DatabaseConfig,
    "server": ServerConfig,
}


@dataclass
class Config:
    """All settings. Build with :meth:`Config.load`, or directly for tests."""

    models: ModelsConfig = field(default_factory=ModelsConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    ranking: RankingConfig = field(default_factory=RankingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    forgetting: ForgettingConfig = field(default_factory=ForgettingConfig)
    insights: InsightsConfig = field(default_factory=InsightsConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    knowledge_base: KnowledgeBaseConfig = field(default_factory=KnowledgeBaseConfig)
    links: LinksConfig = field(default_factory=LinksConfig)
    learning: LearningConfig = field(default_factory=LearningConfig)
    usage: UsageConfig = field(default_factory=UsageConfig)
    conversations: ConversationsConfig = field(default_factory=ConversationsConfig)
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    database: DatabaseConfig = field(default_factory=DatabaseConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    data_dir: Path = field(default_factory=default_data_dir)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
    ) -> Config:
        """Defaults, then the TOML file (if it exists), then ``overrides``.

        ``path=None`` reads ``$OPENKOI_CONFIG`` or ``~/.openkoi/config.toml`` when present;
        an explicit path that does not exist is an error.
        """
        explicit = path is not None
        toml_path = Path(path).expanduser() if explicit else default_config_path()
        data: dict[str, Any] = {}
        if toml_path.exists():
            try:
                data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{toml_path} is not valid TOML: {exc}") from None
        elif explicit:
            raise ConfigError(f"config file {toml_path} does not exist")
        merged = _merge(data, dict(overrides or {}))
        return cls.from_dict(merged, origin=str(toml_path) if toml_path.exists() else "overrides")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "config") -> Config:
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "data_dir":
                kwargs["data_dir"] = Path(str(value)).expanduser()
                continue
            section = _SECTIONS.get(key)
            if section is None:
                raise ConfigError(
                    f"{origin}: unknown section [{key}]; known sections: {', '.join(sorted(_SECTIONS))}"
                )
            if isinstance(value, section):
                kwargs[key] = value
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"{origin}: [{key}] must be a table of settings, got {value!r}")
            kwargs[key] = _build_section(section, key, value, origin)
        return cls(**kwargs)

    def replace(self, **overrides: Mapping[str, Any]) -> Config:
        """A copy with some sections' settings changed: ``cfg.replace(search={"fusion": "rrf"})``."""
        current = {name: dataclasses.asdict(getattr(self, name)) for name in _SECTIONS}
        current["data_dir"] = str(self.data_dir)
        return Config.from_dict(_merge(current, overrides), origin="replace()")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: dataclasses.asdict(getattr(self, name)) for name in _SECTIONS}
        out["data_dir"] = str(self.data_dir)
        return out


def _build_section(section: type, key: str, values: Mapping[str, Any], origin: str) -> Any:
    known = {f.name: f for f in fields(section)}
    checked: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            raise ConfigError(
                f"{origin}: unknown setting {key}.{name}; known settings: {', '.join(sorted(known))}"
            )
        default = known[name].default
        if default is dataclasses.MISSING:  # pragma: no cover - every setting has a default
            default = None
        checked[name] = _coerce(key, name, value, default)
    try:
        return section(**checked)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{origin}: invalid [{key}] settings: {exc}") from None


def _coerce(section: str, name: str, value: Any, default: Any) -> Any:
    where = f"{section}.{name}"
    if name == "max_size":
        return parse_size(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be a whole number, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        return float(value)
    if isinstance(default, tuple):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        return tuple(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {value!r}")
        return value
    return value


def _check_range(obj: Any, name: str, low: float, high: float) -> None:
    value = getattr(obj, name)
    if not low <= value <= high:
        section = type(obj).__name__.removesuffix("Config").lower()
        raise ConfigError(f"{section}.{name} must be between {low} and {high}, got {value}")


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out

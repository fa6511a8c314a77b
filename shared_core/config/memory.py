"""Settings of memories themselves: the embedder, feedback and pruning, ranking, search, forgetting
and links."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from .values import check_range, parse_size

__all__ = ["ModelsConfig", "MemoryConfig", "RankingConfig", "SearchConfig", "ForgettingConfig", "LinksConfig"]


@dataclass
class ModelsConfig:
    """Which embedder to use when none is passed in code (seed 000 ``[models]``)."""

    embedder: str = "static"  # static (the table shipped), hashing, openai/<model>, ollama/<model>, fastembed/<model>, model2vec/<model>, ...
    embedder_url: str = ""  # openai/ and ollama/: the server's URL ("": $OPENAI_BASE_URL / $OLLAMA_HOST, or the default)
    embedder_batch_size: int = 0  # texts per request or model call (0: the embedder's own default)

    def __post_init__(self) -> None:
        if self.embedder_batch_size < 0:
            raise ConfigError(f"models.embedder_batch_size must be 0 (the embedder's default) or more, "
                              f"got {self.embedder_batch_size}")


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
        from ..lifecycle.cron import CronSchedule, resolve_timezone

        try:
            CronSchedule.parse(self.prune_schedule)
            resolve_timezone(self.schedule_timezone)
        except ValueError as exc:
            raise ConfigError(f"memory: {exc}") from None
        for name in ("fact_dedup_threshold", "learning_dedup_threshold", "learning_prune_threshold",
                     "learning_initial_confidence", "learning_reinforce_bump"):
            check_range(self, name, 0.0, 1.0)
        check_range(self, "prune_percent", 0.0, 100.0)
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
    """Seed 002's rank: relevance x exp(score x score_weight) x recency, recency = 1/(1 + days x recency_rate)
    in seed 002, held at or above recency_floor in search."""

    score_weight: float = 0.2
    recency_rate: float = 0.01  # per day since last hit (or creation)
    recency_floor: float = 0.8  # search: the least recency weight, so age takes at most 20 % off (docs/search.md)
    # seed 001 gives no numbers for these; ours are documented in docs/learning.md
    bre_magnitude_penalty: float = 0.2  # BRE: cosine x confidence / magnitude ** penalty
    episode_importance_weight: float = 0.5  # episodes: relevance x (1 - w + w x importance)
    procedure_usage_weight: float = 0.1  # procedures: relevance x (1 + w x ln(1 + uses))

    def __post_init__(self) -> None:
        check_range(self, "recency_floor", 0.0, 1.0)


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
    time_phrases: str = "boost"  # a time in the question (last Tuesday, in March): off | boost | narrow
    time_boost: float = 1.0  # boost: relevance x (1 + this) for memories created inside the window
    context_weight: float = 0.2  # hybrid: + this x the best relevance of the memory before/after in its session
    query_stop_words: str = "english"  # keyword side: english (leave out "what did ...") | none

    def __post_init__(self) -> None:
        if self.fusion not in {"keyword_first", "weighted", "rrf", "keyword", "vector"}:
            raise ConfigError(
                f"search.fusion {self.fusion!r} is unknown; use keyword_first, weighted, rrf, keyword or vector"
            )
        if self.keyword_scale not in {"best", "full_match"}:
            raise ConfigError(f"search.keyword_scale {self.keyword_scale!r} is unknown; use best or full_match")
        if self.vector_index not in {"auto", "mirror", "sqlite-vec"}:
            raise ConfigError(f"search.vector_index {self.vector_index!r} is unknown; use auto, mirror or sqlite-vec")
        check_range(self, "max_df_ratio", 0.0, 1.0)
        if self.candidates < 1 or self.rerank_pool < 1:
            raise ConfigError("search.candidates and search.rerank_pool must be positive")
        if self.parallel_scan_rows < 0:
            raise ConfigError("search.parallel_scan_rows must not be negative (0 turns the worker thread off)")
        if self.time_phrases not in {"off", "boost", "narrow"}:
            raise ConfigError(f"search.time_phrases {self.time_phrases!r} is unknown; use off, boost or narrow")
        if not self.time_boost >= 0:
            raise ConfigError(f"search.time_boost must be 0 or more, got {self.time_boost}")
        if self.query_stop_words not in {"english", "none"}:
            raise ConfigError(f"search.query_stop_words {self.query_stop_words!r} is unknown; use english or none")
        if not self.context_weight >= 0:
            raise ConfigError(f"search.context_weight must be 0 or more (0 turns it off), got {self.context_weight}")


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
    # embedder's own threshold (EmbedderProfile.kb_threshold: 0.7 sentence models, 0.65 static, 0.35 hashing)
    vector_threshold: float = -1.0
    scan_limit_factor: int = 10  # seed 003: scanLimit = limit * 10
    min_raw_results_without_fallback: int = 3  # seed 003: minRawResultsWithoutFallback (value not given)
    protect_pinned: bool = True  # beyond the seed: a pinned record is never compressed, it moves up a tier

    def __post_init__(self) -> None:
        for name in ("short_to_mid_threshold", "mid_to_long_threshold"):
            check_range(self, name, 0.0, 1.0)
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

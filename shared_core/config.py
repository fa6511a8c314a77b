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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

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
    "ConversationsConfig",
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

    embedder: str = "hashing"  # "hashing" or "sentence-transformers/<model>"


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
    archive_pruned: bool = True  # DESIGN.md: pruning archives unless configured to delete
    max_size: int = 100 * 10**6  # seed 002: maxSize 100MB
    prune_percent: float = 1.0  # seed 002: archive the bottom 1 %
    prune_schedule: str = "0 4 * * *"  # seed 002: 4am daily

    def __post_init__(self) -> None:
        self.max_size = parse_size(self.max_size)
        for name in ("fact_dedup_threshold", "learning_dedup_threshold", "learning_prune_threshold"):
            _check_range(self, name, 0.0, 1.0)
        _check_range(self, "prune_percent", 0.0, 100.0)
        if self.reinforce_weight < 0 or self.demote_weight < 0:
            raise ConfigError("memory.reinforce_weight and memory.demote_weight are magnitudes; use values >= 0")


@dataclass
class RankingConfig:
    """Seed 002's rank: relevance x exp(score x score_weight) x 1/(1 + days x recency_rate)."""

    score_weight: float = 0.2
    recency_rate: float = 0.01  # per day since last hit (or creation)


@dataclass
class SearchConfig:
    """Hybrid search: FTS5 BM25 + vector KNN, fused (see docs/search.md for the measurements)."""

    fusion: str = "keyword_first"  # keyword_first | weighted | rrf | keyword | vector
    vector_weight: float = -1.0  # < 0: use the embedder's own recommendation
    similarity_floor: float = -1.0  # < 0: use the embedder's own recommendation
    rrf_k: int = 60
    candidates: int = 50  # per side, at least 5 x limit
    text_weight: float = 1.0  # BM25 column weights (seed 002's FTS table: content, tags, source)
    tags_weight: float = 2.0
    source_weight: float = 0.5
    max_df_ratio: float = 0.05  # query terms in more than this share of rows are dropped ...
    df_gate_min_rows: int = 2000  # ... but only once a term is in more rows than this
    vector_index: str = "auto"  # auto | mirror | sqlite-vec
    exact_scan_rows: int = 20000  # below this many rows the mirror scans exact float vectors
    rerank_pool: int = 256  # binary-quantised candidates reranked exactly (at least 20 x k)
    track_access: bool = True  # seed 003: access_count += 1, last_access_at = now on return
    default_limit: int = 10

    def __post_init__(self) -> None:
        if self.fusion not in {"keyword_first", "weighted", "rrf", "keyword", "vector"}:
            raise ConfigError(
                f"search.fusion {self.fusion!r} is unknown; use keyword_first, weighted, rrf, keyword or vector"
            )
        if self.vector_index not in {"auto", "mirror", "sqlite-vec"}:
            raise ConfigError(f"search.vector_index {self.vector_index!r} is unknown; use auto, mirror or sqlite-vec")
        _check_range(self, "max_df_ratio", 0.0, 1.0)
        if self.candidates < 1 or self.rerank_pool < 1:
            raise ConfigError("search.candidates and search.rerank_pool must be positive")


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


@dataclass
class InsightsConfig:
    """Seed 003's insight value score and weight adjustment."""

    frequency_weight: float = 0.45
    freshness_weight: float = 0.25
    relevance_weight: float = 0.20
    favorite_weight: float = 0.10
    frequency_max_accesses: int = 50  # the seed leaves the maximum open
    freshness_past_30_days: float = 0.1  # the seed leaves freshness past 30 days open
    favorite_multiplier: float = 1.5
    favorite_days: float = 7.0
    view_multiplier: float = 1.1
    view_hours: float = 24.0
    view_min_inactive_days: float = 1.0
    weight_cap: float = 5.0
    weight_floor: float = 0.3
    trend_ratio: float = 0.25


@dataclass
class RecallConfig:
    """Seed 000's token-budgeted recall priorities."""

    anti_patterns: int = 5
    skills: int = 3
    learnings: int = 5
    similar_tasks: int = 3
    budget_fraction: float = 0.1  # recall gets 1/10 of the task budget
    task_token_budget: int = 200_000


@dataclass
class ContextConfig:
    """Working window and compaction presets (seeds 000, 001, 004)."""

    working_keep: int = 20  # seed 001
    working_summarize_after: int = 40  # seed 001
    flush_at: float = 0.6  # seed 004
    compact_at: float = 0.7  # seed 004
    keep_last: int = 4  # seed 004
    summary_tokens: int = 500  # seed 000

    def __post_init__(self) -> None:
        if self.working_keep < 1 or self.working_summarize_after <= self.working_keep:
            raise ConfigError(
                "context.working_keep must be at least 1 and context.working_summarize_after larger than it "
                f"(seed 001: 20 and 40), got {self.working_keep} and {self.working_summarize_after}"
            )
        if self.summary_tokens < 1:
            raise ConfigError("context.summary_tokens must be at least 1")


@dataclass
class ConversationsConfig:
    """Sessions, messages and their transcripts (seeds 000 and 003); see docs/conversations.md."""

    # seed 000 keeps full transcripts as <data dir>/sessions/<session-id>.jsonl. "auto": on for
    # file stores, off for ":memory:" ones (which have no directory of their own); "on" for a
    # ":memory:" store needs transcript_dir.
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
class KnowledgeBaseConfig:
    """Seed 003's knowledge base."""

    chunk_size: int = 1000
    chunk_overlap: int = 200
    batch_size: int = 1000
    default_limit: int = 5
    similarity_threshold: float = -1.0  # < 0: use the embedder's own recommendation (0.7 for sentence models)


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
    "conversations": ConversationsConfig,
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
    conversations: ConversationsConfig = field(default_factory=ConversationsConfig)
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

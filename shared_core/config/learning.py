"""Settings of what is learned from use: insights, recall, learnings and usage patterns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .values import check_range

__all__ = ["IMPORTANCE_LEVELS", "URGENCY_LEVELS", "InsightsConfig", "RecallConfig", "LearningConfig", "UsageConfig"]

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
        check_range(self, "budget_fraction", 0.0, 1.0)
        check_range(self, "similar_tasks_min_remaining", 0.0, 1.0)
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
        check_range(self, "min_confidence", 0.0, 1.0)
        check_range(self, "propose_confidence", 0.0, 1.0)
        if self.min_samples < 1 or self.propose_min_samples < 1 or self.window_days < 1:
            raise ConfigError("usage.min_samples, usage.propose_min_samples and usage.window_days must be at least 1")
        try:
            from zoneinfo import ZoneInfo

            ZoneInfo(self.timezone)
        except Exception:
            raise ConfigError(f"usage.timezone {self.timezone!r} is not a known time zone; use e.g. UTC or Europe/Berlin") from None

"""When and how a conversation is compacted: one policy class, three presets (DESIGN.md, "compaction").

================ ================================ ==================== ================== ==========
preset           trigger                          proactive flush      what is kept       seed
================ ================================ ==================== ================== ==========
``openkoi``      tokens > max_tokens              none                 the recent third   000
``openmotoko``   more than 40 messages (or        none                 the last 20        001
                 tokens > max_tokens)
``fleet``        tokens > 70 % of the window      at 60 % of the       the last 4         004
                                                  window
================ ================================ ==================== ================== ==========

``max_tokens`` defaults to ``compact_at`` (70 %) of ``window_tokens``; seed 000 names the trigger
(``total > max_tokens``) but leaves its value to the caller. Every number comes from the
``context`` config section (the seeds' values) and can be overridden per manager:
``ContextPolicy.preset("fleet", config.context, window_tokens=8000)``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ..config import ContextConfig

__all__ = ["ContextPolicy", "PRESETS"]

PRESETS = ("openkoi", "openmotoko", "fleet")


@dataclass(frozen=True)
class ContextPolicy:
    """Thresholds of one context manager. Exactly one of ``split_ratio`` and ``keep_last`` is set.

    ``window_tokens``: the model's context window. ``max_tokens``: compact when the messages
    hold more tokens than this (``None``: ``compact_at x window_tokens``). ``flush_at``: extract
    and store facts once the messages reach this fraction of the window (``None``: never
    before compacting). ``split_ratio``: the older ``split_ratio`` of the conversation is
    compacted (seed 000: 2/3). ``keep_last``: all but the last N messages are compacted.
    ``max_messages``: also compact when more than this many messages are in full (seed 001).
    ``summary_tokens``: the summary's budget. ``keep_system``: leading system messages (the
    agent's own prompt) stay in front, never compacted.
    """

    name: str = "custom"
    window_tokens: int = 200_000
    max_tokens: int | None = None
    flush_at: float | None = None
    compact_at: float = 0.7
    split_ratio: float | None = 2 / 3
    keep_last: int | None = None
    max_messages: int | None = None
    summary_tokens: int = 500
    keep_system: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.window_tokens, bool) or not isinstance(self.window_tokens, int) or self.window_tokens < 1:
            raise ValueError(f"window_tokens must be a positive whole number, got {self.window_tokens!r}")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
                                            or self.max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive whole number or None, got {self.max_tokens!r}")
        if not 0.0 < self.compact_at <= 1.0:
            raise ValueError(f"compact_at is a fraction of the window in (0, 1], got {self.compact_at!r}")
        if self.flush_at is not None and not 0.0 < self.flush_at <= 1.0:
            raise ValueError(f"flush_at is a fraction of the window in (0, 1] or None, got {self.flush_at!r}")
        if (self.split_ratio is None) == (self.keep_last is None):
            raise ValueError("give exactly one of split_ratio (compact the older part, seed 000) and keep_last "
                             "(keep the last N messages, seeds 001 and 004)")
        if self.split_ratio is not None and not 0.0 < self.split_ratio < 1.0:
            raise ValueError(f"split_ratio must be between 0 and 1 (seed 000: 2/3), got {self.split_ratio!r}")
        if self.keep_last is not None and (isinstance(self.keep_last, bool) or not isinstance(self.keep_last, int)
                                           or self.keep_last < 1):
            raise ValueError(f"keep_last must be a positive whole number, got {self.keep_last!r}")
        if self.max_messages is not None and (not isinstance(self.max_messages, int) or self.max_messages < 1):
            raise ValueError(f"max_messages must be a positive whole number or None, got {self.max_messages!r}")
        if self.max_messages is not None and self.keep_last is not None and self.max_messages <= self.keep_last:
            raise ValueError(f"max_messages ({self.max_messages}) must be larger than keep_last ({self.keep_last})")
        if isinstance(self.summary_tokens, bool) or not isinstance(self.summary_tokens, int) or self.summary_tokens < 1:
            raise ValueError(f"summary_tokens must be a positive whole number, got {self.summary_tokens!r}")

    @classmethod
    def preset(cls, name: str, config: ContextConfig | None = None, **overrides: Any) -> ContextPolicy:
        """``openkoi``, ``openmotoko`` or ``fleet`` with the ``context`` settings, then ``overrides``."""
        cfg = config or ContextConfig()
        common = dict(window_tokens=cfg.window_tokens, max_tokens=cfg.max_tokens or None, compact_at=cfg.compact_at,
                      summary_tokens=cfg.summary_tokens, keep_system=cfg.keep_system)
        if name == "openkoi":
            values = dict(common, name=name, split_ratio=cfg.split_ratio)
        elif name == "openmotoko":
            values = dict(common, name=name, split_ratio=None, keep_last=cfg.working_keep,
                          max_messages=cfg.working_summarize_after)
        elif name == "fleet":
            values = dict(common, name=name, split_ratio=None, keep_last=cfg.keep_last, flush_at=cfg.flush_at)
        else:
            raise ValueError(f"unknown preset {name!r}; use one of {', '.join(PRESETS)} (or build a ContextPolicy)")
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown policy settings {sorted(unknown)}")
        if "keep_last" in overrides and overrides["keep_last"] is not None and "split_ratio" not in overrides:
            values["split_ratio"] = None
        if "split_ratio" in overrides and overrides["split_ratio"] is not None and "keep_last" not in overrides:
            values["keep_last"] = None
        return cls(**{**values, **overrides})

    @property
    def compact_threshold(self) -> int:
        """Compaction is due when the messages hold more tokens than this."""
        return self.max_tokens if self.max_tokens is not None else math.floor(self.compact_at * self.window_tokens)

    @property
    def flush_threshold(self) -> int | None:
        """A flush is due when the messages hold at least this many tokens (None: no proactive flush)."""
        return None if self.flush_at is None else math.floor(self.flush_at * self.window_tokens)

    @property
    def summary_budget(self) -> int:
        """The summary's token budget: ``summary_tokens`` (seed 000: ~500), but at most a quarter of the
        compaction threshold, so that a small window is not filled by its own summary."""
        return max(1, min(self.summary_tokens, self.compact_threshold // 4))

    def split(self, count: int) -> int:
        """How many of ``count`` compactable messages go into the summary (before tool-call adjustment)."""
        if self.keep_last is not None:
            return max(0, count - self.keep_last)
        assert self.split_ratio is not None
        return math.floor(count * self.split_ratio + 1e-9)  # seed 000: messages.len() * 2 / 3

    def describe(self) -> str:
        """One line, e.g. ``fleet: compact past 5600 tokens, keep the last 4, flush facts from 4800 tokens``."""
        trigger = f"compact past {self.compact_threshold} tokens"
        if self.max_messages is not None:
            trigger += f" or {self.max_messages} messages"
        kept = f"keep the last {self.keep_last}" if self.keep_last is not None else \
            f"keep the recent {1 - (self.split_ratio or 0):.0%}"
        flush = f", flush facts from {self.flush_threshold} tokens" if self.flush_threshold is not None else ""
        return f"{self.name}: {trigger}, {kept}{flush}"

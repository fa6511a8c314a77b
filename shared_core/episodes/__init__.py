"""Episodic memory (seed 001): timestamped summaries of past interactions, by channel.

Reached as ``store.episodes`` (:class:`Episodes`); see docs/learning.md.
"""

from .records import Episode, EpisodeMatch
from .service import Episodes

__all__ = ["Episodes", "Episode", "EpisodeMatch"]

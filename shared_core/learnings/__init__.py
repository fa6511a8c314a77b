"""Learnings (seed 000): Heuristic, AntiPattern and Preference, extracted from finished tasks.

Reached as ``store.learnings`` (:class:`Learnings`); see docs/learning.md.
"""

from .records import DecayReport, ExtractionReport, Learning, LearningCandidate, LearningType
from .service import Learnings

__all__ = ["Learnings", "Learning", "LearningType", "LearningCandidate", "ExtractionReport", "DecayReport"]

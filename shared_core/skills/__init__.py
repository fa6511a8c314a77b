"""Skill memory (seed 000, layer 5): the effectiveness matrix and the SKILL.md files.

Reached as ``store.skills`` (:class:`Skills`); see docs/learning.md.
"""

from .records import SKILL_ORIGINS, SkillFile, SkillRecommendation, SkillScore, SyncReport
from .service import Skills, parse_skill_file

__all__ = ["Skills", "SkillScore", "SkillFile", "SkillRecommendation", "SyncReport", "SKILL_ORIGINS",
           "parse_skill_file"]

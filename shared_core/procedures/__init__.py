"""Procedural memory (seed 001): named procedures with ordered steps, triggers and usage counts.

Reached as ``store.procedures`` (:class:`Procedures`); see docs/learning.md.
"""

from .records import Procedure, ProcedureMatch
from .service import Procedures

__all__ = ["Procedures", "Procedure", "ProcedureMatch"]

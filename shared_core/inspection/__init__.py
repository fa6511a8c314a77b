"""The memory inspector's views (``store.inspector``): overview, one memory, sessions. See docs/inspector.md."""

from __future__ import annotations

from .records import (
           CurvePoint,
           GrowthPoint,
           LinkView,
           MemoryDetail,
           Overview,
           SessionDetail,
           ValueCurve,
           Version,
)
from .service import CURVE_DAYS, Inspector

__all__ = ["Inspector", "Overview", "MemoryDetail", "ValueCurve", "CurvePoint", "GrowthPoint", "LinkView",
           "SessionDetail", "Version", "CURVE_DAYS"]

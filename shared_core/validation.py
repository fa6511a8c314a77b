"""Argument checks the domain modules share: each raises an error that says what is expected."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from .clock import from_iso, to_iso

__all__ = ["unit_or_none", "time_or_none"]


def unit_or_none(value: Any, what: str) -> float | None:
    """``None``, or a number between 0 and 1 (importance, confidence, ...) as a float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{what} must be a number between 0 and 1, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{what} must be between 0 and 1, got {value}")
    return float(value)


def time_or_none(value: Any, what: str) -> datetime | None:
    """``None``, or an aware UTC datetime from a datetime or an ISO-8601 string."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return from_iso(to_iso(value))
    if isinstance(value, str):
        try:
            return from_iso(value)
        except ValueError:
            raise ValueError(f"{what} must be an ISO-8601 time such as 2026-01-31T12:00:00Z, got {value!r}") from None
    raise TypeError(f"{what} must be a datetime or an ISO-8601 string, got {type(value).__name__}")

"""Where settings live by default, and the checks every section uses (sizes, ranges)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import platformdirs

from ..errors import ConfigError

__all__ = ["APP_NAME", "default_data_dir", "default_config_path", "parse_size", "check_range"]

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


def check_range(obj: Any, name: str, low: float, high: float) -> None:
    """Raise :class:`ConfigError` unless the setting ``name`` of the section ``obj`` is within ``[low, high]``."""
    value = getattr(obj, name)
    if not low <= value <= high:
        section = type(obj).__name__.removesuffix("Config").lower()
        raise ConfigError(f"{section}.{name} must be between {low} and {high}, got {value}")

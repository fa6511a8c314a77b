"""The SQLite backend: one file (or ``:memory:``) with FTS5 and sqlite-vec, the default."""

from .database import Database
from .driver import Driver, connect, connect_companion, get_driver

__all__ = ["Database", "Driver", "connect", "connect_companion", "get_driver"]

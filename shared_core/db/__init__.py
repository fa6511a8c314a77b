"""The SQL layer: driver choice, connection and transactions, numbered migrations."""

from .database import Database
from .driver import Driver, connect, get_driver
from .migrations import apply_migrations, latest_version, schema_version

__all__ = ["Database", "Driver", "connect", "get_driver", "apply_migrations", "latest_version", "schema_version"]

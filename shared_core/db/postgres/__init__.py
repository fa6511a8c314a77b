"""The PostgreSQL backend: a memory in one schema of a PostgreSQL database, shared by several machines.

psycopg is imported when a memory is opened, not with this package (it is an optional extra).
"""

from .database import PostgresDatabase
from .url import PgTarget, is_postgres_url, parse_url

__all__ = ["PgTarget", "PostgresDatabase", "is_postgres_url", "parse_url"]

"""Where a PostgreSQL memory lives: a ``postgresql://`` URL split into libpq's part and the schema."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["PgTarget", "is_postgres_url", "parse_url"]

_URL = re.compile(r"^postgres(?:ql)?(?:\+psycopg)?://", re.IGNORECASE)


def is_postgres_url(target: Any) -> bool:
    return isinstance(target, str) and bool(_URL.match(target.strip()))


@dataclass(frozen=True)
class PgTarget:
    """A parsed ``postgresql://`` URL: what libpq gets, and the schema the memory lives in."""

    conninfo: str
    schema: str
    display: str  # the URL without its password


def parse_url(url: str) -> PgTarget:
    """Split ``postgresql://user:pw@host:port/db?schema=name&sslmode=...`` for psycopg."""
    parts = urlsplit(url.strip())
    scheme = "postgresql"
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = "public"
    kept = []
    for key, value in query:
        if key == "schema":
            schema = value
        else:
            kept.append((key, value))
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]{0,62}", schema):
        raise ValueError(f"schema={schema!r} is not a plain PostgreSQL name; use letters, digits and underscores")
    netloc = parts.netloc
    conninfo = urlunsplit((scheme, netloc, parts.path, urlencode(kept), ""))
    shown = netloc
    if "@" in netloc:
        creds, host = netloc.rsplit("@", 1)
        shown = (creds.split(":", 1)[0] + "@" if creds else "") + host
    display = urlunsplit((scheme, shown, parts.path, urlencode([*kept, ("schema", schema)]), ""))
    return PgTarget(conninfo, schema, display)

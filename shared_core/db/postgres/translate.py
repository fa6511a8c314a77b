"""The SQL the core writes (SQLite's dialect), translated for PostgreSQL.

**Why a translator, kept inside the PostgreSQL backend** (issue 22, part 3). The repositories keep
one copy of their SQL, in SQLite's dialect, and :class:`~.database.PostgresDatabase` translates each
statement once (then caches it). The alternative, a PostgreSQL copy of every statement, would
double the SQL each repository owns (about 180 statements today) for differences that are
mechanical: placeholders, upserts, type names. What is not mechanical is not translated: the
keyword and vector indexes, the filter compiler and the backend methods (space, catalog,
migration steps) have their own PostgreSQL SQL, and the migrations have ``-- @postgresql`` blocks.
Only :class:`~.database.PostgresDatabase` (the statements the core passes it) and the migration
runner's shared blocks (:mod:`.migrate`) feed this module; nothing outside ``db/postgres`` imports it.

Most of the SQL is already portable; this module rewrites, token by token (string literals, quoted names and comments are never touched),
what is not:

* placeholders: ``?`` becomes ``%s`` and ``?N`` becomes ``%(pN)s`` (psycopg's styles);
  a literal ``%`` becomes ``%%``; ``==`` becomes ``=``;
* ``INSERT OR IGNORE`` becomes ``ON CONFLICT DO NOTHING``; ``INSERT OR REPLACE`` (and
  ``REPLACE INTO``) becomes an upsert on the table's primary key that also renumbers the
  row, as SQLite's delete-and-insert does;
* scalar ``max(a, b)`` / ``min(a, b)`` become ``greatest`` / ``least``; ``ifnull`` becomes
  ``coalesce``; ``LIMIT -1`` becomes ``LIMIT ALL``; ``x IS ?`` becomes ``IS NOT DISTINCT FROM``;
* a bare ``0`` or ``1`` used as a condition (``WHERE 1``, ``AND 0``) becomes FALSE / TRUE;
* an ``INSERT`` into a table with an integer key gets ``RETURNING`` that key, so the
  cursor's ``lastrowid`` works as it does on SQLite.

``instr``, ``casefold``, ``strftime('%s', ...)``, ``json_set`` and ``sum(boolean)`` are
not rewritten: the PostgreSQL migrations create them as functions. What cannot be
translated (PRAGMAs, FTS5 and sqlite-vec tables, the JSON functions of the filter
compiler) raises :class:`DialectError`; that SQL belongs in a dialect-aware function instead
(a backend method in ``shared_core.db``, or the index classes of ``shared_core.index``).

DDL (``CREATE TABLE``, ``ALTER TABLE ... ADD COLUMN``) goes through
:func:`translate_ddl`: SQLite type names become PostgreSQL ones (``TEXT`` gets byte-order
collation ``"C"``, as SQLite's ``BINARY``), ``INTEGER PRIMARY KEY`` becomes an identity
column, and every table SQLite would give an implicit ``rowid`` gets one explicitly.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...errors import OpenKoiError

__all__ = ["Catalog", "DialectError", "Translated", "shared_catalog", "split_statements", "tokenize", "translate",
           "translate_ddl", "translated"]


class DialectError(OpenKoiError):
    """SQL that only SQLite understands reached the PostgreSQL backend."""


# -- tokens ----------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^']|'')*')
  | (?P<dollar>\$(?P<tag>[A-Za-z_]*)\$.*?\$(?P=tag)\$)
  | (?P<quoted>"(?:[^"]|"")*")
  | (?P<param>\?\d*)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<op>\|\||<=|>=|<>|!=|==|::|->>|->|[-+*/%<>=(),.;\[\]~&|!@#^:])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass
class Token:
    kind: str
    text: str

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else self.text


def tokenize(sql: str) -> list[Token]:
    out = []
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup or "other"
        if kind == "tag":  # pragma: no cover - the named group inside 'dollar'
            kind = "dollar"
        if match.group("dollar") is not None:
            kind = "dollar"
        out.append(Token(kind, match.group(0)))
    return out


def split_statements(sql: str) -> list[str]:
    """Split a script on top-level semicolons (strings, comments and $$ bodies kept whole)."""
    statements: list[str] = []
    buffer: list[str] = []
    depth = 0
    for token in tokenize(sql):
        if token.kind == "word" and token.upper in ("BEGIN", "CASE"):
            # SQLite trigger bodies (BEGIN ... END) and CASE ... END nest
            depth += 1 if token.upper == "CASE" or _in_trigger(buffer) else 0
        elif token.kind == "word" and token.upper == "END" and depth:
            depth -= 1
        if token.kind == "op" and token.text == ";" and depth == 0:
            text = "".join(buffer).strip()
            if _meaningful(text):
                statements.append(text)
            buffer = []
            continue
        buffer.append(token.text)
    text = "".join(buffer).strip()
    if _meaningful(text):
        statements.append(text)
    return statements


def _in_trigger(buffer: list[str]) -> bool:
    head = " ".join("".join(buffer).split()).upper()
    return head.startswith("CREATE TRIGGER") or head.startswith("CREATE TEMP TRIGGER")


def _meaningful(text: str) -> bool:
    return any(t.kind not in ("space", "comment") for t in tokenize(text))


# -- the catalog the translation needs ---------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Catalog:
    """What the translator must know about the tables: keys, columns, identity columns.

    Compared and hashed by identity: :func:`shared_catalog` gives every alike schema the same one."""

    primary_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    identity: Mapping[str, str] = field(default_factory=dict)  # table -> its integer key / rowid column


# every catalog of this process by its tables: stores of schemas alike (each memory at the latest
# migration) share one, and so the translations of their statements
_CATALOGS: dict[tuple[object, ...], Catalog] = {}
_CATALOGS_LOCK = threading.Lock()


def shared_catalog(primary_keys: Mapping[str, tuple[str, ...]], columns: Mapping[str, tuple[str, ...]],
                   identity: Mapping[str, str]) -> Catalog:
    """The process's one :class:`Catalog` of these tables."""
    key = tuple(tuple(sorted(part.items())) for part in (primary_keys, columns, identity))
    with _CATALOGS_LOCK:
        found = _CATALOGS.get(key)
        if found is None:
            found = _CATALOGS[key] = Catalog(dict(primary_keys), dict(columns), dict(identity))
    return found


@functools.lru_cache(maxsize=4096)
def translated(sql: str, catalog: Catalog, *, many: bool = False) -> Translated:
    """:func:`translate` once per statement and catalog in the process (``catalog`` from :func:`shared_catalog`)."""
    return translate(sql, catalog, many=many)


@dataclass(frozen=True)
class Translated:
    sql: str
    named: bool  # parameters were ?N: pass them as {"pN": value}
    returning: str | None  # the INSERT returns this column (for lastrowid)
    writes: bool  # the statement changes data (not SELECT / SHOW)


_SQLITE_ONLY = {
    "PRAGMA": "PRAGMA statements",
    "SQLITE_MASTER": "sqlite_master",
    "SQLITE_SCHEMA": "sqlite_schema",
    "DBSTAT": "the dbstat table",
    "MATCH": "MATCH (FTS5 and sqlite-vec queries)",
    "BM25": "bm25()",
    "JSON_EACH": "json_each()",
    "JSON_TYPE": "json_type()",
    "JSON_EXTRACT": "json_extract()",
    "JSON_QUOTE": "json_quote()",
    "TYPEOF": "typeof()",
    "VACUUM": "VACUUM",
    "GLOB": "GLOB",
}
_CONDITION_BEFORE = {"WHERE", "AND", "OR", "NOT", "ON", "HAVING"}
_CONDITION_AFTER = {"AND", "OR", ")", ";", "GROUP", "ORDER", "LIMIT", "UNION", "HAVING", "EXCEPT", "INTERSECT", ""}
_READS = {"SELECT", "WITH", "SHOW", "EXPLAIN", "VALUES", "SET"}


def translate(sql: str, catalog: Catalog, *, many: bool = False) -> Translated:
    """One SQLite statement in, its PostgreSQL form out (see the module docstring)."""
    tokens = tokenize(sql)
    words = [t for t in tokens if t.kind not in ("space", "comment")]
    if not words:
        return Translated(sql, False, None, False)
    head = words[0].upper
    if head in ("CREATE", "ALTER") and len(words) > 1 and words[1].upper in ("TABLE", "TEMP", "TEMPORARY"):
        return Translated(translate_ddl(sql), False, None, True)
    for i, t in enumerate(words):
        if t.kind != "word" or t.upper not in _SQLITE_ONLY:
            continue
        called = i + 1 < len(words) and words[i + 1].text == "("
        if called or t.upper in _SQLITE_ONLY_WORDS:
            raise DialectError(
                f"{_SQLITE_ONLY[t.upper]} is SQLite-only and has no PostgreSQL translation; "
                "put this statement in a dialect-aware function (a backend method in shared_core.db, or "
                f"shared_core.index): {' '.join(sql.split())[:160]}"
            )
    out, named, upsert = _rewrite(words, catalog)
    if head == "INSERT":
        _qualify_update_columns(words, out, catalog)
    text = "".join(_with_spaces(tokens, out))
    if upsert is not None:
        text = _before_semicolon(text, " " + upsert)
    returning = None
    if head == "INSERT" and not many and "RETURNING" not in {t.upper for t in words}:
        table = _insert_table(words)
        if table is not None and table in catalog.identity:
            returning = catalog.identity[table]
            text = _before_semicolon(text, f" RETURNING {returning}")
    return Translated(text, named, returning, head not in _READS)


_SQLITE_ONLY_WORDS = {"PRAGMA", "SQLITE_MASTER", "SQLITE_SCHEMA", "DBSTAT", "VACUUM", "GLOB", "MATCH"}


def _with_spaces(original: list[Token], rewritten: dict[int, list[Token]]) -> list[str]:
    """The original tokens, whitespace kept, with significant token #i replaced by rewritten[i]."""
    parts: list[str] = []
    index = 0
    for token in original:
        if token.kind in ("space", "comment"):
            parts.append(token.text.replace("%", "%%"))
            continue
        replacement = rewritten.get(index)
        if replacement is None:  # literal % in strings and names: psycopg reads % everywhere
            parts.append(token.text.replace("%", "%%") if token.kind in ("string", "quoted", "dollar") else token.text)
        else:
            parts.extend(t.text for t in replacement)
        index += 1
    return parts


def _before_semicolon(text: str, tail: str) -> str:
    stripped = text.rstrip()
    if stripped.endswith(";"):
        return stripped[:-1].rstrip() + tail + ";"
    return stripped + tail


def _insert_table(tokens: list[Token]) -> str | None:
    for i, t in enumerate(tokens):
        if t.upper == "INTO" and i + 1 < len(tokens):
            name = tokens[i + 1]
            if i + 3 < len(tokens) and tokens[i + 2].text == ".":
                name = tokens[i + 3]
            return _unquote(name.text)
    return None


def _unquote(name: str) -> str:
    if name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name.lower()


_DROP: list[Token] = []
_CAST_TYPES = {"INTEGER": "BIGINT", "INT": "BIGINT", "REAL": "DOUBLE PRECISION", "BLOB": "BYTEA"}


def _rewrite(tokens: list[Token], catalog: Catalog) -> tuple[dict[int, list[Token]], bool, str | None]:
    """Replacements for significant tokens by index, whether params are numbered, and an ON CONFLICT tail."""
    out: dict[int, list[Token]] = {}
    named = False
    upsert: str | None = None
    n = len(tokens)

    def up(i: int) -> str:
        return tokens[i].upper if 0 <= i < n else ""

    for i, t in enumerate(tokens):
        if i in out:
            continue
        u = t.upper
        if u == "INSERT" and up(i + 1) == "OR" and up(i + 2) in ("IGNORE", "REPLACE"):
            upsert = _upsert_clause(tokens, up(i + 2), catalog)
            out[i + 1] = _DROP
            out[i + 2] = _DROP
        elif u == "REPLACE" and i == 0 and up(1) == "INTO":
            upsert = _upsert_clause(tokens, "REPLACE", catalog)
            out[i] = [Token("word", "INSERT")]
        elif t.kind == "param":
            if len(t.text) > 1:
                named = True
                out[i] = [Token("param", f"%(p{int(t.text[1:])})s")]
            else:
                out[i] = [Token("param", "%s")]
            if up(i - 1) == "IS":
                out[i - 1] = [Token("word", "IS NOT DISTINCT FROM")]
            elif up(i - 1) == "NOT" and up(i - 2) == "IS":
                out[i - 2] = [Token("word", "IS DISTINCT FROM")]
                out[i - 1] = _DROP
        elif t.kind == "op" and t.text == "%":
            out[i] = [Token("op", "%%")]
        elif t.kind == "op" and t.text == "==":
            out[i] = [Token("op", "=")]
        elif t.kind == "word" and u in ("MAX", "MIN") and up(i + 1) == "(" and _top_level_args(tokens, i + 1) > 1:
            out[i] = [Token("word", "greatest" if u == "MAX" else "least")]
        elif t.kind == "word" and up(i - 1) == "AS" and u in _CAST_TYPES and up(i + 1) == ")":
            out[i] = [Token("word", _CAST_TYPES[u])]  # SQLite's INTEGER is 64 bits, its REAL a double
        elif t.kind == "word" and u == "IFNULL" and up(i + 1) == "(":
            out[i] = [Token("word", "coalesce")]
        elif u == "LIMIT" and up(i + 1) == "-" and up(i + 2) == "1":
            out[i + 1] = [Token("word", "ALL")]
            out[i + 2] = _DROP
        elif u == "LIMIT" and i + 1 < n and tokens[i + 1].kind == "param":
            # SQLite reads a negative limit as "no limit"; PostgreSQL's is NULL
            number = tokens[i + 1].text[1:]
            mark = f"%(p{int(number)})s" if number else "%s"
            named = named or bool(number)
            out[i + 1] = [Token("word", f"nullif(greatest({mark}, -1), -1)")]
        elif (t.kind == "number" and t.text in ("0", "1") and up(i - 1) in _CONDITION_BEFORE
              and up(i + 1) in _CONDITION_AFTER and not (up(i - 1) == "AND" and _after_between(tokens, i - 1))):
            out[i] = [Token("word", "TRUE" if t.text == "1" else "FALSE")]
    return out, named, upsert


def _qualify_update_columns(tokens: list[Token], out: dict[int, list[Token]], catalog: Catalog) -> None:
    """In ``ON CONFLICT ... DO UPDATE SET``, a bare column means the table's row (SQLite), which
    PostgreSQL calls ambiguous beside ``excluded``: qualify it with the table's name."""
    upper = [t.upper for t in tokens]
    table = _insert_table(tokens)
    columns = set(catalog.columns.get(table or "", ()))
    if not columns:
        return
    for i in range(len(tokens) - 2):
        if upper[i] == "DO" and upper[i + 1] == "UPDATE" and upper[i + 2] == "SET":
            start = i + 3
            break
    else:
        return
    depth = 0
    for j in range(start, len(tokens)):
        t = tokens[j]
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            depth -= 1
        if j in out or t.kind not in ("word", "quoted") or _unquote(t.text) not in columns:
            continue
        before = tokens[j - 1].text if j > 0 else ""
        after = tokens[j + 1].text if j + 1 < len(tokens) else ""
        if before == "." or after in (".", "("):
            continue
        if depth == 0 and after == "=" and upper[j - 1] in ("SET", ","):
            continue  # the column assigned to
        out[j] = [Token("word", f"{table}.{t.text}")]


def _after_between(tokens: list[Token], and_at: int) -> bool:
    """True when the AND at ``and_at`` is the one of ``BETWEEN x AND y``."""
    depth = 0
    for token in reversed(tokens[:and_at]):
        if token.text == ")":
            depth += 1
        elif token.text == "(":
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and token.upper in ("AND", "OR", "WHERE", "ON", "HAVING", "WHEN", "THEN"):
            return False
        elif depth == 0 and token.upper == "BETWEEN":
            return True
    return False


def _top_level_args(tokens: list[Token], open_index: int) -> int:
    depth = 0
    args = 1
    for token in tokens[open_index:]:
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
            if depth == 0:
                return args
        elif token.text == "," and depth == 1:
            args += 1
    return args


def _upsert_clause(tokens: list[Token], mode: str, catalog: Catalog) -> str:
    table = _insert_table(tokens)
    if mode == "IGNORE":
        return "ON CONFLICT DO NOTHING"
    if table is None or table not in catalog.primary_keys:
        raise DialectError(f"INSERT OR REPLACE into {table!r} needs a table with a primary key on PostgreSQL")
    keys = catalog.primary_keys[table]
    columns = _insert_columns(tokens) or list(catalog.columns.get(table, ()))
    sets = [f"{c} = excluded.{c}" for c in columns if c not in keys]
    rowid = catalog.identity.get(table)
    if rowid is not None and rowid not in keys and rowid not in columns:
        sets.append(f"{rowid} = DEFAULT")  # SQLite's REPLACE deletes and re-inserts: a new rowid
    if not sets:
        return "ON CONFLICT DO NOTHING"
    return f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {', '.join(sets)}"


def _insert_columns(tokens: list[Token]) -> list[str]:
    for i, t in enumerate(tokens):
        if t.upper == "INTO":
            j = i + 2
            if j < len(tokens) and tokens[j].text == ".":
                j += 2
            if j < len(tokens) and tokens[j].text == "(":
                names: list[str] = []
                for token in tokens[j + 1 :]:
                    if token.text == ")":
                        return names
                    if token.kind in ("word", "quoted"):
                        names.append(_unquote(token.text))
            return []
    return []


# -- DDL ---------------------------------------------------------------------------------------

_TYPES = {
    "TEXT": 'TEXT COLLATE "C"',
    "VARCHAR": 'TEXT COLLATE "C"',
    "CHAR": 'TEXT COLLATE "C"',
    "CLOB": 'TEXT COLLATE "C"',
    "INTEGER": "BIGINT",
    "INT": "BIGINT",
    "BIGINT": "BIGINT",
    "REAL": "DOUBLE PRECISION",
    "FLOAT": "DOUBLE PRECISION",
    "DOUBLE": "DOUBLE PRECISION",
    "NUMERIC": "NUMERIC",
    "BLOB": "BYTEA",
    "BOOLEAN": "BIGINT",
}
IDENTITY = "BIGINT GENERATED BY DEFAULT AS IDENTITY"


def translate_ddl(sql: str) -> str:
    """``CREATE TABLE`` / ``ALTER TABLE ... ADD COLUMN`` in SQLite's types, for PostgreSQL.

    Other statements pass through unchanged (PostgreSQL's own DDL in the migrations' ``-- @postgresql`` blocks).
    """
    words = [t for t in tokenize(sql) if t.kind not in ("space", "comment")]
    if not words:
        return sql
    upper = [t.upper for t in words]
    if upper[:2] == ["ALTER", "TABLE"] and "ADD" in upper:
        at = upper.index("ADD") + 1
        if at < len(upper) and upper[at] == "COLUMN":
            at += 1
        return f"{_join(words[:at])} {_column(words[at:])}"
    if upper[0] != "CREATE" or "TABLE" not in upper[:4]:
        return sql
    if "AS" in upper and "(" not in upper[: upper.index("AS")]:
        return _join(words)  # CREATE TABLE x AS SELECT ...
    open_at = upper.index("(")
    close_at = _matching(words, open_at)
    head = [t for t in words[:open_at] if t.upper not in ("TEMP", "TEMPORARY")]
    if len(head) != len(words[:open_at]):
        head.insert(1, Token("word", "TEMPORARY"))
    items = _split_commas(words[open_at + 1 : close_at])
    options = [t.upper for t in words[close_at + 1 :]]
    without_rowid = "WITHOUT" in options and "ROWID" in options
    definitions = []
    has_rowid_alias = False
    for item in items:
        if not item:
            continue
        first = item[0].upper
        if first in ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "CONSTRAINT"):
            definitions.append(_join(item))
            continue
        definition = _column(item)
        if definition.startswith("rowid_alias:"):
            has_rowid_alias = True
            definition = definition[len("rowid_alias:") :]
        definitions.append(definition)
    names = {item[0].text.lower() for item in items if item}
    if not without_rowid and not has_rowid_alias and "rowid" not in names:
        definitions.append(f"rowid {IDENTITY}")
    return f"{_join(head)} (\n    " + ",\n    ".join(definitions) + "\n)"


def _column(tokens: list[Token]) -> str:
    """One column definition with its SQLite type mapped (prefixed 'rowid_alias:' for INTEGER PRIMARY KEY)."""
    name = tokens[0].text
    rest = tokens[1:]
    upper = [t.upper for t in rest]
    if upper[:3] == ["INTEGER", "PRIMARY", "KEY"]:
        tail = [t for t in rest[3:] if t.upper != "AUTOINCREMENT"]
        return "rowid_alias:" + f"{name} {IDENTITY} PRIMARY KEY" + (" " + _join(tail) if tail else "")
    if not rest or rest[0].kind != "word" or rest[0].upper not in _TYPES:
        if not rest or rest[0].upper in ("NOT", "NULL", "DEFAULT", "PRIMARY", "UNIQUE", "REFERENCES", "CHECK"):
            rest = _deferrable(rest)
            return f"{name} {_TYPES['TEXT']}" + (" " + _join(rest) if rest else "")
        return _join(tokens)
    mapped = _TYPES[rest[0].upper]
    skip = 1
    if len(rest) > 1 and rest[1].text == "(":  # VARCHAR(20)
        skip = _matching(rest, 1) + 1
    if rest[0].upper == "DOUBLE" and len(rest) > 1 and rest[1].upper == "PRECISION":
        skip = 2
    tail = _deferrable(rest[skip:])
    return f"{name} {mapped}" + (" " + _join(tail) if tail else "")


_ACTIONS = {"CASCADE", "RESTRICT", "NO", "ACTION", "SET", "NULL", "DEFAULT"}


def _deferrable(tokens: list[Token]) -> list[Token]:
    """Make a REFERENCES clause deferrable (SQLite's erasers defer foreign keys; PostgreSQL needs this)."""
    upper = [t.upper for t in tokens]
    if "REFERENCES" not in upper or "DEFERRABLE" in upper:
        return tokens
    i = upper.index("REFERENCES") + 2  # past the table name
    if i < len(tokens) and tokens[i].text == "(":
        i = _matching(tokens, i) + 1
    while i + 1 < len(tokens) and upper[i] == "ON" and upper[i + 1] in ("DELETE", "UPDATE"):
        i += 2
        while i < len(tokens) and upper[i] in _ACTIONS:
            i += 1
    return [*tokens[:i], Token("word", "DEFERRABLE INITIALLY IMMEDIATE"), *tokens[i:]]


def _join(tokens: list[Token]) -> str:
    return " ".join(t.text for t in tokens)


def _matching(tokens: list[Token], open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(tokens)):
        if tokens[i].text == "(":
            depth += 1
        elif tokens[i].text == ")":
            depth -= 1
            if depth == 0:
                return i
    raise DialectError("unbalanced parentheses in a CREATE TABLE statement")


def _split_commas(tokens: list[Token]) -> list[list[Token]]:
    items: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
        if token.text == "," and depth == 0:
            items.append([])
        else:
            items[-1].append(token)
    return items

"""Bearer tokens for the server: a TOML file readable only by its owner, tokens limited to namespaces.

The file (``server.tokens_file``, else ``$OPENKOI_TOKENS``, else ``tokens.toml`` beside
``config.toml``, i.e. ``~/.openkoi/tokens.toml``) is created on first run with one token for
every namespace, mode 600 in a mode-700 directory; a file that others can read is refused.

.. code-block:: toml

    [[tokens]]
    name = "default"
    token = "okm_..."            # the token itself; or sha256 = "<hex digest of the token>"
    namespaces = ["*"]           # every namespace

    [[tokens]]
    name = "alice-notebook"
    sha256 = "9f86d0..."
    namespaces = ["user:alice", "team:*"]   # exact names, or a prefix ending in *

A token may use the namespaces its patterns match; ``openkoi-memory token add`` writes new
entries (storing only the SHA-256, printing the token once), ``token list`` and ``token revoke``
manage them. A running server reads the file again when it changes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import default_config_path
from ..errors import ConfigError
from ..memories import check_namespace

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Principal", "TokenEntry", "TokenFile", "default_tokens_path", "ANONYMOUS"]

logger = logging.getLogger("openkoi.server")

TOKEN_PREFIX = "okm_"
_HEADER = """\
# openkoi-memory server tokens (docs/server.md). Keep this file private: chmod 600.
# Each [[tokens]] entry: a name, the token (token = "...") or its SHA-256 (sha256 = "..."),
# and the namespaces it may use: "*" for all, exact names, or prefixes ending in "*".
"""


def default_tokens_path() -> Path:
    """``$OPENKOI_TOKENS``, else ``tokens.toml`` in the config directory (``~/.openkoi/``)."""
    env = os.environ.get("OPENKOI_TOKENS")
    if env:
        return Path(env).expanduser()
    return default_config_path().parent / "tokens.toml"


def _check_pattern(pattern: Any) -> str:
    if not isinstance(pattern, str) or not pattern.strip():
        raise ConfigError(f"a namespace pattern must be a non-empty string, got {pattern!r}")
    if "*" in pattern[:-1]:
        raise ConfigError(f"namespace pattern {pattern!r}: '*' may only end a pattern ('team:*', or '*' for all)")
    if not pattern.endswith("*"):
        check_namespace(pattern)
    return pattern


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: the token's name and the namespaces it may use."""

    name: str
    namespaces: tuple[str, ...]

    @property
    def unrestricted(self) -> bool:
        return "*" in self.namespaces

    def allows(self, namespace: str) -> bool:
        for pattern in self.namespaces:
            if pattern.endswith("*"):
                if namespace.startswith(pattern[:-1]):
                    return True
            elif namespace == pattern:
                return True
        return False

    @property
    def default_namespace(self) -> str | None:
        """The namespace a request without one uses: the token's only namespace, if it has exactly one."""
        exact = [p for p in self.namespaces if not p.endswith("*")]
        return exact[0] if len(self.namespaces) == 1 and exact else None


ANONYMOUS = Principal("anonymous", ("*",))  # --no-auth on a loopback address


@dataclass(frozen=True)
class TokenEntry:
    """One ``[[tokens]]`` entry. ``token`` is kept only for entries written with it in clear."""

    name: str
    sha256: str
    namespaces: tuple[str, ...]
    token: str | None = None

    @property
    def principal(self) -> Principal:
        return Principal(self.name, self.namespaces)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class TokenFile:
    """The tokens of one file; :meth:`authenticate` turns a bearer token into a :class:`Principal`."""

    path: Path
    entries: list[TokenEntry] = field(default_factory=list)
    _stamp: tuple[int, ...] | None = field(default=None, repr=False)

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> TokenFile:
        """Read the file; refuse one that others can read, or that is malformed."""
        target = Path(path).expanduser() if path else default_tokens_path()
        try:
            info = target.stat()
        except FileNotFoundError:
            raise ConfigError(f"the tokens file {target} does not exist; `openkoi-memory serve` creates it on "
                              "first run, or create one with `openkoi-memory token add NAME`") from None
        if os.name == "posix" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(f"the tokens file {target} can be read by other users (mode "
                              f"{stat.S_IMODE(info.st_mode):o}); make it private: chmod 600 {target}")
        try:
            data = tomllib.loads(target.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"the tokens file {target} is not valid TOML: {exc}") from None
        unknown = set(data) - {"tokens"}
        if unknown:
            raise ConfigError(f"the tokens file {target} has unknown keys {sorted(unknown)}; it holds [[tokens]] entries")
        raw = data.get("tokens", [])
        if not isinstance(raw, list):
            raise ConfigError(f"the tokens file {target}: 'tokens' must be an array of tables ([[tokens]])")
        entries = [_entry(item, target, i) for i, item in enumerate(raw)]
        names = [e.name for e in entries]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ConfigError(f"the tokens file {target} names {duplicated[0]!r} twice; token names are unique")
        return cls(target, entries, _stamp_of(info))

    @classmethod
    def load_or_create(cls, path: str | os.PathLike[str] | None = None) -> tuple[TokenFile, str | None]:
        """The file, created with one all-namespaces token (``"default"``) if it does not exist yet.

        Returns ``(tokens, new_token)``; ``new_token`` is the token just generated, else None.
        """
        target = Path(path).expanduser() if path else default_tokens_path()
        if target.exists():
            return cls.load(target), None
        token = new_token()
        created = cls(target, [TokenEntry("default", _digest(token), ("*",), token)])
        try:
            created._write(exclusive=True)
        except FileExistsError:  # another server started at the same moment
            return cls.load(target), None
        return created, token

    # -- using --------------------------------------------------------------------------------

    def authenticate(self, token: str | None) -> Principal | None:
        """The principal of ``token``, or None. Compares digests in constant time.

        The file is read again when it changed, so added and revoked tokens count at once; if it
        became unreadable, insecure or malformed, every token is refused until it is fixed.
        """
        self._refresh()
        if not token:
            return None
        digest = _digest(token)
        found = None
        for entry in self.entries:
            if hmac.compare_digest(entry.sha256, digest):
                found = entry
        return None if found is None else found.principal

    def _refresh(self) -> None:
        if self._stamp is None:  # built in code, not read from a file
            return
        try:
            stamp: tuple[int, ...] | None = _stamp_of(self.path.stat())
        except OSError:
            stamp = None
        if stamp == self._stamp:
            return
        try:
            fresh = TokenFile.load(self.path)
        except (ConfigError, OSError) as exc:
            logger.error("refusing every token until the tokens file is fixed: %s", exc)
            self.entries, self._stamp = [], stamp
            return
        self.entries, self._stamp = fresh.entries, fresh._stamp

    # -- managing -----------------------------------------------------------------------------

    def add(self, name: str, namespaces: Sequence[str] = ("*",)) -> str:
        """Issue a token; only its SHA-256 is stored. Returns the token (shown once)."""
        if not isinstance(name, str) or not name.strip() or any(c in name for c in "\"\\\n\r"):
            raise ValueError(f"a token name must be a non-empty string without quotes or backslashes, got {name!r}")
        if any(e.name == name for e in self.entries):
            raise ValueError(f"there is already a token named {name!r}; revoke it first or choose another name")
        patterns = tuple(_check_pattern(p) for p in namespaces)
        if not patterns:
            raise ValueError("a token needs at least one namespace pattern ('*' for all)")
        token = new_token()
        self.entries.append(TokenEntry(name, _digest(token), patterns))
        self._write()
        return token

    def revoke(self, name: str) -> bool:
        """Remove the token named ``name``; True if there was one."""
        kept = [e for e in self.entries if e.name != name]
        if len(kept) == len(self.entries):
            return False
        self.entries = kept
        self._write()
        return True

    def _write(self, *, exclusive: bool = False) -> None:
        """Write atomically (a temporary file renamed over the old one), mode 600, directory 700."""
        directory = self.path.parent
        if not directory.exists():
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        parts = [_HEADER]
        for entry in self.entries:
            parts.append("\n[[tokens]]\n")
            parts.append(f"name = {json.dumps(entry.name)}\n")
            if entry.token is not None:
                parts.append(f"token = {json.dumps(entry.token)}\n")
            else:
                parts.append(f"sha256 = {json.dumps(entry.sha256)}\n")
            parts.append(f"namespaces = [{', '.join(json.dumps(p, ensure_ascii=False) for p in entry.namespaces)}]\n")
        data = "".join(parts).encode("utf-8")
        if exclusive:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            self._stamp = _stamp_of(self.path.stat())
            return
        temporary = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self._stamp = _stamp_of(self.path.stat())


def _stamp_of(info: os.stat_result) -> tuple[int, ...]:
    """Changes when the file is rewritten, replaced or chmod-ed."""
    return (info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_mode)


def new_token() -> str:
    """A fresh random token (256 bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _entry(item: Any, path: Path, index: int) -> TokenEntry:
    where = f"the tokens file {path}, entry {index + 1}"
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: expected a table with name, token or sha256, and namespaces")
    unknown = set(item) - {"name", "token", "sha256", "namespaces"}
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: 'name' must be a non-empty string")
    token, digest = item.get("token"), item.get("sha256")
    if (token is None) == (digest is None):
        raise ConfigError(f"{where} ({name!r}): give exactly one of 'token' or 'sha256'")
    if token is not None:
        if not isinstance(token, str) or len(token) < 16:
            raise ConfigError(f"{where} ({name!r}): 'token' must be a string of at least 16 characters")
        digest = _digest(token)
    elif not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower()):
        raise ConfigError(f"{where} ({name!r}): 'sha256' must be 64 hex digits")
    patterns = item.get("namespaces", ["*"])
    if isinstance(patterns, str) or not isinstance(patterns, list) or not patterns:
        raise ConfigError(f"{where} ({name!r}): 'namespaces' must be a non-empty list such as [\"*\"]")
    try:
        checked = tuple(_check_pattern(p) for p in patterns)
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"{where} ({name!r}): {exc}") from None
    return TokenEntry(name, digest.lower(), checked, token)

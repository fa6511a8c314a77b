"""What every command shares: the ``main`` group, opening the store, one-line errors.

Command modules import from here (never from the package ``__init__``), so importing a
command module can never loop back into the registration code.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

import click

from ..errors import OpenKoiError
from ..memories import DEFAULT_NAMESPACE
from ..store import MemoryStore

__all__ = ["main", "open_store", "friendly_errors", "namespace_option", "json_object", "one_line", "LIMIT",
           "MAX_LIMIT", "MAX_JSON_OPTION", "seconds"]

MAX_LIMIT = 100_000  # --limit: more than any listing needs, small enough for every backend's integers
LIMIT = click.IntRange(0, MAX_LIMIT)
MAX_JSON_OPTION = 32  # --metadata / --where: objects and lists inside each other
# sqlite-vec returns at most 4096 nearest rows per query and a search asks for 5 candidates per result
# (search.py), so one-shot commands that want more than this many results load the RAM mirror instead
_SQLITE_VEC_RESULTS = 4096 // 5


def open_store(ctx: click.Context, *, results: int | None = None, **kwargs: Any) -> MemoryStore:
    """The store named by ``--db``; one-shot commands search through sqlite-vec, not the RAM mirror.

    ``results``: how many results the command's search asks the store for; past what one sqlite-vec
    query returns, the command searches the RAM mirror like a server does (slower to open, same answer).
    """
    options = ctx.find_root().params
    one_shot = kwargs.pop("one_shot", True) and (results is None or results <= _SQLITE_VEC_RESULTS)
    overrides = {"search": {"vector_index": "sqlite-vec"}} if one_shot else None
    kwargs.setdefault("embedder", options.get("embedder") or None)
    store = MemoryStore.open(options.get("db"), config=overrides, **kwargs)
    ctx.call_on_close(store.close)
    return store


MAX_TTL_SECONDS = 100 * 365 * 86400  # the REST API's bound too


def seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback: a finite, positive number of seconds (at most 100 years), or None."""
    if value is None:
        return None
    if not math.isfinite(value) or not 0 < value <= MAX_TTL_SECONDS:
        raise click.BadParameter(f"must be a number of seconds above 0 and at most {MAX_TTL_SECONDS:,} (100 years), "
                                 f"got {value}")
    return value


def one_line(exc: BaseException) -> click.ClickException | None:
    """The one-line error a command prints for ``exc``; None for what is a bug (let it show its trace)."""
    if isinstance(exc, click.ClickException):
        return exc
    if isinstance(exc, RecursionError):
        return click.ClickException("the input is nested too deeply (objects or lists inside each other); flatten it")
    if isinstance(exc, OverflowError):
        return click.ClickException(f"a number is out of range ({exc}); give a smaller one")
    if isinstance(exc, UnicodeError):
        return click.ClickException(f"{type(exc).__name__}: text must be valid UTF-8 ({exc})")
    if isinstance(exc, ValueError) and "null byte" in str(exc):  # a path or a name with a NUL (os.stat, open)
        return click.ClickException("a path or a name contains a NUL character (\\0); remove it")
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        return click.ClickException(f"{type(exc).__name__}: cannot use{where}: {exc.strerror or exc}")
    if isinstance(exc, (OpenKoiError, ValueError, TypeError, ImportError)):
        return click.ClickException(f"{type(exc).__name__}: {exc}")
    return None


def friendly_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn library errors and bad arguments into a one-line message and exit status 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            error = one_line(exc)
            if error is None:
                raise
            raise error from None

    return wrapper


class _Main(click.Group):
    """The ``main`` group: errors raised while click reads arguments (a ``--db`` or a path with a NUL, a
    name too long for the file system) print as one line too, like the commands' own."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except Exception as exc:
            error = one_line(exc)
            if error is None:
                raise
            raise error from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            error = one_line(exc)
            if error is None:
                raise
            raise error from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="OPENKOI_DB", type=click.Path(dir_okay=False), default=None,
              help="The memory: a file or a postgresql:// URL (default: $OPENKOI_DATABASE_URL, else "
                   "<data dir>/openkoi.db; env OPENKOI_DB).")
@click.option("--embedder", envvar="OPENKOI_EMBEDDER", default=None, metavar="NAME",
              help="The embedder of a new memory, e.g. openai/text-embedding-3-small or ollama/nomic-embed-text "
                   "(default: [models] embedder; an existing memory keeps its own: move it with `reembed`; "
                   "env OPENKOI_EMBEDDER).")
@click.version_option(package_name="openkoi-memory")
def main(db: str | None, embedder: str | None) -> None:
    """openkoi-memory: local-first long-term memory for LLM agents, in one SQLite file."""


namespace_option = click.option(
    "-n", "--namespace", default=DEFAULT_NAMESPACE, show_default=True, help="Namespace (a user, an agent, a thread)."
)


def json_object(text: str | None, option: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, nested at most :data:`MAX_JSON_OPTION` deep; else a usage error naming ``option``."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=option) from None
    except RecursionError:
        raise click.BadParameter(f"nested more than {MAX_JSON_OPTION} levels deep; flatten it",
                                 param_hint=option) from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint=option)
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > MAX_JSON_OPTION:
                raise click.BadParameter(f"nested more than {MAX_JSON_OPTION} levels deep; flatten it",
                                         param_hint=option)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return value



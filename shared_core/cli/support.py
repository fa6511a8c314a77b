"""What every command shares: the ``main`` group, opening the store, one-line errors.

Command modules import from here (never from the package ``__init__``), so importing a
command module can never loop back into the registration code.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import click

from ..errors import OpenKoiError
from ..memories import DEFAULT_NAMESPACE
from ..store import MemoryStore

__all__ = ["main", "open_store", "friendly_errors", "namespace_option", "json_object"]


def open_store(ctx: click.Context, **kwargs: Any) -> MemoryStore:
    """The store named by ``--db``; one-shot commands search through sqlite-vec, not the RAM mirror."""
    options = ctx.find_root().params
    overrides = {"search": {"vector_index": "sqlite-vec"}} if kwargs.pop("one_shot", True) else None
    store = MemoryStore.open(options.get("db"), config=overrides, **kwargs)
    ctx.call_on_close(store.close)
    return store


def friendly_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn library errors and bad arguments into a one-line message and exit status 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (OpenKoiError, ValueError, TypeError, FileNotFoundError, PermissionError, ImportError) as exc:
            name = type(exc).__name__
            raise click.ClickException(f"{name}: {exc}") from None

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="OPENKOI_DB", type=click.Path(dir_okay=False), default=None,
              help="The memory: a file or a postgresql:// URL (default: $OPENKOI_DATABASE_URL, else "
                   "<data dir>/openkoi.db; env OPENKOI_DB).")
@click.version_option(package_name="openkoi-memory")
def main(db: str | None) -> None:
    """openkoi-memory: local-first long-term memory for LLM agents, in one SQLite file."""


namespace_option = click.option(
    "-n", "--namespace", default=DEFAULT_NAMESPACE, show_default=True, help="Namespace (a user, an agent, a thread)."
)


def json_object(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=option) from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint=option)
    return value



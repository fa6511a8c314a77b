"""Command-line access to conversations and the forgetting engine."""

from __future__ import annotations

import json
from typing import Any

import click

from .support import friendly_errors, open_store

__all__ = ["sessions", "forget"]


def _run(ctx: click.Context, body: Any, **kwargs: Any) -> None:
    friendly_errors(body)(open_store(ctx), **kwargs)


@click.command()
@click.argument("session_id", required=False)
@click.option("-n", "--namespace", default=None, help="Only this namespace (default: all).")
@click.option("--last", type=int, help="Only the last N messages of SESSION_ID.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
@click.pass_context
def sessions(ctx: click.Context, **kwargs: Any) -> None:
    """List sessions, or print SESSION_ID's messages in order."""
    _run(ctx, _sessions, **kwargs)


def _sessions(store: Any, session_id: str | None, namespace: str | None, last: int | None, as_json: bool) -> None:
    convs = store.conversations
    if session_id is None:
        for session in convs.sessions(namespace=namespace):
            if as_json:
                click.echo(json.dumps(session.to_dict(), ensure_ascii=False))
            else:
                click.echo(f"{session.id}  {session.namespace}  {convs.count(session.id)} messages  "
                           f"updated {session.updated_at:%Y-%m-%d %H:%M}")
        return
    messages = convs.messages(session_id, namespace=namespace, last=last)
    if not messages:
        raise click.ClickException(f"no messages in session {session_id!r}")
    for message in messages:
        if as_json:
            click.echo(json.dumps(message.to_dict(), ensure_ascii=False))
        else:
            click.echo(f"[{message.seq}] {message.role}: {message.content}")


@click.command()
@click.option("-n", "--namespace", default="default", show_default=True, help="The namespace to run for.")
@click.option("--all", "all_namespaces", is_flag=True, help="Every namespace that has messages.")
@click.option("--dry-run", is_flag=True, help="Report what would change without changing it.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def forget(ctx: click.Context, **kwargs: Any) -> None:
    """Run the forgetting engine (OpenLoomi): promote or compress old raw messages."""
    _run(ctx, _forget, **kwargs)


def _forget(store: Any, namespace: str, all_namespaces: bool, dry_run: bool, as_json: bool) -> None:
    engine = store.forgetting
    reports = engine.run_all(dry_run=dry_run) if all_namespaces else [engine.run(namespace, dry_run=dry_run)]
    for report in reports:
        if as_json:
            click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
            continue
        promoted = ", ".join(f"{k} {v}" for k, v in report.promoted.items())
        compressed = ", ".join(f"{k} {v}" for k, v in report.compressed.items())
        click.echo(f"{report.namespace}: {report.status}; promoted {promoted or '-'}; compressed {compressed or '-'}; "
                   f"{len(report.summary_ids)} summaries")

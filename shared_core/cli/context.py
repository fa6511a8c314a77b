"""Command-line access to conversation memory: ``context``, ``compact``, ``end-session``, ``workspace``."""

from __future__ import annotations

import json
from typing import Any

import click

from ..context.messages import turn_of
from .support import LIMIT, friendly_errors, namespace_option, open_store

__all__ = ["context_command", "compact_command", "end_session_command", "workspace"]


@click.command("context")
@click.argument("session_id")
@click.option("-q", "--query", help="What the next turn is about (default: the session's last user message).")
@click.option("-b", "--budget", type=int, help="Token budget (default: recall.budget_fraction x recall.task_token_budget).")
@click.option("-n", "--namespace", default=None, help="Namespace (default: the session's, else 'default').")
@click.option("--json", "as_json", is_flag=True, help="Print the sections as JSON.")
@click.pass_context
@friendly_errors
def context_command(ctx: click.Context, session_id: str, query: str | None, budget: int | None,
                    namespace: str | None, as_json: bool) -> None:
    """The prompt addendum memory adds for SESSION_ID: workspace files, summary, facts, learnings, episodes."""
    addendum = open_store(ctx).memory_manager.build_context(session_id, query, budget, namespace=namespace)
    if as_json:
        click.echo(json.dumps(addendum.to_dict(), ensure_ascii=False, indent=2))
        return
    text = addendum.render()
    if text:
        click.echo(text)
    else:
        click.echo("nothing to add", err=True)
    click.echo(f"({addendum.tokens_used} of {addendum.token_budget} tokens)", err=True)


@click.command("compact")
@click.argument("session_id")
@click.option("-p", "--preset", type=click.Choice(["openkoi", "openmotoko", "fleet"]),
              help="The policy (default: context.preset).")
@click.option("-w", "--window", type=int, help="The model's context window in tokens (default: context.window_tokens).")
@click.option("--force", is_flag=True, help="Compact even when the policy says it is not due.")
@click.option("--dry-run", is_flag=True, help="Only show the token count and what is due; store nothing.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@friendly_errors
def compact_command(ctx: click.Context, session_id: str, preset: str | None, window: int | None, force: bool,
                    dry_run: bool, as_json: bool) -> None:
    """Run the context manager over a stored session: store its facts and summary, show what the model would see.

    The stored messages are never changed: compaction decides what is sent, the transcript stays whole.
    """
    store = open_store(ctx)
    session = store.conversations.session(session_id)
    overrides: dict[str, Any] = {"window_tokens": window} if window else {}
    manager = store.memory_manager.context_manager(preset, namespace=session.namespace, session_id=session.id,
                                                   **overrides)
    messages = store.conversations.messages(session.id)
    status = manager.status(messages)
    if dry_run:
        data = {"policy": manager.policy.describe(), "messages": status.messages, "tokens": status.tokens,
                "compact_threshold": status.compact_threshold, "flush_threshold": status.flush_threshold,
                "unread": status.unread, "flush_due": status.flush_due, "compact_due": status.compact_due}
        click.echo(json.dumps(data, indent=2) if as_json else "\n".join(f"{k}: {v}" for k, v in data.items()))
        return
    result = manager.compact(messages, force=True) if force else manager.manage(messages)
    if as_json:
        click.echo(json.dumps({
            "action": result.action, "reason": result.reason, "tokens_before": result.tokens_before,
            "tokens_after": result.tokens_after, "compacted": result.compacted, "summary_id": result.summary_id,
            "facts": [{"id": f.id, "text": f.text, "event": f.event, "category": f.category} for f in result.facts],
            "messages": [_chat(m) for m in result.messages],
        }, ensure_ascii=False, indent=2))
        return
    click.echo(f"{result.action}: {result.tokens_before} -> {result.tokens_after} tokens"
               + (f" ({result.reason})" if result.reason else ""), err=True)
    for fact in result.facts:
        click.echo(f"stored [{fact.event}] {fact.text}", err=True)
    if result.action == "compact":
        for message in result.messages:
            item = _chat(message)
            click.echo(f"{item['role']}: {item['content']}")


@click.command("end-session")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@friendly_errors
def end_session_command(ctx: click.Context, session_id: str, as_json: bool) -> None:
    """End SESSION_ID: store the facts of messages not read yet and the session's summary (Koshi)."""
    result = open_store(ctx).memory_manager.end_session(session_id)
    if as_json:
        click.echo(json.dumps({"session_id": result.session_id, "summary_id": result.summary_id,
                               "summary": result.summary, "method": result.method,
                               "facts": [{"id": f.id, "text": f.text, "event": f.event} for f in result.facts]},
                              ensure_ascii=False, indent=2))
        return
    for fact in result.facts:
        click.echo(f"stored [{fact.event}] {fact.text}")
    click.echo(f"summary {result.summary_id}: {len(result.summary)} characters ({result.method})")


def _chat(message: Any) -> dict[str, Any]:
    role, text, *_ = turn_of(message)
    return {"role": role, "content": text}


@click.group()
def workspace() -> None:
    """The workspace folder (the agent fleet): AGENTS/SOUL/USER/MEMORY/HEARTBEAT.md, daily logs, learnings."""


def _workspace(ctx: click.Context, namespace: str, path: str | None) -> Any:
    space = open_store(ctx).memory_manager.workspace(namespace, path=path)
    if space is None:
        raise click.ClickException("workspaces are off for this store (workspace.enabled); pass --path to use one")
    return space


_path_option = click.option("--path", type=click.Path(file_okay=False), help="The folder (default: under the data dir).")


@workspace.command("init")
@namespace_option
@_path_option
@click.pass_context
@friendly_errors
def workspace_init(ctx: click.Context, namespace: str, path: str | None) -> None:
    """Make the folder and its missing files from templates."""
    space = _workspace(ctx, namespace, path)
    written = space.init()
    click.echo(f"{space.path}: created {', '.join(written) if written else 'nothing (all files exist)'}")


@workspace.command("sync")
@namespace_option
@_path_option
@click.pass_context
@friendly_errors
def workspace_sync(ctx: click.Context, namespace: str, path: str | None) -> None:
    """Re-index the files edited by hand (new, changed, deleted) into the search index."""
    report = _workspace(ctx, namespace, path).sync()
    click.echo(str(report))
    if report.errors:
        raise click.ClickException(f"{len(report.errors)} file(s) could not be read")


@workspace.command("show")
@namespace_option
@_path_option
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@friendly_errors
def workspace_show(ctx: click.Context, namespace: str, path: str | None, as_json: bool) -> None:
    """List the workspace's files: size, and whether the index is current."""
    space = _workspace(ctx, namespace, path)
    states = space.status()
    if as_json:
        click.echo(json.dumps({"path": str(space.path), "files": states}, indent=2))
        return
    click.echo(str(space.path))
    for item in states:
        state = "indexed" if item["current"] else ("stale" if item["indexed"] else "not indexed")
        if not item["exists"]:
            state = "deleted (sync removes it)"
        click.echo(f"  {item['file']}  {item['bytes']} bytes  {state}")


@workspace.command("search")
@click.argument("query")
@namespace_option
@click.option("-l", "--limit", type=LIMIT, default=5, show_default=True)
@click.option("--all", "everything", is_flag=True, help="Search the database too, not only the files.")
@click.pass_context
@friendly_errors
def workspace_search(ctx: click.Context, query: str, namespace: str, limit: int, everything: bool) -> None:
    """Search the workspace files (BM25 + vectors), or with --all the files and the database together."""
    store = open_store(ctx, results=limit)
    if everything:
        hits = store.memory_manager.search(query, namespace=namespace, limit=limit)
    else:
        space = store.memory_manager.workspace(namespace)
        if space is None:
            raise click.ClickException("workspaces are off for this store (workspace.enabled)")
        hits = space.search(query, limit=limit)
    for hit in hits:
        where = hit.memory.metadata.get("path") or hit.memory.kind
        click.echo(f"[{where}] {' '.join(hit.text.split())[:200]}  ({hit.score:.3f})")

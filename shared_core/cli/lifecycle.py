"""``openkoi-memory prune`` and ``openkoi-memory links``."""

from __future__ import annotations

import json

import click

from ..config import parse_size
from .support import LIMIT, friendly_errors, open_store

__all__ = ["prune", "links"]


@click.command()
@click.option("--if-due", is_flag=True, help="Only if a time of memory.prune_schedule has passed since the last run.")
@click.option("--dry-run", is_flag=True, help="Show what would be archived; change nothing.")
@click.option("--until-under", is_flag=True, help="Repeat rounds until the live data is under the limit.")
@click.option("--max-size", help="Use this limit instead of memory.max_size, e.g. 50MB.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
@friendly_errors
def prune(ctx: click.Context, if_due: bool, dry_run: bool, until_under: bool, max_size: str | None,
          as_json: bool) -> None:
    """Archive the bottom memories (Koshi) when the live data is over memory.max_size."""
    store = open_store(ctx)
    if max_size is not None:
        store.config.memory.max_size = parse_size(max_size)
    report = store.pruning.run(if_due=if_due, dry_run=dry_run, until_under=until_under)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    click.echo(str(report))
    if dry_run and report.archived_ids:
        click.echo("would archive: " + " ".join(report.archived_ids))
    if report.next_due is not None and report.status == "not_due":
        click.echo(f"next due: {report.next_due.isoformat()}")


@click.command()
@click.argument("memory_id")
@click.option("--min-strength", type=float, default=0.0, show_default=True)
@click.option("-l", "--limit", type=LIMIT, default=20, show_default=True)
@click.pass_context
@friendly_errors
def links(ctx: click.Context, memory_id: str, min_strength: float, limit: int) -> None:
    """The memories linked to MEMORY_ID by co-recall (Hebbian links), strongest first."""
    store = open_store(ctx)
    found = store.links.neighbours(memory_id, min_strength=min_strength, limit=limit)
    if not found:
        click.echo("no links", err=True)
    for link in found:
        click.echo(f"[id:{link.other}] strength {link.strength:g}")


@click.command()
@click.option("--if-due", is_flag=True, help="Only if the schedule (memory.prune_schedule) fired since the last run.")
@click.option("--step", "steps", multiple=True, help="Run only these steps (repeatable).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@friendly_errors
def maintain(ctx: click.Context, if_due: bool, steps: tuple[str, ...], as_json: bool) -> None:
    """Run every lifecycle job: task recovery, TTL sweep, decay, forgetting, pruning, re-embedding, ..."""
    report = open_store(ctx).maintain(if_due=if_due, steps=list(steps) or None)
    if as_json:
        click.echo(json.dumps({"status": report.status, "changed": report.changed,
                               "steps": [s.__dict__ for s in report.steps]}, default=str, indent=2))
    else:
        click.echo(str(report))
    if report.errors:
        ctx.exit(1)

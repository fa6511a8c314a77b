"""Command-line commands for learning and recall: ``recall``, ``learnings``, ``skills``, ``history``."""

from __future__ import annotations

import json

import click

from ..clock import to_iso
from .support import friendly_errors, namespace_option, open_store

__all__ = ["recall_command", "learnings_command", "skills_command", "history_command"]


@click.command("recall")
@click.argument("task")
@namespace_option
@click.option("-c", "--category", help="The task's category (lets that category's learnings and skills in).")
@click.option("-b", "--budget", type=int, help="Token budget (default: 1/10 of recall.task_token_budget).")
@click.option("--json", "as_json", is_flag=True, help="Print the items as JSON.")
@click.pass_context
@friendly_errors
def recall_command(ctx: click.Context, task: str, namespace: str, category: str | None, budget: int | None,
                   as_json: bool) -> None:
    """What past tasks taught about TASK, as a prompt section within a token budget."""
    result = open_store(ctx).recall(task, token_budget=budget, category=category, namespace=namespace)
    if as_json:
        click.echo(json.dumps({
            "task": result.task, "token_budget": result.token_budget, "tokens_used": result.tokens_used,
            "items": [{"section": i.section, "id": i.id, "score": i.score, "tokens": i.tokens, "text": i.text}
                      for i in result.items],
        }, ensure_ascii=False, indent=2))
        return
    if not result:
        click.echo("nothing to recall", err=True)
        return
    click.echo(result.prompt)
    click.echo(f"({result.tokens_used} of {result.token_budget} tokens)", err=True)


@click.command("learnings")
@namespace_option
@click.option("-t", "--type", "kind", type=click.Choice(["Heuristic", "AntiPattern", "Preference"]))
@click.option("-c", "--category")
@click.option("--decay", is_flag=True, help="Apply confidence decay first (prunes below the threshold).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@friendly_errors
def learnings_command(ctx: click.Context, namespace: str, kind: str | None, category: str | None, decay: bool,
                      as_json: bool) -> None:
    """List learnings with their current (decayed) confidence."""
    store = open_store(ctx)
    if decay:
        report = store.learnings.apply_decay()
        click.echo(f"decay: {report.updated} updated, {report.pruned} pruned", err=True)
    for learning in store.learnings.list(namespace=namespace, type=kind, category=category):
        if as_json:
            click.echo(json.dumps({
                "id": learning.id, "type": learning.type.value, "content": learning.content,
                "category": learning.category, "confidence": learning.confidence,
                "reinforced": learning.reinforced, "last_used": to_iso(learning.last_used),
            }, ensure_ascii=False))
        else:
            click.echo(f"[id:{learning.id}] {learning.confidence:.2f} {learning.type.value:11s} {learning.content}")


@click.command("skills")
@click.argument("category", required=False)
@namespace_option
@click.option("--sync", "do_sync", is_flag=True, help="Index new and changed SKILL.md files first.")
@click.pass_context
@friendly_errors
def skills_command(ctx: click.Context, category: str | None, namespace: str, do_sync: bool) -> None:
    """Rank skills for CATEGORY by average score, or list the indexed SKILL.md files."""
    store = open_store(ctx)
    if do_sync:
        report = store.skills.sync(namespace=namespace)
        click.echo(f"sync: {len(report.added)} added, {len(report.updated)} updated, {len(report.removed)} removed",
                   err=True)
    if category:
        for score in store.skills.rank(category, namespace=namespace):
            click.echo(f"{score.avg_score:.3f}  n={score.sample_count:<4d} {score.skill_name}")
        return
    for skill in store.skills.files(namespace=namespace):
        click.echo(f"{skill.origin:9s} {skill.name}: {skill.description}")


@click.command("history")
@click.argument("memory_id")
@click.pass_context
@friendly_errors
def history_command(ctx: click.Context, memory_id: str) -> None:
    """Every version of a fact, oldest first (valid from / to, and what replaced it)."""
    for memory in open_store(ctx).history(memory_id):
        until = to_iso(memory.valid_to) or "now"
        click.echo(f"[id:{memory.id}] {to_iso(memory.valid_from)} .. {until}  {memory.text}")

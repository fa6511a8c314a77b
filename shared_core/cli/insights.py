"""``openkoi-memory insights ...``: add, list, rank, view, favourite, search and extract insights."""

from __future__ import annotations

import json
from typing import Any

import click

from ..insights.records import IMPORTANCE_LEVELS, URGENCY_LEVELS
from .support import LIMIT, friendly_errors, namespace_option, open_store

__all__ = ["insights"]


@click.group()
def insights() -> None:
    """Structured insights with value scores, weights and trends (OpenLoomi)."""


@insights.command("add")
@click.argument("title")
@click.argument("description", required=False, default="")
@namespace_option
@click.option("--importance", type=click.Choice(IMPORTANCE_LEVELS), default="medium", show_default=True)
@click.option("--urgency", type=click.Choice(URGENCY_LEVELS), default="medium", show_default=True)
@click.option("--label", "task_label", help="Task label, e.g. decision, action_item, bug_report.")
@click.option("--key", "dedupe_key", help="Dedupe key (default: the title's words).")
@click.option("--bot", "bot_id", default="default", show_default=True)
@click.pass_context
@friendly_errors
def add(ctx: click.Context, title: str, description: str, namespace: str, importance: str, urgency: str,
        task_label: str | None, dedupe_key: str | None, bot_id: str) -> None:
    """Add or update an insight; prints its id."""
    insight = open_store(ctx).insights.upsert(
        title, description, namespace=namespace, importance=importance, urgency=urgency, task_label=task_label,
        dedupe_key=dedupe_key, bot_id=bot_id)
    click.echo(insight.id)


@insights.command("top")
@namespace_option
@click.option("-l", "--limit", type=LIMIT, default=10, show_default=True)
@click.option("--label", "task_label")
@click.option("--state", type=click.Choice(["active", "dormant"]))
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@friendly_errors
def top(ctx: click.Context, namespace: str, limit: int, task_label: str | None, state: str | None,
        as_json: bool) -> None:
    """Insights by value score x weight, best first."""
    ranked = open_store(ctx).insights.rank(namespace=namespace, limit=limit, task_label=task_label, state=state)
    for entry in ranked:
        if as_json:
            click.echo(json.dumps(entry.to_dict(), ensure_ascii=False, default=str))
            continue
        w = entry.weights
        click.echo(f"{entry.rank:3d}. {entry.score:.3f}  [{entry.insight.importance}/{entry.insight.urgency}] "
                   f"{entry.insight.title}  ({w.state}, {w.trend}, 30d {w.access_count_30d}) [id:{entry.insight.id}]")
    if not ranked and not as_json:
        click.echo("no insights", err=True)


@insights.command("show")
@click.argument("insight_id")
@click.pass_context
@friendly_errors
def show(ctx: click.Context, insight_id: str) -> None:
    """One insight with its value score and weights, as JSON."""
    entry = open_store(ctx).insights.ranked(insight_id)
    click.echo(json.dumps(entry.to_dict(), ensure_ascii=False, indent=2, default=str))


@insights.command("view")
@click.argument("insight_id")
@click.pass_context
@friendly_errors
def view(ctx: click.Context, insight_id: str) -> None:
    """Record that the insight was looked at (access log, view boost)."""
    store = open_store(ctx)
    store.insights.view(insight_id)
    click.echo(f"[id:{insight_id}] weight {store.insights.weights(insight_id).weight:.3f}")


@insights.command("favorite")
@click.argument("insight_id")
@click.option("--off", is_flag=True, help="Remove the favourite mark.")
@click.pass_context
@friendly_errors
def favorite(ctx: click.Context, insight_id: str, off: bool) -> None:
    """Mark an insight as a favourite (x1.5 for 7 days), or unmark it."""
    insight = open_store(ctx).insights.favorite(insight_id, on=not off)
    click.echo(f"[id:{insight.id}] favourite {'on' if insight.favorite else 'off'}")


@insights.command("search")
@click.argument("query")
@namespace_option
@click.option("-l", "--limit", type=LIMIT, default=5, show_default=True)
@click.pass_context
@friendly_errors
def search(ctx: click.Context, query: str, namespace: str, limit: int) -> None:
    """Search insights by keywords and meaning."""
    found = open_store(ctx, results=limit).insights.search(query, namespace=namespace, limit=limit)
    for hit in found:
        click.echo(f"[id:{hit.insight.id}] {hit.score:.4f}  {hit.insight.title}")
    if not found:
        click.echo("no matches", err=True)


@insights.command("extract")
@click.argument("source", type=click.File("r", encoding="utf-8"), default="-")
@namespace_option
@click.option("--platform")
@click.option("--channel")
@click.option("--bot", "bot_id", default="default", show_default=True)
@click.option("--rules", is_flag=True, help="Use the rule-based extractor even if a text model is configured.")
@click.pass_context
@friendly_errors
def extract(ctx: click.Context, source: Any, namespace: str, platform: str | None, channel: str | None, bot_id: str,
            rules: bool) -> None:
    """Extract insights from SOURCE (default stdin): one message per line, plain text or a JSON object."""
    messages: list[Any] = []
    for number, line in enumerate(source, 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                messages.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise click.BadParameter(f"line {number} is not valid JSON: {exc}", param_hint="SOURCE") from None
        else:
            messages.append(line)
    result = open_store(ctx).insights.extract(messages, namespace=namespace, bot_id=bot_id, platform=platform,
                                              channel=channel, use_model=False if rules else None)
    for insight in result.insights:
        click.echo(f"[id:{insight.id}] {insight.title}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"{result.method}: {result.created} created, {result.updated} updated, {result.unchanged} unchanged",
               err=True)

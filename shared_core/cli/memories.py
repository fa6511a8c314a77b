"""Commands for single memories: add, search, show, reinforce, demote, update, delete, erase (a whole
namespace), stats, reembed, export, import, and the demo."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import click

from .support import (
    LIMIT,
    friendly_errors,
    json_object,
    main,
    namespace_option,
    open_store,
    seconds,
)


@main.command()
@click.argument("text")
@namespace_option
@click.option("-t", "--tag", "tags", multiple=True, help="A tag (repeatable, or comma-separated).")
@click.option("-c", "--category", help="Topical category, e.g. infrastructure.")
@click.option("-k", "--kind", default="fact", show_default=True)
@click.option("-s", "--source", default="user", show_default=True, help="Provenance (conversation, agent, ...).")
@click.option("-m", "--metadata", help="Metadata as a JSON object.")
@click.option("--id", "memory_id", help="Choose the id (an existing id is updated).")
@click.option("--ttl", type=float, callback=seconds, help="Expire after this many seconds.")
@click.pass_context
@friendly_errors
def add(ctx: click.Context, text: str, namespace: str, tags: tuple[str, ...], category: str | None, kind: str,
        source: str, metadata: str | None, memory_id: str | None, ttl: float | None) -> None:
    """Remember TEXT; prints the id (and whether a near-duplicate was reinforced instead)."""
    meta = json_object(metadata, "--metadata")
    tag_list = [t for chunk in tags for t in chunk.split(",")]
    store = open_store(ctx)
    result = store.add(text, namespace=namespace, tags=tag_list, category=category, kind=kind, source=source,
                       metadata=meta, id=memory_id, ttl=ttl)
    click.echo(result if result.event == "created" else f"{result} ({result.event})")


@main.command()
@click.argument("query")
@namespace_option
@click.option("-l", "--limit", type=LIMIT, default=5, show_default=True)
@click.option("-k", "--kind", multiple=True, help="Only these kinds (repeatable).")
@click.option("-t", "--tag", "tags", multiple=True, help="Only memories with any of these tags.")
@click.option("-w", "--where", help='Metadata filter as JSON, e.g. \'{"project": "atlas"}\'.')
@click.option("--fusion", type=click.Choice(["keyword_first", "weighted", "rrf", "keyword", "vector"]))
@click.option("--explain", is_flag=True, help="Show how each score was made.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
@click.pass_context
@friendly_errors
def search(ctx: click.Context, query: str, namespace: str, limit: int, kind: tuple[str, ...], tags: tuple[str, ...],
           where: str | None, fusion: str | None, explain: bool, as_json: bool) -> None:
    """Hybrid search; results show ids as [id:...] for reinforce/demote."""
    store = open_store(ctx, results=limit)
    hits = store.search(query, namespace=namespace, limit=limit, kind=list(kind) or None, tags=list(tags) or None,
                        where=json_object(where, "--where"), fusion=fusion)
    for hit in hits:
        if as_json:
            click.echo(json.dumps(hit.to_dict(), ensure_ascii=False))
            continue
        click.echo(f"[id:{hit.id}] {hit.score:.4f}  {hit.text}")
        if explain:
            click.echo(f"    {hit.explain()}")
    if not hits and not as_json:
        click.echo("no matches", err=True)


@main.command()
@click.argument("memory_id")
@click.pass_context
@friendly_errors
def show(ctx: click.Context, memory_id: str) -> None:
    """Print one memory as JSON."""
    click.echo(json.dumps(open_store(ctx).get(memory_id).to_dict(), ensure_ascii=False, indent=2))


@main.command()
@click.argument("memory_id")
@click.pass_context
@friendly_errors
def reinforce(ctx: click.Context, memory_id: str) -> None:
    """This memory was useful: score +3, recency clock reset (Koshi)."""
    memory = open_store(ctx).reinforce(memory_id)
    click.echo(f"[id:{memory.id}] score {memory.score:+g}")


@main.command()
@click.argument("memory_id")
@click.pass_context
@friendly_errors
def demote(ctx: click.Context, memory_id: str) -> None:
    """This memory is wrong, stale or irrelevant: score -1 (Koshi)."""
    memory = open_store(ctx).demote(memory_id)
    click.echo(f"[id:{memory.id}] score {memory.score:+g}")


@main.command()
@click.argument("memory_id")
@click.argument("text", required=False)
@click.option("-t", "--tags", help="Replace the tags (comma-separated).")
@click.option("-m", "--metadata", help="Replace the metadata (JSON object).")
@click.pass_context
@friendly_errors
def update(ctx: click.Context, memory_id: str, text: str | None, tags: str | None, metadata: str | None) -> None:
    """Fix a memory in place: score kept, recency refreshed, re-indexed."""
    if text is None and tags is None and metadata is None:
        raise click.UsageError("give new TEXT, --tags or --metadata")
    memory = open_store(ctx).update(memory_id, text, tags=tags, metadata=json_object(metadata, "--metadata"))
    click.echo(f"[id:{memory.id}] updated")


@main.command()
@click.argument("memory_ids", nargs=-1, required=True)
@click.pass_context
@friendly_errors
def delete(ctx: click.Context, memory_ids: tuple[str, ...]) -> None:
    """Remove memories for good."""
    count = open_store(ctx).delete(list(memory_ids))
    click.echo(f"deleted {count}")


PENDING_EXIT = 3  # `erase`: something of the namespace is still there (see the report)


@main.command()
@click.argument("namespace", required=False)
@click.option("--verify", is_flag=True, help="Erase nothing: report what remains of NAMESPACE (without one: whether "
                                             "an erase is unfinished).")
@click.option("--finish", is_flag=True, help="Erase nothing new: finish an erase that reported pending.")
@click.option("--wait", type=click.FloatRange(0, 86_400), default=0.0, show_default=True,
              help="Seconds to keep trying while another connection's read still holds old pages.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
@friendly_errors
def erase(ctx: click.Context, namespace: str | None, verify: bool, finish: bool, wait: float, as_json: bool) -> None:
    """Erase NAMESPACE for good: its rows, index entries, archive, transcripts, uploads, workspace
    files, and the bytes they left in the database file and its log (docs/privacy.md).

    Exit status 0 when nothing remains, 3 while something does (the report says what and why:
    usually another connection reading an old snapshot; run `erase --finish` once it has ended).
    """
    if verify and finish:
        raise click.UsageError("--verify and --finish cannot be combined: --finish already reports what remains")
    if namespace is None and not (verify or finish):
        raise click.UsageError("name the namespace to erase, e.g. `openkoi-memory erase user:alice` (or use "
                               "--verify / --finish)")
    store = open_store(ctx)
    if verify:
        report = store.verify_erase(namespace)
    elif finish:
        report = store.finish_erase(wait=wait)
        if namespace is not None:
            report = dataclasses.replace(report, namespace=namespace, remaining=store.verify_erase(namespace).remaining)
    else:
        report = store.erase_namespace(namespace)  # type: ignore[arg-type]
        if not report.complete and wait > 0:
            store.finish_erase(wait=wait)
            report = dataclasses.replace(report, remaining=store.verify_erase(namespace).remaining)
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else str(report))
    if not report.complete:
        ctx.exit(PENDING_EXIT)


@main.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@friendly_errors
def stats(ctx: click.Context, as_json: bool) -> None:
    """What the store holds: counts by kind and namespace, embedder, driver, size."""
    info = open_store(ctx).stats()
    if as_json:
        click.echo(json.dumps(info.__dict__, indent=2))
        return
    for key, value in info.__dict__.items():
        click.echo(f"{key:15s} {value}")


@main.command()
@click.pass_context
@friendly_errors
def reembed(ctx: click.Context) -> None:
    """Re-embed what changed; with --embedder NAME, move the whole memory to that embedder."""
    target = ctx.find_root().params.get("embedder") or None
    store = open_store(ctx, embedder=None)  # opened with its own embedder, then moved
    before = store.embedder.name
    count = store.reembed(target, progress=lambda done, total: click.echo(f"{done}/{total}", err=True))
    after = store.embedder.name
    click.echo(f"re-embedded {count} memories with {after}" + (f" (was {before})" if after != before else ""))


@main.command("export")
@click.option("-f", "--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl", show_default=True)
@click.option("-n", "--namespace", default=None, help="Only this namespace (default: all).")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-", help="File (default: stdout).")
@click.pass_context
@friendly_errors
def export_command(ctx: click.Context, fmt: str, namespace: str | None, output: Any) -> None:
    """Export memories: JSONL (whole records, archive included) or Markdown (readable, re-importable)."""
    from ..portability import export_jsonl, export_markdown

    store = open_store(ctx)
    count = export_jsonl(store, output, namespace=namespace) if fmt == "jsonl" else \
        export_markdown(store, output, namespace=namespace)
    click.echo(f"exported {count} memories", err=True)


@main.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@namespace_option
@click.pass_context
@friendly_errors
def import_command(ctx: click.Context, paths: tuple[str, ...], namespace: str) -> None:
    """Import MEMORY.md / memory/*.md files (one memory per item or paragraph, Koshi) or a JSONL export."""
    from ..portability import import_jsonl, import_markdown

    store = open_store(ctx)
    jsonl = [p for p in paths if p.endswith((".jsonl", ".ndjson"))]
    markdown = [p for p in paths if p not in jsonl]
    for path in jsonl:
        with open(path, encoding="utf-8") as handle:
            click.echo(f"{path}: {import_jsonl(store, handle)}")
    if markdown:
        click.echo(str(import_markdown(store, markdown, namespace=namespace)))


@main.command()
@click.option("--keep", is_flag=True, help="Keep the demo database instead of deleting it.")
@click.pass_context
@friendly_errors
def demo(ctx: click.Context, keep: bool) -> None:
    """A tour of the core on a fresh file: add, dedup, search with explanations, feedback, archive."""
    import tempfile

    from ..demo import run_demo

    target = ctx.find_root().params.get("db")
    if target:
        run_demo(target, click.echo)
        return
    folder = tempfile.mkdtemp(prefix="openkoi-demo-")
    run_demo(f"{folder}/demo.db", click.echo)
    if keep:
        click.echo(f"\nkept: {folder}/demo.db (try: openkoi-memory --db {folder}/demo.db search 'deploy')")
    else:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)



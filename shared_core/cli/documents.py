"""``openkoi-memory ingest`` and ``openkoi-memory kb search|list|show|delete``."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .support import LIMIT, friendly_errors, namespace_option, open_store

__all__ = ["ingest", "kb"]


@click.command()
@click.argument("paths", nargs=-1, required=True)
@namespace_option
@click.option("-i", "--include", multiple=True, help="Only files matching this glob (repeatable), e.g. '*.pdf'.")
@click.option("-x", "--exclude", multiple=True, help="Skip files matching this glob (repeatable).")
@click.option("--no-recursive", is_flag=True, help="Do not descend into subfolders.")
@click.option("--force", is_flag=True, help="Re-read and re-chunk files even when unchanged.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
@friendly_errors
def ingest(ctx: click.Context, paths: tuple[str, ...], namespace: str, include: tuple[str, ...],
           exclude: tuple[str, ...], no_recursive: bool, force: bool, as_json: bool) -> None:
    """Add files and folders (PDF, DOCX, XLSX, PPTX, CSV, TXT, MD, Pages/Numbers/Keynote) to the knowledge base.

    Unchanged files are skipped; changed ones replace their chunks. A file that cannot be
    read is listed with the reason and the others go on; the exit status is then 1.
    """
    store = open_store(ctx)
    bar: Any = None

    def progress(done: int, total: int, path: str) -> None:
        nonlocal bar
        if as_json or not sys.stderr.isatty():  # a bar only for a person watching a terminal
            return
        if bar is None:
            bar = click.progressbar(length=total, label="Ingesting", file=sys.stderr, show_pos=True,
                                    item_show_func=lambda item: item)
            bar.__enter__()
        bar.update(1, current_item=_short(path))

    try:
        report = store.documents.ingest(list(paths), namespace=namespace, include=list(include) or None,
                                        exclude=list(exclude) or None, recursive=not no_recursive,
                                        progress=progress, force=force)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        for document in report.added:
            click.echo(f"added     [doc:{document.id}] {document.file_name} ({document.total_chunks} chunks)")
        for document in report.updated:
            click.echo(f"updated   [doc:{document.id}] {document.file_name} ({document.total_chunks} chunks)")
        for failure in report.failed:
            click.echo(f"failed    {failure.path}: {failure.message} [{failure.reason}]", err=True)
        click.echo(report.summary())
    if report.failed:
        ctx.exit(1)


def _short(path: str, width: int = 40) -> str:
    return path if len(path) <= width else "..." + path[-(width - 3):]


@click.group()
def kb() -> None:
    """The knowledge base: search, list, show and delete ingested documents."""


@kb.command("search")
@click.argument("query")
@namespace_option
@click.option("-l", "--limit", default=None, type=LIMIT, help="How many chunks (default: knowledge_base.default_limit, 5).")
@click.option("-d", "--document", "documents", multiple=True, help="Only in this document id (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
@click.pass_context
@friendly_errors
def kb_search(ctx: click.Context, query: str, namespace: str, limit: int | None, documents: tuple[str, ...],
              as_json: bool) -> None:
    """Hybrid search over document chunks; each line names the document, its place and the score."""
    # the knowledge base asks the search for 4 chunks per result it keeps (at least 20)
    hits = open_store(ctx, results=None if limit is None else max(4 * limit, 20)).documents.search_knowledge_base(
        query, limit=limit, document_ids=list(documents) or None, namespace=namespace)
    for hit in hits:
        if as_json:
            click.echo(json.dumps(hit.to_dict(), ensure_ascii=False))
            continue
        place = _place(hit.metadata)
        similarity = "-" if hit.similarity is None else f"{hit.similarity:.2f}"
        click.echo(f"[doc:{hit.document_id}] {hit.file_name}{place}  score {hit.score:.3f}  "
                   f"similarity {similarity}  keywords {hit.keyword:.2f}")
        click.echo("    " + " ".join(hit.text.split())[:300])
    if not hits and not as_json:
        click.echo("no matches", err=True)


def _place(metadata: dict[str, Any]) -> str:
    for key, label in (("page", "p."), ("slide", "slide "), ("sheet", "sheet "), ("row", "row "), ("heading", "")):
        if key in metadata:
            end = metadata.get(f"{key}_end")
            value = f"{metadata[key]}-{end}" if end is not None and key != "heading" else metadata[key]
            return f" ({label}{value})"
    return ""


@kb.command("list")
@namespace_option
@click.option("-l", "--limit", type=LIMIT, default=20, show_default=True)
@click.option("--all-namespaces", is_flag=True, help="Documents of every namespace.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
@click.pass_context
@friendly_errors
def kb_list(ctx: click.Context, namespace: str, limit: int, all_namespaces: bool, as_json: bool) -> None:
    """The most recently uploaded documents."""
    documents = open_store(ctx).documents.list_documents(limit, namespace=None if all_namespaces else namespace)
    for document in documents:
        if as_json:
            click.echo(json.dumps(document.to_dict(), ensure_ascii=False))
        else:
            click.echo(f"[doc:{document.id}] {document.file_name}  {document.total_chunks} chunks  "
                       f"{document.size_bytes:,} bytes  {document.uploaded_at:%Y-%m-%d %H:%M}  {document.blob_path}")
    if not documents and not as_json:
        click.echo("no documents", err=True)


@kb.command("show")
@click.argument("document_id")
@click.option("--metadata", "show_metadata", is_flag=True, help="Print the record as JSON instead of the text.")
@click.pass_context
@friendly_errors
def kb_show(ctx: click.Context, document_id: str, show_metadata: bool) -> None:
    """Print a document's full text (or its record)."""
    documents = open_store(ctx).documents
    if show_metadata:
        click.echo(json.dumps(documents.get_document(document_id).to_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(documents.get_full_document(document_id))


@kb.command()  # named after the function: kb delete
@click.argument("document_ids", nargs=-1, required=True)
@click.pass_context
@friendly_errors
def delete(ctx: click.Context, document_ids: tuple[str, ...]) -> None:
    """Remove documents with their chunks."""
    documents = open_store(ctx).documents
    for document_id in document_ids:
        documents.delete_document(document_id)
    click.echo(f"deleted {len(document_ids)}")

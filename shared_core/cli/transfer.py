"""``openkoi-memory migrate-backend SRC DST``: copy a whole memory between SQLite and PostgreSQL."""

from __future__ import annotations

import click

from .support import friendly_errors

__all__ = ["migrate_backend_command"]


@click.command("migrate-backend")
@click.argument("source")
@click.argument("target")
@click.option("--batch-size", default=1000, show_default=True, help="Rows per transaction on the target.")
@click.option("--verify-only", is_flag=True, help="Only compare the two memories (counts and checksums).")
@friendly_errors
def migrate_backend_command(source: str, target: str, batch_size: int, verify_only: bool) -> None:
    """Copy the memory SOURCE into TARGET (SQLite paths or postgresql:// URLs), then verify it.

    Every table, vector and archived memory is copied; the target must be empty, or a copy of
    SOURCE that was interrupted (run the same command again to resume it). Exits 1 when the
    counts or checksums of the two sides differ.
    """
    from ..db.transfer import TransferReport, migrate_backend, verify

    if verify_only:
        report = TransferReport(source, target, checks=verify(source, target))
    else:
        def progress(table: str, done: int, total: int) -> None:
            click.echo(f"  {table}: {done}/{total}", err=True)

        report = migrate_backend(source, target, batch_size=batch_size, progress=progress)
    click.echo(str(report))
    if not report.ok:
        raise SystemExit(1)

"""The demo behind ``make demo`` / ``openkoi-memory demo``: the core features in one run.

Everything runs locally on the default hashing embedder: no server, no key, no network.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .clock import ManualClock
from .store import MemoryStore

__all__ = ["run_demo"]

FACTS = [
    ("The production server runs on Fly.io in Frankfurt", ["infra", "deploy"], "infrastructure"),
    ("Deploys go out every Tuesday after the standup", ["deploy"], "process"),
    ("User prefers dark mode interfaces", ["ui"], "preferences"),
    ("User's timezone is Europe/Berlin", ["profile"], "profile"),
    ("The staging database is Postgres 16 on a Hetzner box", ["infra", "db"], "infrastructure"),
    ("Payment API HMAC: the signature string must not include a trailing empty string", ["payments", "bug"], "api"),
    ("The cat's name is Whiskerino", ["personal"], "personal"),
]


def run_demo(path: str, echo: Callable[[str], None] = print) -> None:
    """Fill a store at ``path`` with a small story and show search, feedback, decay of rank and archive."""
    clock = ManualClock("2026-01-05T09:00:00Z")
    with MemoryStore.open(path, clock=clock) as store:
        echo(f"openkoi-memory demo: one SQLite file at {path}")
        echo(f"embedder: {store.embedder.name} ({store.embedder.dims} dims), SQLite driver: {store.db.driver.name}\n")
        ids = {}
        for text, tags, category in FACTS:
            ids[text] = store.add(text, namespace="user:alice", tags=tags, category=category, source="conversation")
        store.add("Bob drinks his coffee black", namespace="user:bob")
        echo(f"stored {store.count(namespace='user:alice')} facts for user:alice and 1 for user:bob")

        again = store.add("the production server runs on fly.io in Frankfurt!", namespace="user:alice")
        echo(f"adding a near-duplicate fact reinforced the existing one: [id:{again}] ({again.event})\n")

        def show(query: str, **kwargs: Any) -> None:
            echo(f"search {query!r}")
            for hit in store.search(query, namespace="user:alice", limit=3, **kwargs):
                echo(f"  [id:{hit.id}] {hit.score:.3f}  {hit.text}")
                echo(f"      {hit.explain()}")
            echo("")

        show("where is prod deployed?")
        show("which database does staging use", tags=["infra"])

        clock.advance(days=60)
        cat = ids["The cat's name is Whiskerino"]
        store.reinforce(cat)
        echo("60 days later the cat fact was reinforced (+3, recency clock reset):")
        show("what is the name of the cat")

        hmac = ids["Payment API HMAC: the signature string must not include a trailing empty string"]
        store.update(hmac, "Payment API HMAC: omit the trailing empty string when the request has no body",
                     tags=["payments"])
        echo("updated the HMAC fact in place (score kept, re-indexed)")
        store.archive(ids["User prefers dark mode interfaces"], reason="demo")
        echo("archived the dark-mode fact: gone from everyday search, still in the archive:")
        echo(f"  live search: {store.search('dark mode', namespace='user:alice', fusion='keyword').ids}")
        echo(f"  archive:     {store.archive.search('dark mode', namespace='user:alice').ids}\n")
        echo(f"user:bob sees only his own memories: {[h.text for h in store.search('coffee server', namespace='user:bob')]}")
        stats = store.stats()
        echo(f"\nthe file holds {stats.memories} live memories in {len(stats.by_namespace)} namespaces "
             f"({stats.file_bytes / 1024:.0f} KiB with its WAL)")

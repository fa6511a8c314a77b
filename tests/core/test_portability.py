"""Seed 002's flat-file migration: MEMORY.md and memory/*.md into discrete memories."""

from __future__ import annotations

from shared_core.portability import import_markdown, parse_markdown

MEMORY_MD = """---
title: my memory
---
# Infrastructure

- The production server runs on Fly.io in Frankfurt (tags: infra, deploy)
- Staging uses Postgres 16
  on a Hetzner box

Deploys happen on Tuesdays.
Never on Fridays.

## Preferences
* Dark mode everywhere
1. Tabs, not spaces
- [x] Migrated the old notes

<!-- a comment that is not a memory -->
```
code blocks stay
whole
```
"""


def test_parse_markdown_splits_into_discrete_memories():
    parsed = parse_markdown(MEMORY_MD)
    assert [p.text for p in parsed] == [
        "The production server runs on Fly.io in Frankfurt",
        "Staging uses Postgres 16\non a Hetzner box",
        "Deploys happen on Tuesdays.\nNever on Fridays.",
        "Dark mode everywhere",
        "Tabs, not spaces",
        "Migrated the old notes",
        "```\ncode blocks stay\nwhole\n```",
    ]
    assert parsed[0].tags == ("infra", "deploy") and parsed[0].category == "Infrastructure"
    assert parsed[3].category == "Preferences"


def test_import_is_idempotent_and_marks_provenance(store, tmp_path):
    (tmp_path / "MEMORY.md").write_text(MEMORY_MD)
    daily = tmp_path / "memory"
    daily.mkdir()
    (daily / "2025-12-24.md").write_text("- Bought the presents\n- Called grandma\n")
    report = import_markdown(store, [tmp_path], namespace="agent:koshi")
    assert report.created == 9 and report.unchanged == 0 and len(report.files) == 2
    memories = store.list(namespace="agent:koshi")
    assert {m.source for m in memories} == {"migration"}
    presents = next(m for m in memories if m.text == "Bought the presents")
    assert presents.created_at.date().isoformat() == "2025-12-24"
    assert presents.metadata == {"imported_from": "2025-12-24.md"}
    again = import_markdown(store, [tmp_path], namespace="agent:koshi")
    assert again.created == 0 and again.unchanged == 9
    assert store.search("Fly.io Frankfurt", namespace="agent:koshi")[0].memory.tags == ["infra", "deploy"]

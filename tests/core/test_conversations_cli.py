"""The `sessions` and `forget` commands."""

from __future__ import annotations

import json

from click.testing import CliRunner

from shared_core import MemoryStore
from shared_core.cli import main


def test_sessions_and_forget_commands(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore.open(db) as store:
        for i, role in enumerate(("user", "assistant", "user")):
            store.conversations.append("c1", role, f"old line {i}", sent_at=f"2020-01-01T00:0{i}:00Z")
    runner = CliRunner()
    listed = runner.invoke(main, ["--db", str(db), "sessions"])
    assert listed.exit_code == 0 and listed.output.startswith("c1  default  3 messages")
    shown = runner.invoke(main, ["--db", str(db), "sessions", "c1", "--last", "2"])
    assert shown.output.splitlines() == ["[2] assistant: old line 1", "[3] user: old line 2"]
    as_json = runner.invoke(main, ["--db", str(db), "sessions", "c1", "--json"])
    assert [json.loads(line)["seq"] for line in as_json.output.splitlines()] == [1, 2, 3]
    missing = runner.invoke(main, ["--db", str(db), "sessions", "nope"])
    assert missing.exit_code == 1 and "no messages" in missing.output
    dry = runner.invoke(main, ["--db", str(db), "forget", "--dry-run"])
    assert dry.output.strip() == "default: dry_run; promoted short->mid 0, mid->long 0; compressed short 3, mid 0; 1 summaries"
    real = runner.invoke(main, ["--db", str(db), "forget", "--all", "--json"])
    report = json.loads(real.output)
    assert report["status"] == "ok" and report["tiers"][0]["compressed"] == 3
    bad = runner.invoke(main, ["--db", str(db), "forget", "-n", ""])
    assert bad.exit_code == 1 and "namespace" in bad.output

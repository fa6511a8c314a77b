"""The `context`, `compact`, `end-session` and `workspace` commands."""

from __future__ import annotations

import json

from click.testing import CliRunner

from shared_core import MemoryStore
from shared_core.cli import main


def _seed(db):
    with MemoryStore.open(db) as store:
        convs = store.conversations
        convs.append("trip", "user", "My cat's name is Whiskerino.", namespace="priya")
        for i in range(30):
            convs.append("trip", "assistant" if i % 2 else "user", f"Filler message {i} about flights and seats.")


def test_compact_and_context_commands(tmp_path):
    db = tmp_path / "openkoi.db"
    _seed(db)
    runner = CliRunner()
    dry = runner.invoke(main, ["--db", str(db), "compact", "trip", "--preset", "fleet", "--window", "400", "--dry-run",
                               "--json"])
    state = json.loads(dry.output)
    assert dry.exit_code == 0 and state["compact_due"] and state["unread"] == 31
    assert state["policy"].startswith("fleet: compact past 280 tokens")
    done = runner.invoke(main, ["--db", str(db), "compact", "trip", "--preset", "fleet", "--window", "400", "--json"])
    result = json.loads(done.output)
    assert result["action"] == "compact" and len(result["messages"]) == 5
    assert result["messages"][0]["content"].startswith("[Compacted history]")
    assert [f["text"] for f in result["facts"]] == ["The user's cat's name is Whiskerino."]
    with MemoryStore.open(db) as store:
        assert store.conversations.count("trip") == 31  # the stored conversation is never cut
        assert store.get(result["summary_id"]).kind == "summary"
    context = runner.invoke(main, ["--db", str(db), "context", "trip", "--query", "what is my cat called", "--budget",
                                   "500"])
    assert context.exit_code == 0 and "Whiskerino" in context.output and "## Memory" in context.output
    as_json = json.loads(runner.invoke(main, ["--db", str(db), "context", "trip", "-q", "cat", "--json"]).output)
    assert as_json["namespace"] == "priya" and as_json["relevant_facts"][0]["category"] == "pets"
    text = runner.invoke(main, ["--db", str(db), "compact", "trip", "--preset", "fleet", "--window", "400", "--force"])
    assert text.exit_code == 0 and "compact: " in text.output and "\nsystem: [Compacted history]\n" in text.output
    missing = runner.invoke(main, ["--db", str(db), "compact", "nope"])
    assert missing.exit_code == 1 and "no session 'nope'" in missing.output
    bad = runner.invoke(main, ["--db", str(db), "context", "trip", "--budget", "-5"])
    assert bad.exit_code == 1 and "token_budget" in bad.output


def test_end_session_command(tmp_path):
    db = tmp_path / "openkoi.db"
    _seed(db)
    out = json.loads(CliRunner().invoke(main, ["--db", str(db), "end-session", "trip", "--json"]).output)
    assert [f["text"] for f in out["facts"]] == ["The user's cat's name is Whiskerino."] and out["summary_id"]
    again = CliRunner().invoke(main, ["--db", str(db), "end-session", "trip"])
    assert again.exit_code == 0 and again.output.startswith("summary ")


def test_workspace_commands(tmp_path):
    db = tmp_path / "openkoi.db"
    runner = CliRunner()
    init = runner.invoke(main, ["--db", str(db), "workspace", "init", "-n", "priya"])
    assert init.exit_code == 0 and "created AGENTS.md, SOUL.md" in init.output
    folder = tmp_path / "workspaces" / "priya"
    (folder / "USER.md").write_text("# User\n\nPriya likes the harbour ferry.\n", encoding="utf-8")
    shown = runner.invoke(main, ["--db", str(db), "workspace", "show", "-n", "priya"])
    assert "USER.md" in shown.output and "not indexed" in shown.output
    synced = runner.invoke(main, ["--db", str(db), "workspace", "sync", "-n", "priya"])
    assert synced.exit_code == 0 and synced.output.startswith("7 indexed")
    assert runner.invoke(main, ["--db", str(db), "workspace", "sync", "-n", "priya"]).output.startswith("0 indexed")
    found = runner.invoke(main, ["--db", str(db), "workspace", "search", "harbour ferry", "-n", "priya"])
    assert found.output.startswith("[USER.md] # User Priya likes the harbour ferry.")
    both = runner.invoke(main, ["--db", str(db), "workspace", "search", "ferry", "-n", "priya", "--all"])
    assert "[USER.md]" in both.output
    listing = json.loads(runner.invoke(main, ["--db", str(db), "workspace", "show", "-n", "priya", "--json"]).output)
    assert {f["file"] for f in listing["files"]} >= {"USER.md", "learnings/errors.md"}
    assert all(f["current"] for f in listing["files"])
    off = runner.invoke(main, ["--db", ":memory:", "workspace", "show"])
    assert off.exit_code == 1 and "workspaces are off" in off.output

"""The openkoi-memory command line: every command, one-line errors, non-zero exits."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from shared_core import MemoryStore
from shared_core.cli import main


@pytest.fixture
def run(tmp_path):
    db = str(tmp_path / "cli.db")
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(main, ["--db", db, *args], input=input, catch_exceptions=False)

    invoke.db = db
    return invoke


def test_add_search_feedback_update_delete(run):
    result = run("add", "The production server runs on Fly.io in Frankfurt", "-t", "infra,deploy", "-c", "infra",
                 "-n", "user:alice", "-m", '{"project": "atlas"}')
    assert result.exit_code == 0
    mid = result.output.strip()
    found = run("search", "where is prod deployed", "-n", "user:alice", "--explain")
    assert f"[id:{mid}]" in found.output and "relevance" in found.output
    assert "no matches" in run("search", "prod", "-n", "user:bob").output
    assert "score +3" in run("reinforce", mid).output
    assert "score +2" in run("demote", mid).output
    assert run("update", mid, "It moved to Amsterdam", "-t", "infra").exit_code == 0
    shown = json.loads(run("show", mid).output)
    assert shown["text"] == "It moved to Amsterdam" and shown["score"] == 2 and shown["metadata"] == {"project": "atlas"}
    lines = run("search", "Amsterdam", "-n", "user:alice", "--json").output.strip().splitlines()
    assert json.loads(lines[0])["id"] == mid
    assert "memories" in run("stats").output
    assert run("delete", mid).output.strip() == "deleted 1"


def test_duplicate_add_says_reinforced(run):
    first = run("add", "User prefers dark mode").output.strip()
    second = run("add", "user prefers dark mode").output.strip()
    assert second == f"{first} (reinforced)"


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "nope"], "NotFoundError: no memory with id 'nope'"),
        (["reinforce", "nope"], "no memory with id"),
        (["add", "   "], "empty"),
        (["search", "x", "-w", "[1]"], "must be a JSON object"),
        (["search", "x", "-w", '{"a": {"$regex": 1}}'], "unknown filter operator"),
        (["update", "x"], "give new TEXT"),
    ],
)
def test_errors_are_one_line_and_non_zero(run, args, message):
    result = CliRunner().invoke(main, ["--db", run.db, *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_export_import_round_trip(run, tmp_path):
    run("add", "alpha fact", "-t", "a", "-c", "letters")
    run("add", "beta fact", "-n", "other")
    mid = run("add", "gamma fact to archive").output.strip()
    with MemoryStore.open(run.db) as s:
        s.archive(mid, reason="test")
    jsonl = tmp_path / "backup.jsonl"
    run("export", "-o", str(jsonl))
    assert len(jsonl.read_text().splitlines()) == 3
    markdown = run("export", "-f", "markdown").output
    assert "## letters" in markdown and "- alpha fact (tags: a)" in markdown
    fresh = tmp_path / "fresh.db"
    runner = CliRunner()
    out = runner.invoke(main, ["--db", str(fresh), "import", str(jsonl)], catch_exceptions=False).output
    assert "imported 3 new" in out
    with MemoryStore.open(fresh) as s:
        assert s.count(namespace="default") == 1 and s.count(namespace="other") == 1
        assert s.archive.get(mid).archive_reason == "test"
        assert s.list()[0].tags == ["a"]
    again = runner.invoke(main, ["--db", str(fresh), "import", str(jsonl)], catch_exceptions=False).output
    assert "imported 0 new, 3 already present" in again


def test_demo_runs(tmp_path):
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "demo.db"), "demo"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "reinforced" in result.output and "Whiskerino" in result.output and "archive" in result.output


def test_help_lists_commands():
    result = CliRunner().invoke(main, ["--help"])
    for command in ("add", "search", "show", "reinforce", "demote", "update", "delete", "stats", "export", "import", "demo"):
        assert command in result.output

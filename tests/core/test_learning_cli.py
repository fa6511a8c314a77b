"""The recall, learnings, skills and history commands."""

from __future__ import annotations

import json

from click.testing import CliRunner

from shared_core import MemoryStore
from shared_core.cli import main


def _seed(path):
    with MemoryStore.open(path) as store:
        store.learnings.add("Never deploy the payments service on a Friday afternoon.", "AntiPattern",
                            category="deploy")
        store.learnings.add("Tag the deploy commit so rollbacks are one command.", "Heuristic", category="deploy")
        store.skills.record("canary", "deploy", 0.9)
        old = store.add("The office is in Berlin")
        new = store.add("The office is in Munich", supersedes=old)
        return old, new


def test_recall_command(tmp_path):
    db = tmp_path / "openkoi.db"
    _seed(db)
    runner = CliRunner()
    result = runner.invoke(main, ["--db", str(db), "recall", "deploy payments", "-c", "deploy"])
    assert result.exit_code == 0, result.output
    assert "### Avoid (anti-patterns from past tasks)" in result.stdout
    assert "- canary (avg score 0.90 over 1 deploy task)" in result.stdout
    as_json = runner.invoke(main, ["--db", str(db), "recall", "deploy payments", "-c", "deploy", "--json", "-b", "40"])
    data = json.loads(as_json.stdout)
    assert data["token_budget"] == 40 and data["tokens_used"] <= 40 and data["items"][0]["section"] == "anti_patterns"
    empty = runner.invoke(main, ["--db", str(db), "recall", "deploy", "-n", "nobody"])
    assert empty.exit_code == 0 and "nothing to recall" in empty.stderr
    bad = runner.invoke(main, ["--db", str(db), "recall", "deploy", "-b", "-1"])
    assert bad.exit_code == 1 and "token_budget" in bad.stderr


def test_learnings_skills_and_history_commands(tmp_path):
    db = tmp_path / "openkoi.db"
    old, new = _seed(db)
    runner = CliRunner()
    listed = runner.invoke(main, ["--db", str(db), "learnings", "--decay"])
    assert listed.exit_code == 0 and "0.80 AntiPattern Never deploy" in listed.stdout
    only = runner.invoke(main, ["--db", str(db), "learnings", "-t", "Heuristic", "--json"])
    assert [json.loads(line)["type"] for line in only.stdout.splitlines()] == ["Heuristic"]
    ranked = runner.invoke(main, ["--db", str(db), "skills", "deploy"])
    assert ranked.stdout.split() == ["0.900", "n=1", "canary"]
    (tmp_path / "skills/user/notes").mkdir(parents=True)
    (tmp_path / "skills/user/notes/SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\n")
    files = runner.invoke(main, ["--db", str(db), "skills", "--sync"])
    assert "user      notes: Take notes." in files.stdout and "1 added" in files.stderr
    history = runner.invoke(main, ["--db", str(db), "history", new])
    lines = history.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"[id:{old}]") and lines[1].endswith("now  The office is in Munich")
    missing = runner.invoke(main, ["--db", str(db), "history", "nope"])
    assert missing.exit_code == 1 and "NotFoundError" in missing.stderr

"""Hostile command-line arguments give one line of error and a non-zero exit, never a traceback; the
one-shot search path answers any --limit (sqlite-vec returns at most 4,096 rows per query)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from shared_core.cli import main

DEEP = '{"a": ' * 3000 + "1" + "}" * 3000  # past what Python's JSON parser takes
TOO_DEEP = '{"a": ' * 40 + "1" + "}" * 40  # parsed, but past the 32 levels a memory may hold
NUL = "a\x00b"
LONG_NAME = "x" * 5000  # past every file system's name limit


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENKOI_TOKENS", str(tmp_path / "tokens.toml"))
    db = str(tmp_path / "cli.db")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, ["--db", db, *args])

    invoke.db = db
    return invoke


HOSTILE = [
    (["add", "x", "--ttl", "1e300"], "--ttl"),
    (["add", "x", "--ttl", "nan"], "--ttl"),
    (["add", "x", "--ttl", "-5"], "--ttl"),
    (["add", "x", "-m", DEEP], "nested"),
    (["add", "x", "-m", TOO_DEEP], "nested more than 32 levels"),
    (["update", "{id}", "-m", DEEP], "nested"),
    (["search", "tea", "-w", DEEP], "nested"),
    (["search", "tea", "--limit", "99999999999999999999"], "--limit"),
    (["kb", "search", "tea", "--limit", "-1"], "--limit"),
    (["insights", "search", "tea", "--limit", "99999999999999999999"], "--limit"),
    (["workspace", "search", "tea", "--limit", "99999999999999999999"], "--limit"),
    (["import", NUL], "NUL"),
    (["ingest", NUL], "1 failed"),  # reported like any missing file
    (["ingest", LONG_NAME], "cannot use"),
    (["insights", "extract", NUL], "NUL"),
    (["workspace", "init", "--path", NUL], "NUL"),
    (["workspace", "show", "--path", LONG_NAME], "cannot use"),
    (["workspace", "init", "--path", "/dev/null"], "cannot use"),
    (["token", "list", "--tokens-file", NUL], "NUL"),
    (["token", "add", "x", "--tokens-file", LONG_NAME], "cannot use"),
    (["search", "\udcff"], None),  # a byte that is not UTF-8 on the command line (surrogateescape)
    (["add", "\udcff\udcfe"], None),
]


@pytest.mark.parametrize("argv, words", HOSTILE, ids=[" ".join(a)[:40] for a, _ in HOSTILE])
def test_hostile_arguments_print_one_line(cli, argv, words):
    known = cli("add", "Alice likes oolong tea").output.strip()
    result = cli(*[a.replace("{id}", known) for a in argv])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if words is not None:
        assert result.exit_code in (1, 2), result.output
        assert words in result.output.splitlines()[-1], result.output[-300:]
    assert "[id:" in cli("search", "oolong").output  # the store still answers


def test_a_nul_in_the_database_path_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["--db", str(tmp_path / NUL), "search", "x"])
    assert result.exit_code in (1, 2) and result.exception is None or isinstance(result.exception, SystemExit)
    assert "NUL" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("argv", [["search", "tea", "--limit", "820"], ["search", "tea", "--limit", "5000"],
                                  ["kb", "search", "parental leave", "--limit", "300"],
                                  ["insights", "search", "launch", "--limit", "1000"]])
def test_a_large_limit_on_the_one_shot_search_path_answers(cli, argv):
    """sqlite-vec takes k <= 4096 and a search asks for 5 candidates per result: 820+ used to fail."""
    assert cli("add", "Alice likes oolong tea").exit_code == 0
    assert cli("kb", "search", "x").exit_code == 0  # the knowledge base exists (empty) either way
    from shared_core import MemoryStore

    with MemoryStore.open(cli.db) as store:
        store.documents.ingest_text("# Leave\n\nParental leave is sixteen weeks.", name="handbook.md")
        store.insights.upsert("Launch moved", "to March 3", dedupe_key="launch")
    result = cli(*argv)
    assert result.exit_code == 0, result.output
    assert any(word in result.output for word in ("oolong", "handbook.md", "Launch moved"))

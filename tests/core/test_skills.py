"""Skill memory (seed 000): the effectiveness running average, ranking, SKILL.md discovery."""

from __future__ import annotations

import pytest

from shared_core import NotFoundError
from shared_core.ranking import running_average
from shared_core.skills import parse_skill_file


def test_running_average_is_the_seeds_upsert(store, clock):
    scores = [0.8, 0.6, 0.9, 0.75]
    expected, count = 0.0, 0
    for score in scores:
        clock.advance(hours=1)
        cell = store.skills.record("sql-safety", "sql", score)
        expected, count = (score, 1) if count == 0 else (running_average(expected, count, score), count + 1)
        assert cell.avg_score == pytest.approx(expected) and cell.sample_count == count
        assert cell.last_used == clock.now()
    assert cell.avg_score == pytest.approx(sum(scores) / len(scores))
    assert running_average(0.7, 3, 0.9) == pytest.approx((0.7 * 3 + 0.9) / 4)


def test_rank_orders_by_average_then_samples(store):
    for skill, scores in {"general": [0.6, 0.7], "sql-safety": [0.9], "lint": [0.9, 0.9], "docs": [0.5]}.items():
        for score in scores:
            store.skills.record(skill, "sql", score)
    store.skills.record("general", "writing", 1.0)
    assert [s.skill_name for s in store.skills.rank("sql")] == ["lint", "sql-safety", "general", "docs"]
    assert [s.skill_name for s in store.skills.rank("sql", min_samples=2)] == ["lint", "general"]
    assert [s.skill_name for s in store.skills.rank("sql", limit=1)] == ["lint"]
    assert store.skills.rank("nothing") == []


def test_effectiveness_is_per_namespace_and_erasable(store):
    store.skills.record("lint", "py", 0.9, namespace="team:a")
    store.skills.record("lint", "py", 0.1, namespace="team:b")
    assert store.skills.get("lint", "py", namespace="team:a").avg_score == 0.9
    store.erase_namespace("team:a")
    with pytest.raises(NotFoundError):
        store.skills.get("lint", "py", namespace="team:a")
    assert store.skills.get("lint", "py", namespace="team:b").avg_score == 0.1


def test_bad_scores_and_names(store):
    with pytest.raises(ValueError, match="between 0 and 1"):
        store.skills.record("lint", "py", 1.2)
    with pytest.raises(ValueError, match="non-empty"):
        store.skills.record(" ", "py", 0.5)


def _write(root, relative, text):
    path = root / "skills" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


SQL_SKILL = "---\nname: sql-safety\ndescription: Checks SQL for injection and missing indexes.\n---\n# SQL safety\n\nSteps...\n"


def test_skill_files_are_discovered_indexed_reindexed_and_never_duplicated(file_store, tmp_path):
    _write(tmp_path, "managed/sql-safety/SKILL.md", SQL_SKILL)
    _write(tmp_path, "user/release-notes/SKILL.md", "# Release notes\n\nWrite release notes from merged PRs.\n")
    _write(tmp_path, "proposed/weekly-report/SKILL.md", "---\nname: weekly-report\n---\nDraft the weekly report.\n")
    report = file_store.skills.sync()
    assert sorted(report.added) == ["release-notes", "sql-safety", "weekly-report"]
    files = {f.name: f for f in file_store.skills.files()}
    assert files["sql-safety"].origin == "managed" and files["sql-safety"].path == "managed/sql-safety/SKILL.md"
    assert files["release-notes"].description == "Write release notes from merged PRs."
    assert file_store.search("injection", kind="skill").ids == [files["sql-safety"].id]

    again = file_store.skills.sync()
    assert not again.changed and again.unchanged == 3
    assert file_store.count(kind="skill") == 3

    _write(tmp_path, "managed/sql-safety/SKILL.md", SQL_SKILL.replace("missing indexes", "slow joins"))
    changed = file_store.skills.sync()
    assert changed.updated == ["sql-safety"] and changed.added == []
    assert file_store.search("slow joins", kind="skill").ids == [files["sql-safety"].id]
    assert file_store.search("missing indexes", kind="skill", fusion="keyword").ids == []
    assert file_store.count(kind="skill") == 3

    (tmp_path / "skills/user/release-notes/SKILL.md").unlink()
    assert file_store.skills.sync().removed == ["release-notes"]
    assert file_store.count(kind="skill") == 2


def test_sync_if_changed_skips_untouched_directories(file_store, tmp_path):
    _write(tmp_path, "user/a/SKILL.md", "Do a.\n")
    assert file_store.skills.sync_if_changed().added == ["a"]
    assert file_store.skills.sync_if_changed() is None
    _write(tmp_path, "user/b/SKILL.md", "Do b.\n")
    assert file_store.skills.sync_if_changed().added == ["b"]


def test_unreadable_or_empty_files_are_skipped(file_store, tmp_path):
    _write(tmp_path, "user/empty/SKILL.md", "   \n")
    (tmp_path / "skills/user/binary").mkdir(parents=True)
    (tmp_path / "skills/user/binary/SKILL.md").write_bytes(b"\xff\xfe\x00bad")
    report = file_store.skills.sync()
    assert sorted(report.skipped) == ["user/binary/SKILL.md", "user/empty/SKILL.md"] and report.added == []


def test_parse_skill_file():
    assert parse_skill_file(SQL_SKILL, default_name="x") == ("sql-safety", "Checks SQL for injection and missing indexes.")
    assert parse_skill_file("# Title\n\nFirst line\ncontinues here.\n\nMore.", default_name="dir") == (
        "dir", "First line continues here.")


def test_recommend_puts_the_category_track_record_first_and_skips_proposals(file_store, tmp_path):
    _write(tmp_path, "managed/sql-safety/SKILL.md", SQL_SKILL)
    _write(tmp_path, "user/explain-plan/SKILL.md", "Read EXPLAIN plans to find slow SQL queries.\n")
    _write(tmp_path, "proposed/sql-helper/SKILL.md", "Unreviewed helper for SQL queries.\n")
    file_store.skills.sync()
    file_store.skills.record("sql-safety", "sql", 0.9)
    file_store.skills.record("formatter", "sql", 0.7)
    names = [r.name for r in file_store.skills.recommend("slow SQL queries", category="sql")]
    assert names == ["sql-safety", "formatter", "explain-plan"]
    top = file_store.skills.recommend("slow SQL queries", category="sql")[0]
    assert top.render() == "sql-safety (avg score 0.90 over 1 sql task): Checks SQL for injection and missing indexes."
    assert "sql-helper" in [r.name for r in file_store.skills.recommend("SQL queries", include_proposed=True)]
    assert file_store.skills.recommend("anything", limit=0) == []

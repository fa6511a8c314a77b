"""Adding a domain is one package, one registry line and one migration file (docs/architecture.md).

The ``goals`` package beside this test is such a domain. The fixture gives the store its registry
line (``domains=(*DOMAINS, GOALS)``) and its migration file (the runner's migrations plus
``goals/0100_goals.sql``, one file for both backends, which inside the library would sit in
``shared_core/db/migrations/``);
everything else is the library as it is: the kernel builds the service, search indexes its kind,
and ``erase_namespace`` runs its eraser.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from goals import GOALS, MIGRATION, Goals

from shared_core import MemoryStore, NotFoundError
from shared_core.db import migrations
from shared_core.registry import DOMAINS


@pytest.fixture
def goals_store(tmp_path, monkeypatch):
    sql = (Path(__file__).parent / "goals" / MIGRATION).read_text(encoding="utf-8")
    goals_migration = migrations.Migration(int(MIGRATION[:4]), MIGRATION[5:-4], sql)
    core = migrations.available_migrations
    monkeypatch.setattr(migrations, "available_migrations", lambda: [*core(), goals_migration])
    with MemoryStore.open(tmp_path / "goals.db", domains=(*DOMAINS, GOALS)) as store:
        yield store


def test_the_new_domain_is_a_store_attribute_built_with_the_kernel(goals_store):
    assert isinstance(goals_store.goals, Goals) and goals_store.goals is goals_store.kernel.service(Goals)
    assert goals_store.kernel.domains["goals"].kinds == ("goal",)


def test_goals_are_written_listed_and_found_by_the_core_search(goals_store):
    goals = goals_store.goals
    ship = goals.add("Ship the kernel refactor before the release", namespace="team")
    docs = goals.add("Write the architecture page", namespace="team")
    assert [g.id for g in goals.list(namespace="team")] == [ship.id, docs.id]
    assert goals.search("kernel refactor", namespace="team").ids[0] == ship.id
    assert goals_store.search("architecture page", namespace="team", kind="goal").ids == [docs.id]
    done = goals.finish(ship.id)
    assert done.status == "done" and done.done_at is not None
    assert [g.id for g in goals.list(namespace="team", status="open")] == [docs.id]
    assert goals_store.get(ship.id).tags == ["done"]
    with pytest.raises(NotFoundError):
        goals.finish("no-such-goal")


def test_erasing_a_namespace_runs_the_new_domains_eraser(goals_store):
    goals_store.goals.add("Learn Portuguese", namespace="user:ana")
    kept = goals_store.goals.add("Run a marathon", namespace="user:bo")
    report = goals_store.erase_namespace("user:ana")
    assert report.deleted["goals"] == 1 and report.complete
    assert goals_store.goals.list(namespace="user:ana") == []
    assert [g.id for g in goals_store.goals.list(namespace="user:bo")] == [kept.id]


def test_a_store_opened_without_the_line_has_no_goals(tmp_path):
    with MemoryStore.open(tmp_path / "plain.db") as store, pytest.raises(AttributeError, match="goals"):
        store.goals  # noqa: B018

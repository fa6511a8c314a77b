"""Issue 21, part 4: keyword search never drops a word because of rows in other namespaces.

Seed 002 joins every query word with OR. The document-frequency gate (a speed measure) leaves
out words held by more than 5 % of a big file's rows; it must count within the scope searched.
"""

from __future__ import annotations

import pytest

from shared_core.index.scope import Scope

QUERY = "home server kubernetes"


def _fill(store) -> str:
    # a team's logs: 2,400 rows say "server" (a file over 2,000 rows, "server" in 99 % of them)
    store.add_many([{"text": f"build server {i} restarted after the nightly deploy", "namespace": "team"}
                    for i in range(2400)])
    store.add_many([{"text": f"the kubernetes cluster {i} was upgraded", "namespace": "team"} for i in range(5)])
    store.add("I like long walks by the sea", namespace="ann", dedup=False)
    return store.add("My server is a Raspberry Pi in the attic", namespace="ann", dedup=False)


def test_a_word_common_only_in_other_namespaces_still_finds_this_namespaces_memory(store):
    target = _fill(store)
    assert store.count(namespace=["team", "ann"]) > 2000
    hits = store.search(QUERY, namespace="ann", fusion="keyword")
    assert hits.ids == [target]
    used = store.kernel.keyword.prepare(QUERY, Scope(namespaces=("ann",))).used
    assert "server" in used and "kubernetes" in used


def test_a_word_common_within_the_searched_scope_is_still_left_out(store):
    _fill(store)
    team = Scope(namespaces=("team",))
    assert "server" not in store.kernel.keyword.prepare(QUERY, team).used  # 2,400 of the team's 2,405 rows
    assert "server" not in store.kernel.keyword.prepare(QUERY).used  # no scope: the file-wide counts, as before
    hits = store.search(QUERY, namespace="team", fusion="keyword", limit=5)
    assert len(hits) == 5 and all("kubernetes" in hit.text for hit in hits)
    # both namespaces together: still common there, and the other namespace's memory is still found by it
    both = store.search("server attic", namespace=["team", "ann"], fusion="keyword", limit=3)
    assert "attic" in both[0].text


@pytest.mark.sqlite_only
def test_a_words_rows_in_a_big_scope_are_counted_from_its_posting_list(store, sql_spy):
    """SQLite, left to itself on a fresh file, probed each of the namespace's rows for the word (1.5 s a count
    at 100k rows); a word held by fewer rows than the scope's is counted from its own rows."""
    store.add_many([{"text": f"note {i}: " + ("the deploy server restarted" if i % 2 else "a quiet night"),
                     "namespace": "team"} for i in range(5000)])
    store.add("the kubernetes upgrade", namespace="team")
    store.add_many([{"text": f"a quiet day {i}", "namespace": "other"} for i in range(3000)])  # the count can't be inferred
    team = Scope(namespaces=("team",), live_at="2026-01-01T00:00:00Z")  # as a search's scope
    with sql_spy(store.db, "scalar", lambda sql: "MATCH" in sql and "count(*)" in sql) as counts:
        assert store.kernel.keyword.prepare("server kubernetes", team).used == ("kubernetes",)  # 2,500 of 5,001 rows
    assert counts, "the word's rows in the scope were not counted"
    for sql, params in counts:
        plan = [row[-1] for row in store.db.query("EXPLAIN QUERY PLAN " + sql, params)]
        first = next(step for step in plan if "memory_fts" in step or " c " in f" {step} ")
        assert "memory_fts" in first, plan


@pytest.mark.sqlite_only
def test_a_words_rows_in_a_scope_of_nearly_the_whole_file_are_not_counted(store, monkeypatch):
    """Its rows in the file say enough: all of them are in a scope that leaves no row out, and more
    than the cap are in one that leaves out fewer rows than the word has beyond the cap (a common
    word's count in a namespace of a whole million took 75 ms)."""
    store.add_many([{"text": f"note {i}: " + ("the deploy server restarted" if i % 2 else "a quiet night"),
                     "namespace": "team"} for i in range(5000)])
    store.add("the kubernetes upgrade", namespace="team")
    counts: list[str] = []
    scalar = store.db.scalar
    monkeypatch.setattr(store.db, "scalar", lambda sql, params=(): (counts.append(sql) if "MATCH" in sql else None)
                        or scalar(sql, params))
    team = Scope(namespaces=("team",), live_at="2026-01-01T00:00:00Z")
    assert store.kernel.keyword.prepare("server kubernetes", team).used == ("kubernetes",)  # no row left out
    store.add_many([{"text": f"a quiet day {i}", "namespace": "other"} for i in range(40)])
    assert store.kernel.keyword.prepare("server kubernetes", team).used == ("kubernetes",)  # 40 left out
    assert counts == []

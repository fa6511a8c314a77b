"""FTS5's capped keyword plan: when the query's words are held by many rows, only the rows holding
the rarest words (or two of the next ones) are ranked, each with the score the whole query gives it.

The plan starts at 20,000 matches; these tests lower the index's two limits to see it on a small memory.
"""

from __future__ import annotations

from itertools import combinations

import pytest

from shared_core.index.keyword import _two_of, planned_match
from shared_core.index.scope import Scope

pytestmark = pytest.mark.sqlite_only
EVERY = Scope(namespaces=("a", "b"))


def _fill(store) -> None:
    store.add_many([{"text": f"alpha note {i} about the garden", "namespace": "a"} for i in range(40)])
    store.add_many([{"text": f"beta note {i} about the kitchen", "namespace": "a"} for i in range(30)])
    store.add_many([{"text": f"alpha and beta together {i}", "namespace": "a"} for i in range(6)])
    store.add_many([{"text": f"alpha beta again {i}", "namespace": "b"} for i in range(3)])
    store.add("the zebra left the alpha pen", namespace="a", dedup=False)


def _search(store, text: str, limit: int, scope: Scope, *, planned: bool) -> list[tuple[int, float]]:
    index = store.kernel.keyword
    index.plan_matches, index.plan_rows = (10, 3) if planned else (10**9, 3)
    index._narrow.clear()
    return index.search(index.prepare(text), scope, limit)


def _texts(store, rows: list[tuple[int, float]]) -> list[str]:
    memories = store.kernel.memories.by_rowids([r for r, _ in rows])
    return [memories[r].text for r, _ in rows]


def test_the_plan_ranks_only_rows_with_the_rarest_word_or_two_others_and_keeps_their_scores(store):
    _fill(store)
    exact = dict(_search(store, "zebra alpha beta", 200, EVERY, planned=False))
    found = _search(store, "zebra alpha beta", 8, EVERY, planned=True)
    assert len(found) == 8
    texts = _texts(store, found)
    assert "zebra" in texts[0]
    assert all("zebra" in t or ("alpha" in t and "beta" in t) for t in texts)
    assert all(score == pytest.approx(exact[rowid], abs=1e-9) for rowid, score in found)
    assert found == sorted(exact.items(), key=lambda r: -r[1])[:8]  # here the best 8 are exactly those rows


def test_too_few_planned_rows_in_scope_ranks_every_match(store):
    _fill(store)
    scope = Scope(namespaces=("b",))
    planned = _search(store, "zebra alpha beta", 5, scope, planned=True)
    assert planned == _search(store, "zebra alpha beta", 5, scope, planned=False)
    assert len(planned) == 3
    whole = _search(store, "zebra alpha", 20, EVERY, planned=True)  # zebra, then every alpha row
    assert len(whole) == 20 and "zebra" in _texts(store, whole)[0]


def test_the_planned_match_expression():
    assert planned_match(("only",), (50,), 3) == ""
    assert planned_match(("zebra", "okapi"), (1, 2), 3) == ""  # every word among the rarest: the whole OR
    assert planned_match(("zebra", "alpha", "beta"), (1, 47, 39), 3) == '("zebra") OR ("beta" AND "alpha")'
    assert planned_match(("zebra", "alpha", "beta"), (1, 47, 39), 3, near_words=1) == '("zebra")'
    common = planned_match(("alpha", "beta", "gamma"), (47, 39, 60), 3)  # no rare word: two of the rarest
    assert common == '(("beta") AND ("alpha" OR "gamma") OR ("alpha" AND "gamma"))'


def test_the_plan_is_ranked_in_one_query_that_counts_each_word_once(store, sql_spy):
    """bm25() counts the rows of every phrase of the query it ranks: the plan's rows come from a
    subquery, so the ranked query holds each word once, and FTS5 runs it once (a constraint on the
    rowid would run it again for every planned row)."""
    _fill(store)
    with sql_spy(store.kernel.backend, "query", lambda sql: "bm25(memory_fts" in sql) as seen:
        found = _search(store, "zebra alpha beta", 8, EVERY, planned=True)
    assert len(seen) == 1
    sql, params = seen[0]
    assert "+rowid IN (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?)" in sql
    assert '"zebra" OR "alpha" OR "beta"' in params and '("zebra") OR ("beta" AND "alpha")' in params
    plan = store.kernel.backend.query("EXPLAIN QUERY PLAN " + sql, params)
    assert not any("=M" in str(row[-1]) for row in plan)  # FTS5 is given no rowid to look up
    assert len(found) == 8


@pytest.mark.parametrize("words", [2, 3, 4, 5, 6, 7])
def test_two_of_the_words_is_every_pair_and_names_each_word_few_times(store, words):
    """The plan's "at least two of these words", built from halves, finds what an OR of every pair finds."""
    names = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa"][:words]
    texts = [" ".join(chosen) for size in (1, 2, 3) for chosen in combinations(names, size)]
    store.add_many([{"text": t} for t in texts])
    quoted = [f'"{n}"' for n in names]
    match = "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid"
    pairs = " OR ".join(f"({a} AND {b})" for a, b in combinations(quoted, 2))
    found = store.kernel.backend.query(match, (_two_of(quoted),))
    assert found == store.kernel.backend.query(match, (pairs,))
    assert len(found) == sum(1 for t in texts if len(t.split()) >= 2)
    assert sum(_two_of(quoted).count(q) for q in quoted) <= {2: 2, 3: 5, 4: 8, 5: 12, 6: 16, 7: 20}[words]

"""The filter language: every operator, nesting, and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import And, Condition, FilterError, Not, Or

DOCS = {
    "a": {"team": "infra", "priority": 3, "tags": ["deploy", "prod"], "title": "Deploy Guide", "done": True,
          "owner": {"name": "alice", "level": 2}, "due": "2026-03-01"},
    "b": {"team": "infra", "priority": 1, "tags": ["prod"], "title": "Incident notes", "done": False, "empty": []},
    "c": {"team": "web", "priority": 5, "tags": [], "title": "Web roadmap", "note": "", "owner": {"name": "bob"}},
    "d": {"team": "web", "priority": 2.5, "title": "deploy checklist", "due": "2026-01-15"},
}


@pytest.fixture
def docs(store):
    for key, meta in DOCS.items():
        store.add(f"document {key}", id=key, metadata=meta, dedup=False)
    return store


def ids(store, where):
    return sorted(m.id for m in store.list(where=where))


@pytest.mark.parametrize(
    "where, expected",
    [
        ({"team": "infra"}, ["a", "b"]),
        ({"team": {"$eq": "web"}}, ["c", "d"]),
        ({"team": {"$ne": "web"}}, ["a", "b"]),
        ({"priority": {"$gt": 2}}, ["a", "c", "d"]),
        ({"priority": {"$gte": 3}}, ["a", "c"]),
        ({"priority": {"$lt": 2.5}}, ["b"]),
        ({"priority": {"$lte": 2.5}}, ["b", "d"]),
        ({"priority": {"$gt": 1, "$lt": 5}}, ["a", "d"]),
        ({"priority": {"$between": [2, 3]}}, ["a", "d"]),
        ({"due": {"$gte": "2026-02-01"}}, ["a"]),
        ({"team": {"$in": ["web", "ops"]}}, ["c", "d"]),
        ({"team": {"$nin": ["web"]}}, ["a", "b"]),
        ({"note": {"$nin": ["x"]}}, ["a", "b", "c", "d"]),  # missing counts as not in
        ({"tags": {"$contains": "prod"}}, ["a", "b"]),
        ({"title": {"$contains": "eploy"}}, ["a", "d"]),  # substring on strings
        ({"tags": {"$any": ["deploy", "x"]}}, ["a"]),
        ({"tags": {"$all": ["deploy", "prod"]}}, ["a"]),
        ({"tags": {"$all": ["prod"]}}, ["a", "b"]),
        ({"team": {"$any": ["web"]}}, ["c", "d"]),  # scalar fields act as one-element lists
        ({"title": {"$text_match": "deploy"}}, ["d"]),
        ({"title": {"$text_match_insensitive": "DEPLOY"}}, ["a", "d"]),
        ({"tags": {"$is_empty": True}}, ["c", "d"]),
        ({"empty": {"$is_empty": True}}, ["a", "b", "c", "d"]),
        ({"note": {"$is_empty": False}}, []),
        ({"tags": {"$is_empty": False}}, ["a", "b"]),
        ({"note": {"$exists": True}}, ["c"]),
        ({"done": True}, ["a"]),
        ({"done": False}, ["b"]),
        ({"owner.name": "alice"}, ["a"]),
        ({"owner.level": {"$gte": 2}}, ["a"]),
        ({"missing": None}, ["a", "b", "c", "d"]),
        ({"tags": ["prod"]}, ["b"]),
        ({"$or": [{"team": "web"}, {"priority": 3}]}, ["a", "c", "d"]),
        ({"$and": [{"team": "infra"}, {"done": False}]}, ["b"]),
        ({"$not": {"team": "infra"}}, ["c", "d"]),
        ({"$not": {"note": {"$exists": True}}}, ["a", "b", "d"]),
        ({"$or": [{"$and": [{"team": "web"}, {"priority": {"$gt": 3}}]}, {"$not": {"tags": {"$exists": True}}}]},
         ["c", "d"]),
        ({"@kind": "fact", "team": "web"}, ["c", "d"]),
        ({"@id": {"$in": ["a", "z"]}}, ["a"]),
    ],
)
def test_operator(docs, where, expected):
    assert ids(docs, where) == expected


def test_filter_objects_equal_dict_form(docs):
    tree = Or((And((Condition("team", "eq", "web"), Condition("priority", "$gt", 3))), Not(Condition("tags", "exists", True))))
    assert ids(docs, tree) == ["c", "d"]


def test_numbers_and_strings_never_compare_across_types(store):
    store.add("x", id="num", metadata={"v": 10})
    store.add("y", id="str", metadata={"v": "9"})
    assert ids(store, {"v": {"$gt": 5}}) == ["num"]
    assert ids(store, {"v": {"$gt": "5"}}) == ["str"]


@pytest.mark.parametrize(
    "where, message",
    [
        ({"team": {"$regex": "x"}}, "unknown filter operator '\\$regex'"),
        ({"$xor": []}, "cannot stand at the top"),
        ({"$and": "nope"}, "takes a list"),
        ({"$and": []}, "at least one"),
        ({"priority": {"$gt": [1]}}, "number or a string"),
        ({"team": {"$in": "web"}}, "list of values"),
        ({"team": {"$between": [1]}}, "low, high"),
        ({"team": {"$is_empty": "yes"}}, "true or false"),
        ({"@nope": 1}, "unknown built-in field"),
        ("team = web", "must be a dict"),
    ],
)
def test_malformed_filters_are_clear_errors(store, where, message):
    with pytest.raises(FilterError, match=message):
        store.search("x", where=where)


def test_filter_applies_before_top_k(store):
    for i in range(30):
        store.add(f"common words shared by every note {i}", metadata={"keep": i % 10 == 0}, dedup=False)
    hits = store.search("common words shared by every note", where={"keep": True}, limit=5, fusion="vector")
    assert len(hits) == 3 and all(h.metadata["keep"] for h in hits)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: not k.startswith(("$", "@"))),
                       st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none()), max_size=3))
def test_equality_filters_never_raise_anything_but_filter_errors(store, where):
    try:
        store.list(where=where)
    except FilterError:  # a clear error is fine; anything else (SQLite, overflow) is not
        pass


@pytest.mark.sqlite_only
def test_a_time_range_on_created_at_uses_the_index(docs):
    from shared_core.index.filter_sql import compile_filter

    where = And((Condition("@created_at", "$gte", "2023-05-01T00:00:00Z"),
                 Condition("@created_at", "$lt", "2023-06-01T00:00:00Z")))
    sql, params = compile_filter(where, "c")
    plan = " ".join(str(row[-1]) for row in docs.db.query(
        f"EXPLAIN QUERY PLAN SELECT c.chunk_rowid FROM memory_chunks c WHERE c.namespace = ? AND {sql}",
        ["default", *params]))
    assert "created_at>?" in plan and "created_at<?" in plan, plan  # a range, not every row of the namespace
    assert ids(docs, where) == []
    assert ids(docs, Condition("@created_at", "$gte", "2000-01-01T00:00:00Z")) == ["a", "b", "c", "d"]


@pytest.mark.postgres_only
def test_a_time_range_on_created_at_uses_the_index_on_postgresql(store):
    from datetime import datetime, timedelta, timezone

    from shared_core import NewMemory
    from shared_core.index.filter_sql import compile_filter

    start = datetime(2020, 1, 1, tzinfo=timezone.utc)
    store.add_many([NewMemory(f"note {i}", created_at=start + timedelta(hours=6 * i), category=f"c{i % 3}")
                    for i in range(3000)])
    store.db.execute("ANALYZE memory_chunks")
    where = And((Condition("@created_at", "$gte", "2021-05-01T00:00:00Z"),
                 Condition("@created_at", "$lt", "2021-05-02T00:00:00Z")))
    sql, params = compile_filter(where, "c", "postgresql")
    plan = [str(row[0]) for row in store.db.query(
        f"EXPLAIN SELECT c.chunk_rowid FROM memory_chunks c WHERE c.namespace = ? AND {sql}", ["default", *params])]
    assert any("Index Cond" in line and "created_at >=" in line for line in plan), plan  # a range, not a filter
    assert len(store.list(where=where, limit=10)) == 4
    assert len(store.list(where=Not(where), limit=5000)) == 2996

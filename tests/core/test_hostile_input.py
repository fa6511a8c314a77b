"""Hostile input through the Python API: a clear error or a right answer, and the next call works.

Each case is one measured in the issue that broke a store or a namespace for good, or leaked a
raw Python error. Every refusal is an ``OpenKoiError`` (``InputError``/``TooLargeError`` are also
``ValueError``s) that names the argument; afterwards the same store adds and finds as usual.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import FilterError, HashingEmbedder, MemoryStore, OpenKoiError
from shared_core.errors import InputError, TooLargeError
from shared_core.ranking import SCORE_BOUND
from shared_core.validation import LIMITS


def still_works(store: MemoryStore, namespace: str = "canary") -> None:
    """The store adds and finds after whatever came before."""
    mid = store.add("the canary still sings in the mine", namespace=namespace, dedup=False)
    assert mid in store.search("canary sings", namespace=namespace).ids
    store.delete(mid)


def test_scores_stay_bounded_and_search_keeps_working(store):
    mid = store.add("a memory reinforced far too often", namespace="a")
    for _ in range(40):
        store.reinforce(mid, weight=100)
    assert store.get(mid).score == SCORE_BOUND
    assert store.search("reinforced", namespace="a").ids == [mid]
    for _ in range(3):
        store.demote(mid, weight=1000)
    assert store.get(mid).score == -SCORE_BOUND
    assert store.search("reinforced", namespace="a").ids == [mid]
    still_works(store)


@pytest.mark.sqlite_only
def test_a_score_stored_past_the_bound_by_an_older_version_still_ranks(clock):
    # the hashing embedder: the two texts are not near-duplicates for it (the static one puts them
    # above 0.9, so the second would be the first's new version)
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        _score_past_the_bound(store)


def _score_past_the_bound(store):
    low = store.add("stored by an older version, low score", namespace="a")
    high = store.add("stored by an older version, high score", namespace="a")
    store.db.execute("UPDATE memory_chunks SET score = 5000 WHERE id = ?", (high,))
    store.db.execute("UPDATE memory_chunks SET score = -5000 WHERE id = ?", (low,))
    hits = store.search("stored by an older version", namespace="a")
    assert hits.ids == [high, low] and all(math.isfinite(h.score) for h in hits)


@pytest.mark.parametrize("weight", [math.nan, math.inf, -math.inf, 10**400, 1001, "3", True])
def test_feedback_weights_must_be_finite_numbers(store, weight):
    mid = store.add("a memory to reinforce")
    with pytest.raises(InputError, match="weight"):
        store.reinforce(mid, weight=weight)
    with pytest.raises(InputError, match="weight"):
        store.demote(mid, weight=weight)
    assert store.get(mid).score == 0
    still_works(store)


@pytest.mark.parametrize("query", ["\ud800", "?? \udfff !!", "\ud800" * 3])
def test_a_lone_surrogate_in_a_query_is_refused_and_breaks_nothing(store, query):
    with pytest.raises(InputError, match="cannot be stored"):
        store.search(query)
    still_works(store)


@pytest.mark.parametrize(("argument", "value"), [
    ("text", "bad \ud800 text"), ("namespace", "user:\udcff"), ("tags", ["ok", "b\ud834d"]),
    ("metadata", {"k\ud800": 1}), ("metadata", {"k": "v\udc00"}), ("category", "c\ud800"),
    ("id", "id-\ud800"),
])
def test_unencodable_characters_are_refused_where_they_come_in(store, argument, value):
    kwargs = {"text": "a fine text", argument: value}
    text = kwargs.pop("text")
    with pytest.raises(InputError, match="cannot be stored"):
        store.add(text, **kwargs)
    assert store.count(namespace_prefix="") == 0
    still_works(store)


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c \ufeff", "\u00ad\n\t"])
def test_text_of_only_invisible_characters_is_empty(store, text):
    with pytest.raises(InputError, match="empty"):
        store.add(text)


def test_times_outside_the_supported_years_are_refused(store):
    with pytest.raises(InputError, match="years 1000 to 9999"):
        store.add("an old fact", expires_at="0999-01-01T00:00:00Z")
    with pytest.raises(InputError, match="years"):
        store.add("a very old fact", created_at=datetime(5, 1, 1, tzinfo=timezone.utc))
    with pytest.raises(InputError, match="ends after the year 9999"):
        store.add("forever", ttl=1e300)
    with pytest.raises(InputError, match="ttl"):
        store.add("forever", ttl=timedelta(days=4_000_000))
    with pytest.raises(InputError, match="finite"):
        store.add("never", ttl=math.nan)
    still_works(store)


@pytest.mark.sqlite_only
def test_an_unpadded_year_written_by_an_older_version_reads_back(store):
    mid = store.add("expires long ago", namespace="a")
    store.db.execute("UPDATE memory_chunks SET expires_at = '999-01-01T00:00:00.000000Z' WHERE id = ?", (mid,))
    assert store.get(mid).expires_at == datetime(999, 1, 1, tzinfo=timezone.utc)
    store.search("expires", namespace="a", include_expired=True)
    assert [m.id for m in store.list(namespace="a", include_expired=True)] == [mid]
    still_works(store)


def test_queries_have_a_length_cap_and_long_words_are_cheap(store):
    store.add("a memory about tides")
    with pytest.raises(TooLargeError, match="10,000"):
        store.search("a" * (LIMITS.query_chars + 1))
    store.search("x" * LIMITS.query_chars)  # one huge word: the sanitiser is linear (was quadratic)
    store.search("https://" + "y" * (LIMITS.query_chars - 10))
    long_words = " ".join(f"w{i}" for i in range(2000))[: LIMITS.query_chars]
    store.search(long_words)  # a pasted page: the keyword query keeps the first 64 distinct words
    still_works(store)


def test_filters_past_the_limits_are_client_errors(store):
    deep: dict = {"a": 1}
    for _ in range(600):
        deep = {"$and": [deep]}
    with pytest.raises(TooLargeError, match="levels deep"):
        store.search("x", where=deep)
    negated: dict = {"a": 1}
    for _ in range(600):
        negated = {"$not": negated}
    with pytest.raises(FilterError, match="levels deep"):
        store.list(where=negated)
    with pytest.raises(TooLargeError, match="256 conditions"):
        store.search("x", where={"$or": [{f"k{i}": i} for i in range(1000)]})
    with pytest.raises(FilterError, match="NUL"):
        store.count(where={"a\x00b": 1})
    with pytest.raises(TooLargeError, match="1,000"):
        store.search("x", where={"k": {"$in": list(range(5000))}})
    still_works(store)


def test_metadata_nested_too_deep_or_too_big_is_refused(store):
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(TooLargeError, match="levels deep"):
        store.add("deep", metadata=deep)
    with pytest.raises(TooLargeError, match="1,000,000"):
        store.add("big", metadata={"blob": "x" * (LIMITS.json_bytes + 1)})
    still_works(store)


def test_tags_have_a_count_and_size_limit(store):
    with pytest.raises(TooLargeError, match="256"):
        store.add("tagged", tags=[f"t{i}" for i in range(120_000)])
    with pytest.raises(TooLargeError, match="tag"):
        store.add("tagged", tags=["x" * 300])
    with pytest.raises(TooLargeError):
        store.add("tagged", tags=",".join(f"t{i}" for i in range(120_000)))
    still_works(store)


@pytest.mark.parametrize("limit", [820, 5000, LIMITS.results])
def test_large_limits_answer(store, limit):
    store.add_many([f"tide table entry {i}" for i in range(30)])
    assert len(store.search("tide", limit=limit)) == 30
    assert len(store.search("tide", limit=limit, fusion="vector")) == 30


@pytest.mark.sqlite_only
@pytest.mark.parametrize("limit", [820, 4096, LIMITS.results])
def test_large_limits_answer_on_the_sqlite_vec_path(tmp_path, clock, limit):
    """The one-shot CLI searches with sqlite-vec, whose KNN takes at most 4,096 neighbours."""
    config = {"search": {"vector_index": "sqlite-vec"}}
    with MemoryStore.open(tmp_path / "m.db", clock=clock, config=config) as store:
        store.add_many([f"tide table entry {i}" for i in range(30)])
        assert len(store.search("tide", limit=limit)) == 30
        vector_hits = store.search("tide table entry 7", limit=limit, fusion="vector")
        assert len(vector_hits) == 30 and vector_hits[0].text == "tide table entry 7"


def test_limits_past_the_cap_are_refused(store):
    with pytest.raises(TooLargeError, match="limit"):
        store.search("x", limit=LIMITS.results + 1)
    with pytest.raises(InputError, match="limit"):
        store.search("x", limit=-1)
    with pytest.raises(InputError, match="mmr_lambda"):
        store.search("x", mmr_lambda=math.nan)


# -- a fuzz test that stays: any argument, a clear error or an answer, and the store still works -----
# (`make fuzz` runs it with OPENKOI_FUZZ_EXAMPLES examples, 500 by default)

_ANY_TEXT = st.text(max_size=40) | st.sampled_from(["\ud800", "\x00", "\u200b", " ", "x" * 2000])
_ANY_NUMBER = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30))
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _ANY_TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_ANY_TEXT, children, max_size=3),
    max_leaves=10,
)
_FILTER = st.recursive(
    st.dictionaries(_ANY_TEXT, _JSON, max_size=2),
    lambda children: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(children, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(children, max_size=3)),
        st.builds(lambda x: {"$not": x}, children),
        st.builds(lambda k, op, v: {k: {op: v}}, _ANY_TEXT,
                  st.sampled_from(["$eq", "$in", "$gt", "$any", "$all", "$text_match", "$bogus", "$is_empty"]), _JSON),
    ),
    max_leaves=6,
)
_CALLS = st.one_of(
    st.builds(lambda text, ns, tags, meta, imp, ttl: ("add", text,
                                                      {"namespace": ns, "tags": tags, "metadata": meta,
                                                       "importance": imp, "ttl": ttl}),
              _ANY_TEXT, _ANY_TEXT, st.lists(_ANY_TEXT, max_size=3) | _ANY_TEXT,
              st.none() | st.dictionaries(_ANY_TEXT, _JSON, max_size=3), _ANY_NUMBER, _ANY_NUMBER),
    st.builds(lambda q, lim, where: ("search", q, {"limit": lim, "where": where}),
              _ANY_TEXT, st.none() | st.integers(-5, 20_000), st.none() | _FILTER),
    st.builds(lambda where: ("list", None, {"where": where}), _FILTER),
    st.builds(lambda w: ("reinforce", None, {"weight": w}), _ANY_NUMBER),
    st.builds(lambda t, exp: ("update", t, {"expires_at": exp}),
              _ANY_TEXT, st.none() | _ANY_TEXT | st.datetimes(timezones=st.just(timezone.utc))),
)


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=int(os.environ.get("OPENKOI_FUZZ_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(_CALLS, min_size=1, max_size=4))
def test_any_arguments_give_an_answer_or_a_clear_error(store, calls):
    target = store.add("the fuzz target memory", namespace="fuzz", dedup=False)
    for name, text, kwargs in calls:
        try:
            if name == "add":
                store.add(text, **{k: v for k, v in kwargs.items() if v is not None})
            elif name == "search":
                store.search(text, **{k: v for k, v in kwargs.items() if v is not None})
            elif name == "list":
                store.list(**kwargs)
            elif name == "reinforce":
                store.reinforce(target, **{k: v for k, v in kwargs.items() if v is not None})
            else:
                store.update(target, text, **kwargs)
        except (OpenKoiError, TypeError, ValueError) as exc:  # a refusal the library meant, with a message
            assert str(exc) and not isinstance(exc, UnicodeError), exc
    still_works(store)
    store.delete(target, missing_ok=True)

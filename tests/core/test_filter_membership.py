"""Filter language: literal key paths, contains/any/all, and booleans as numbers.

These are the semantics LlamaIndex's SimpleVectorStore gives its filter operators
(``value in metadata_value``; ``True == 1``), which the core now shares.
"""

from __future__ import annotations

import pytest

from shared_core import Condition, FilterError, Not


@pytest.fixture
def ids(store):
    def run(where):
        return sorted(m.id for m in store.list(where=where))

    store.add("one", id="list", metadata={"v": ["red", "green"], "n": [1, 2]}, dedup=False)
    store.add("two", id="text", metadata={"v": "dark red wine", "n": 1}, dedup=False)
    store.add("three", id="none", metadata={"v": None}, dedup=False)
    store.add("four", id="missing", metadata={}, dedup=False)
    store.add("five", id="flag", metadata={"v": True, "n": True}, dedup=False)
    return run


def test_contains_is_element_or_substring(ids):
    assert ids({"v": {"$contains": "red"}}) == ["list", "text"]
    assert ids({"v": {"$contains": "ree"}}) == []  # elements match whole, strings by substring
    assert ids({"n": {"$contains": 2}}) == ["list"]


def test_any_and_all_mean_contains_any_and_all(ids):
    assert ids({"v": {"$any": ["green", "wine"]}}) == ["list", "text"]
    assert ids({"v": {"$all": ["red", "green"]}}) == ["list"]
    assert ids({"v": {"$all": ["dark", "wine"]}}) == ["text"]  # substrings of one string
    assert ids({"v": {"$any": []}}) == []
    assert ids({"v": {"$all": []}}) == ["flag", "list", "text"]  # needs some value to hold "all of none"
    assert ids(Not(Condition("v", "$any", ["red"]))) == ["flag", "missing", "none"]


def test_booleans_compare_as_numbers(ids):
    assert ids({"n": 1}) == ["flag", "text"]  # True == 1, as in Python
    assert ids({"n": {"$gte": 1}}) == ["flag", "text"]
    assert ids({"n": {"$lt": 1}}) == []
    assert ids({"v": True}) == ["flag"]
    assert ids({"n": {"$in": [1]}}) == ["flag", "text"]


def test_tuple_fields_address_keys_literally(store):
    odd = {"a.b": 1, "@kind": 2, "$x": 3, 'q"uote': 4, "back\\slash": 5, "a": {"b": 6}}
    store.add("odd keys", id="odd", metadata=odd)

    def found(field, value):
        return [m.id for m in store.list(where=Condition(field, "$eq", value))]

    assert found(("a.b",), 1) == ["odd"]
    assert found(("@kind",), 2) == ["odd"]
    assert found(("$x",), 3) == ["odd"]
    from shared_core.index.filters_sqlite import _escaped_labels

    if _escaped_labels():
        assert found(('q"uote',), 4) == ["odd"]
    else:  # SQLite before 3.45 (Debian 12's): a clear error instead of a silent non-match
        with pytest.raises(FilterError, match="double quote"):
            found(('q"uote',), 4)
    assert found(("back\\slash",), 5) == ["odd"]
    assert found(("a", "b"), 6) == ["odd"]
    assert found("a.b", 6) == ["odd"]  # the string form still walks into objects
    with pytest.raises(FilterError, match="tuple of strings"):
        Condition((), "$eq", 1)
    with pytest.raises(FilterError, match="tuple of strings"):
        Condition(("a", 3), "$eq", 1)  # type: ignore[arg-type]


def test_any_all_reject_null_items():
    with pytest.raises(FilterError, match="list items"):
        Condition("v", "$any", ["a", None])


def test_equality_with_a_list_never_parses_plain_strings(store):
    store.add("plain", id="s", metadata={"v": "", "w": "not json ["})
    store.add("list", id="l", metadata={"v": ["a"], "w": []})
    assert [m.id for m in store.list(where={"v": ["a"]})] == ["l"]
    assert [m.id for m in store.list(where={"w": {"$ne": []}})] == ["s"]

"""Seed 002's FTS5 query sanitiser: six rules, and no input can raise an FTS5 error."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core.errors import InputError
from shared_core.index.sanitize import query_terms, sanitize


def test_rule_1_urls_are_stripped():
    assert query_terms("see https://example.com/a-b?x=1 and www.foo.org/bar now") == ["see", "and", "now"]


def test_rule_2_hyphens_split_words():
    assert query_terms("payment-api well-known") == ["payment", "api", "well", "known"]


def test_rule_3_punctuation_and_fts_specials_are_stripped():
    assert query_terms('col:umn "quoted" (group) a*b NEAR/2 x^y {z}') == [
        "col", "umn", "quoted", "group", "NEAR"]


def test_rule_4_single_character_tokens_are_dropped():
    assert query_terms("a b cd e fg 1 23") == ["cd", "fg", "23"]


def test_rules_5_and_6_quote_each_word_and_join_with_or():
    assert sanitize("payment HMAC signature") == '"payment" OR "HMAC" OR "signature"'


def test_fts_keywords_are_matched_literally(store):
    mid = store.add("use AND or NOT near the door")
    assert store.search("AND NOT NEAR", fusion="keyword").ids == [mid]


def test_repeats_are_dropped_case_insensitively():
    assert query_terms("Deploy deploy DEPLOY prod") == ["Deploy", "prod"]


def test_nothing_left_means_empty_query():
    assert sanitize("?! - a . https://x.io") == ""


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text())
def test_any_unicode_query_searches_without_error(store, text):
    store.search(text, fusion="keyword", track_access=False) if text.strip() else None


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1))
def test_any_unicode_text_can_be_stored_and_found_again(store, text):
    if not text.strip() or "\x00" in text:
        return
    if all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text):
        with pytest.raises(InputError, match="empty"):  # only invisible characters: nothing to remember
            store.add(text, dedup=False)
        return
    store.add(text, dedup=False)
    store.search(text, track_access=False)  # hybrid: sanitised keywords + vector

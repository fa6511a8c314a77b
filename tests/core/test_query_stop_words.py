"""A question's frame ("what did", "has her") does not rank memories on the keyword side.

Runs on both backends (``OPENKOI_TEST_BACKEND=postgres``).
"""

from __future__ import annotations

import pytest

from shared_core import MemoryStore
from shared_core.config import Config, ConfigError
from shared_core.index.sanitize import STOP_WORDS, search_terms, without_stop_words

ENGLISH = STOP_WORDS["english"]


def test_a_question_keeps_its_content_words():
    assert without_stop_words(search_terms("What did Caroline research?"), ENGLISH) == ["caroline", "research"]
    assert without_stop_words(search_terms("How many times has she been to the beach"), ENGLISH) == [
        "times", "beach"]


def test_a_query_of_stop_words_alone_is_kept_whole():
    assert without_stop_words(search_terms("The Who"), ENGLISH) == ["the", "who"]
    assert without_stop_words(search_terms("what is it"), STOP_WORDS["none"]) == ["what", "is", "it"]


def test_other_languages_and_scripts_pass_through():
    assert without_stop_words(search_terms("Straße nach 東京"), ENGLISH) == ["strasse", "nach", "東京"]


def test_the_setting_is_checked():
    assert Config.load().search.query_stop_words == "english"
    with pytest.raises(ConfigError, match="query_stop_words"):
        Config.load(overrides={"search": {"query_stop_words": "klingon"}})


def _keyword_ranking(clock, stop_words: str | None) -> list[str]:
    config: dict = {"search": {"track_access": False}}
    if stop_words is not None:
        config["search"]["query_stop_words"] = stop_words
    with MemoryStore.open(":memory:", clock=clock, embedder="hashing", config=config) as store:
        store.add("Caroline: Cool! What did it look like?", id="chatter")
        store.add("Caroline: Researching adoption agencies has been a dream of mine", id="answer")
        store.add("Melanie: I went camping with the kids", id="other")
        return store.search("What did Caroline research?", fusion="keyword", limit=3).ids


def test_the_memory_about_the_question_ranks_above_one_sharing_its_frame(clock):
    assert _keyword_ranking(clock, "none")[0] == "chatter"  # BM25 on "what did caroline" alone
    assert _keyword_ranking(clock, None)[0] == "answer"


def test_a_search_of_stop_words_alone_still_finds_them(clock):
    with MemoryStore.open(":memory:", clock=clock, embedder="hashing") as store:
        store.add("The Who played in London", id="band")
        store.add("A quiet evening at home", id="evening")
        assert store.search("the who", fusion="keyword").ids == ["band"]

"""A time in the question narrows or raises the memories of that time (search.time_phrases)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from shared_core import ManualClock, MemoryStore

THURSDAY = datetime(2024, 5, 16, 18, 0, tzinfo=timezone.utc)


@pytest.fixture
def diary(tmp_path):
    clock = ManualClock(THURSDAY - timedelta(days=40))
    store = MemoryStore.open(tmp_path / "diary.db", clock=clock)
    written = {}
    for when, text in [
        (THURSDAY - timedelta(days=37), "Planted tomatoes in the garden"),
        (THURSDAY - timedelta(days=9), "Watered the garden and pulled weeds"),
        (THURSDAY - timedelta(days=2), "Garden: the tomatoes need stakes"),   # Tuesday 14 May
        (THURSDAY - timedelta(days=1), "Garden looks great after the rain"),
        (THURSDAY - timedelta(days=20), "Booked the trip to Lisbon"),
        (THURSDAY - timedelta(days=25), "Bought sunscreen for the holiday"),
        (THURSDAY - timedelta(days=5), "Bought azulejo tiles as souvenirs for the holiday"),
    ]:
        clock.set(when)
        written[text] = store.add(text, dedup=False)
    clock.set(THURSDAY)
    yield store, written
    store.close()


def test_last_tuesday_raises_tuesdays_memory(diary):
    store, written = diary
    plain = store.search("what did I note about the garden?", time_phrases="off", track_access=False)
    timed = store.search("what did I note about the garden last Tuesday?", track_access=False)
    tuesday = written["Garden: the tomatoes need stakes"]
    assert timed.ids[0] == tuesday
    assert plain.ids[0] != tuesday or plain[0].score < timed[0].score


def test_narrow_keeps_only_the_window(diary):
    store, written = diary
    hits = store.search("garden in the last 10 days", time_phrases="narrow", track_access=False)
    assert {written["Watered the garden and pulled weeds"], written["Garden: the tomatoes need stakes"],
            written["Garden looks great after the rain"]} <= set(hits.ids)
    # the embedder may add other memories of those days by meaning; nothing older comes back
    assert all(hit.memory.created_at >= THURSDAY - timedelta(days=10) for hit in hits)
    assert written["Planted tomatoes in the garden"] not in hits.ids


def test_before_an_event_is_placed_by_the_memory_of_the_event(diary):
    store, written = diary
    hits = store.search("what did I buy for the holiday before the trip?", time_phrases="narrow", track_access=False)
    assert hits.ids[0] == written["Bought sunscreen for the holiday"]
    assert written["Bought azulejo tiles as souvenirs for the holiday"] not in hits.ids  # bought after the trip


def test_the_question_can_be_asked_at_another_time(diary):
    store, written = diary
    asked = THURSDAY - timedelta(days=30)  # a replay: "yesterday" then was 7 days after the tomatoes
    hits = store.search("garden in the last 10 days", time_phrases="narrow", asked_at=asked, track_access=False)
    assert hits.ids == [written["Planted tomatoes in the garden"]]


def test_off_ignores_the_phrase_and_bad_modes_are_refused(diary):
    store, _ = diary
    assert store.search("garden last Tuesday", time_phrases="off", track_access=False)
    with pytest.raises(ValueError, match="off, boost, narrow"):
        store.search("garden", time_phrases="sometimes")


def test_the_mode_comes_from_the_config(tmp_path):
    with MemoryStore.open(tmp_path / "n.db", config={"search": {"time_phrases": "narrow"}}) as store:
        assert store.config.search.time_phrases == "narrow"
    from shared_core import ConfigError
    with pytest.raises(ConfigError, match="time_phrases"):
        MemoryStore.open(tmp_path / "x.db", config={"search": {"time_phrases": "always"}})


def test_the_docs_example_runs():
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "search.md").read_text(encoding="utf-8")
    section = page.split("## Times in the question", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1), "search.md[times]", "exec"), {})  # noqa: S102 - our own documentation


def _window_searches(monkeypatch) -> list[int]:
    """Counts the candidate searches of each store.search (one for the scope, one more for a window)."""
    from shared_core.search import Searcher

    calls: list[int] = []
    original = Searcher._candidates

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Searcher, "_candidates", counted)
    return calls


def test_a_window_memory_the_pool_missed_is_still_raised(tmp_path, monkeypatch):
    clock = ManualClock(THURSDAY - timedelta(days=60))
    config = {"search": {"candidates": 5, "track_access": False}}
    with MemoryStore.open(tmp_path / "pool.db", clock=clock, embedder="hashing", config=config) as store:
        for i in range(12):  # better keyword matches, all long before the window
            store.add(f"garden note {i}: garden garden tomatoes", dedup=False)
        clock.set(THURSDAY - timedelta(days=2))
        tuesday = store.add("Tuesday in the garden: the beans climb", dedup=False)
        clock.set(THURSDAY)
        calls = _window_searches(monkeypatch)
        assert tuesday not in store.search("garden", limit=1, time_phrases="off").ids  # not in the pool of 5
        assert len(calls) == 1
        assert store.search("garden last Tuesday", limit=1).ids == [tuesday]
        assert len(calls) == 3  # the scope, then the window's own search


def test_a_window_that_holds_the_pool_or_nothing_is_not_searched_again(diary, monkeypatch):
    store, written = diary
    calls = _window_searches(monkeypatch)
    store.search("garden in the last 60 days", track_access=False)  # every memory is in the window
    assert len(calls) == 1
    store.search("garden in 2019", track_access=False)  # nothing is
    assert len(calls) == 2
    hits = store.search("garden in the last 3 days", track_access=False)  # a few are: the pool holds all 7
    assert len(calls) == 3 and hits.ids[0] in (written["Garden: the tomatoes need stakes"],
                                                written["Garden looks great after the rain"])


def test_a_time_phrase_reads_each_candidates_ranking_columns_once(diary, monkeypatch):
    from shared_core.memories.repository import MemoryRepository

    store, written = diary
    asked: list[int] = []
    original = MemoryRepository.ranking_columns

    def recorded(self, rowids):
        asked.extend(rowids)
        return original(self, rowids)

    monkeypatch.setattr(MemoryRepository, "ranking_columns", recorded)
    hits = store.search("garden in the last 3 days", track_access=False)  # the window decision reads them first
    assert hits.ids[0] in (written["Garden: the tomatoes need stakes"], written["Garden looks great after the rain"])
    assert asked and len(asked) == len(set(asked))


def test_the_window_search_asks_the_scope_keyword_query_again(tmp_path, monkeypatch):
    """The window's own search ranks the whole scope's keyword query in the window (BM25 of one query,
    comparable with the first side's) instead of gating its words on counts of the window's rows."""
    from shared_core.search import Searcher

    clock = ManualClock(THURSDAY - timedelta(days=60))
    config = {"search": {"candidates": 5, "track_access": False}}
    with MemoryStore.open(tmp_path / "pool.db", clock=clock, embedder="hashing", config=config) as store:
        for i in range(12):
            store.add(f"garden note {i}: garden garden tomatoes", dedup=False)
        clock.set(THURSDAY - timedelta(days=2))
        tuesday = store.add("Tuesday in the garden: the beans climb", dedup=False)
        clock.set(THURSDAY)
        calls = []
        original = Searcher._candidates

        def recorded(self, q, scope, query_vector, searched_keywords, pool, keyword_query=None):
            found = original(self, q, scope, query_vector, searched_keywords, pool, keyword_query)
            calls.append((scope, keyword_query, found[2]))
            return found

        monkeypatch.setattr(Searcher, "_candidates", recorded)
        assert store.search("garden last Tuesday", limit=1).ids == [tuesday]
        (whole, given, prepared), (window, given_again, used) = calls
        assert whole.created_from is None and given is None and prepared is not None
        assert window.created_from is not None and given_again is prepared and used is prepared

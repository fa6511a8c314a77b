"""A search bounded by when memories were created (``since``/``until``, a question's time window)
returns exactly the memories a listing with the same bounds returns, on the vector side too, and a
vector index decides the bounds on its own columns instead of reading the table's rows (a window of
a few hundred thousand of a million memories took 0.7 s to read)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from shared_core import ManualClock, MemoryStore
from shared_core.embed import HashingEmbedder
from shared_core.time_phrases import find_time

START = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)


@pytest.fixture
def diary(tmp_path):
    """Forty memories about the harbour, one a day (some given their time, some written at it)."""
    clock = ManualClock(START)
    with MemoryStore.open(tmp_path / "window.db", clock=clock, embedder=HashingEmbedder()) as store:
        for day in range(40):
            text = f"day {day}: a note about the harbour and the boats"
            if day % 2:
                store.add(text, id=f"d{day}", created_at=START + day * DAY, dedup=False)
            else:
                clock.set(START + day * DAY)
                store.add(text, id=f"d{day}", dedup=False)
        clock.set(START + 60 * DAY)
        yield store


def _days(ids) -> set[int]:
    return {int(i[1:]) for i in ids}


@pytest.mark.parametrize("fusion", ["vector", "keyword", None])
@pytest.mark.parametrize(("since", "until"), [(10, 20), (0, 1), (39, None), (None, 5), (25, 25), (None, None)])
def test_since_and_until_bound_a_search_as_they_bound_a_listing(diary, fusion, since, until):
    bounds = {"since": None if since is None else START + since * DAY,
              "until": None if until is None else START + until * DAY}
    listed = _days(m.id for m in diary.list(limit=100, **bounds))
    expected = set(range(since or 0, 40 if until is None else until))
    assert listed == expected  # since is inclusive, until exclusive: a memory created at either bound
    found = diary.search("harbour boats", fusion=fusion, limit=100, track_access=False, **bounds)
    assert _days(found.ids) == expected


def test_a_memory_given_another_time_moves_in_or_out_of_the_window(diary):
    window = {"since": START + 10 * DAY, "until": START + 20 * DAY}
    diary.add("day 15: a note about the harbour and the boats, revised", id="d15", created_at=START + 30 * DAY,
              dedup=False)
    diary.add("day 31: a note about the harbour and the boats, revised", id="d31", created_at=START + 12 * DAY,
              dedup=False)
    diary.add("day 12: the harbour and the boats, written again", id="d12", dedup=False)  # keeps its time
    found = diary.search("harbour boats", fusion="vector", limit=100, track_access=False, **window)
    assert _days(found.ids) == (set(range(10, 20)) - {15}) | {31}


def test_a_question_narrowed_to_its_time_finds_the_memories_of_that_time(diary):
    question, asked = "the harbour and the boats in the last 5 days", START + 20 * DAY
    window = find_time(question, asked)
    assert window is not None and window.start is not None
    listed = {m.id for m in diary.list(since=window.start, until=window.end, limit=100)}
    assert len(listed) >= 4
    found = diary.search(question, time_phrases="narrow", asked_at=asked, fusion="vector", limit=100,
                         track_access=False)
    assert set(found.ids) == listed


def test_another_connection_sees_the_times_of_memories_it_did_not_write(diary, tmp_path):
    window = {"since": START + 45 * DAY, "until": START + 50 * DAY}
    assert diary.search("harbour boats", fusion="vector", limit=100, track_access=False, **window).ids == []
    with MemoryStore.open(diary.path, embedder=HashingEmbedder()) as other:
        other.add("a note about the harbour and the boats from elsewhere", id="d47", created_at=START + 47 * DAY,
                  dedup=False)
        other.add("another harbour note from elsewhere, later", id="d55", created_at=START + 55 * DAY, dedup=False)
    found = diary.search("harbour boats", fusion="vector", limit=100, track_access=False, **window)
    assert found.ids == ["d47"]


@pytest.mark.sqlite_only  # the embedded backend's vector index; PostgreSQL's is an SQL query
def test_a_window_is_decided_on_the_vector_index_own_columns(diary, monkeypatch):
    index = diary.kernel.memories.vectors

    def refuse(scope):
        raise AssertionError("the window's rows were read from the table")

    monkeypatch.setattr(index, "_rowids_in", refuse)
    found = diary.search("harbour boats", fusion="vector", since=START + 10 * DAY, until=START + 20 * DAY,
                         limit=100, track_access=False)
    assert _days(found.ids) == set(range(10, 20))
    narrowed = diary.search("the harbour and the boats in the last 5 days", time_phrases="narrow",
                            asked_at=START + 20 * DAY, limit=100, track_access=False)
    assert narrowed.ids and _days(narrowed.ids) <= set(range(14, 21))

"""Time phrases in questions become windows relative to a reference time (time_phrases.find_time)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from shared_core.time_phrases import find_time, without_phrase

NOW = datetime(2024, 5, 16, 15, 30, tzinfo=timezone.utc)  # Thursday 16 May 2024


def span(question: str, now: datetime = NOW) -> tuple[str | None, str | None]:
    window = find_time(question, now)
    assert window is not None, question
    return (window.start.date().isoformat() if window.start else None,
            window.end.date().isoformat() if window.end else None)


@pytest.mark.parametrize("question, expected", [
    ("what did I say last Tuesday?", ("2024-05-14", "2024-05-15")),
    ("what did I say on Monday", ("2024-05-13", "2024-05-14")),
    ("what happened yesterday", ("2024-05-15", "2024-05-16")),
    ("anything today?", ("2024-05-16", "2024-05-17")),
    ("what did we plan next Friday", ("2024-05-17", "2024-05-18")),
    ("what did I cook last week", ("2024-05-06", "2024-05-13")),
    ("what did I cook last weekend", ("2024-05-11", "2024-05-13")),
    ("what did we talk about this month", ("2024-05-01", "2024-06-01")),
    ("what did I buy last month", ("2024-04-01", "2024-05-01")),
    ("what did I read last year", ("2023-01-01", "2024-01-01")),
    ("what did I say in March", ("2024-03-01", "2024-04-01")),
    ("what did I say in June", ("2023-06-01", "2023-07-01")),  # the last June that has begun
    ("the trip in August 2022", ("2022-08-01", "2022-09-01")),
    ("what happened in 2021", ("2021-01-01", "2022-01-01")),
    ("what did I say on 2024-02-29", ("2024-02-29", "2024-03-01")),
    ("what did she say on May 8, 2023", ("2023-05-08", "2023-05-09")),
    ("what did she say on 8 May 2023", ("2023-05-08", "2023-05-09")),
    ("what happened on the 3rd of May", ("2024-05-03", "2024-05-04")),
    ("what happened on December 24", ("2023-12-24", "2023-12-25")),  # not yet this year: last year's
    ("what did I say two weeks ago", ("2024-04-30", "2024-05-05")),
    ("3 days ago I mentioned a book", ("2024-05-12", "2024-05-15")),
    ("anything in the last 10 days", ("2024-05-06", None)),
    ("what did I say recently", ("2024-04-16", None)),
    ("what did I do before March", (None, "2024-03-01")),
    ("what changed since last week", ("2024-05-06", None)),
    ("anything after 2023-05-01", ("2023-05-02", None)),
])
def test_phrases_become_windows(question, expected):
    assert span(question) == expected


@pytest.mark.parametrize("question", [
    "what is the capital of France?",
    "May I ask what my diet is?",
    "I may march in the parade",
    "which weekday do I go swimming",
    "",
])
def test_questions_without_a_time_have_no_window(question):
    assert find_time(question, NOW) is None


def test_an_event_anchor_is_left_for_search_to_place():
    window = find_time("before the trip, what did we plan to pack?", NOW)
    assert window is not None and window.anchor == "the trip" and window.relation == "before"
    assert (window.start, window.end) == (None, None)
    trip = datetime(2024, 4, 2, tzinfo=timezone.utc)
    placed = window.around(trip)
    assert placed.end == trip and placed.start is None and placed.contains(trip - timedelta(days=1))
    assert find_time("since my wedding", NOW).around(trip).start == trip


def test_the_reference_time_decides_and_its_zone_too():
    tokyo = timezone(timedelta(hours=9))
    late = datetime(2024, 5, 16, 23, 30, tzinfo=timezone.utc)  # already Friday in Tokyo
    assert span("yesterday", late) == ("2024-05-15", "2024-05-16")
    assert span("yesterday", late.astimezone(tokyo)) == ("2024-05-16", "2024-05-17")
    with pytest.raises(ValueError, match="timezone-aware"):
        find_time("yesterday", datetime(2024, 5, 16))


def test_the_phrase_comes_out_of_the_keyword_query():
    window = find_time("what did I say about the garden last Tuesday?", NOW)
    assert window is not None and window.phrase == "last Tuesday"
    assert without_phrase("what did I say about the garden last Tuesday?", window) == \
        "what did I say about the garden ?"

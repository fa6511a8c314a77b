"""Whether a new text only restates a stored one: the test that decides reinforce or keep.

Embeddings cannot tell "the staging IP is 10.0.0.1" from "...10.0.0.2" (cosine 1.0 for many
embedders), "Bob is allergic to peanuts" from "Bob is not allergic to peanuts", or "email over
phone" from "phone over email". So similarity alone never merges two texts: a near-duplicate is
reinforced only when it says the same words in the same order once case, punctuation,
whitespace, articles and contractions are set aside. Everything else is new information and is
kept (as a new version of the old fact, or a new fact).

>>> is_restatement("The user prefers dark mode.", "user prefers  Dark Mode")
True
>>> is_restatement("Bob isn't allergic to peanuts", "Bob is not allergic to peanuts")
True
>>> is_restatement("Bob is allergic to peanuts", "Bob is not allergic to peanuts")
False
>>> is_restatement("User prefers email over phone", "User prefers phone over email")
False
>>> is_restatement("The staging server IP is 10.0.0.1", "The staging server IP is 10.0.0.2")
False
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import TypeVar

__all__ = ["statement_words", "is_restatement", "spell_out", "IGNORED_WORDS", "remembered"]

T = TypeVar("T")
SHORT_TEXT = 1000  # characters: the longest text whose answer is kept (at most ~4 MB for 1,024)

IGNORED_WORDS = frozenset({"a", "an", "the"})
"""Words a restatement may add or drop: articles only. Negations, numbers, names, verbs (tense
included), prepositions and every other word count."""

# a word, or a number/address/version kept whole: "10.0.0.1", "1,000", "3:30", "a@b.com", "v2.1"
_TOKEN = re.compile(r"\w+(?:[.,:/@+\-]\w+)*")
# (a literal every match contains, the pattern, its spelling): the literal lets a text skip the
# patterns it cannot match (an add compares its text with several stored ones); no spelling
# contains an apostrophe or "cannot", so a skipped pattern could not have matched later either
_CONTRACTIONS = (
    ("can't", re.compile(r"\bcan't\b"), "can not"),
    ("cannot", re.compile(r"\bcannot\b"), "can not"),
    ("won't", re.compile(r"\bwon't\b"), "will not"),
    ("shan't", re.compile(r"\bshan't\b"), "shall not"),
    ("ain't", re.compile(r"\bain't\b"), "is not"),
    ("n't", re.compile(r"(\w)n't\b"), r"\1 not"),
    ("i'm", re.compile(r"\bi'm\b"), "i am"),
    ("'re", re.compile(r"(\w)'re\b"), r"\1 are"),
    ("'ve", re.compile(r"(\w)'ve\b"), r"\1 have"),
    ("'ll", re.compile(r"(\w)'ll\b"), r"\1 will"),
)
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'"})


def remembered(size: int) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Keep a text function's last ``size`` answers for texts of up to :data:`SHORT_TEXT` characters:
    an add compares its text with each near-duplicate, and the write rule with a category's newest
    facts, asking again about the same texts."""
    def decorate(function: Callable[[str], T]) -> Callable[[str], T]:
        kept = functools.lru_cache(maxsize=size)(function)

        @functools.wraps(function)
        def answer(text: str) -> T:
            return kept(text) if len(text) <= SHORT_TEXT else function(text)
        return answer
    return decorate


def spell_out(text: str) -> str:
    """``text`` casefolded (NFKC, straight apostrophes) with its contractions spelled out:
    "I'm" -> "i am", "doesn't" -> "does not", "can't" -> "can not"."""
    folded = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    for literal, pattern, spelled in _CONTRACTIONS:
        if literal in folded:
            folded = pattern.sub(spelled, folded)
    return folded


@remembered(256)
def statement_words(text: str) -> tuple[str, ...]:
    """The words that make ``text``'s statement, in order: casefolded, contractions spelled out,
    punctuation and articles left out (numbers, addresses and versions stay whole)."""
    return tuple(word for word in _TOKEN.findall(spell_out(text)) if word not in IGNORED_WORDS)


def is_restatement(new: str, old: str) -> bool:
    """Whether ``new`` says exactly what ``old`` says (see the module docstring); never for texts
    without words (those are compared as they are)."""
    new_words, old_words = statement_words(new), statement_words(old)
    if not new_words or not old_words:
        return new.strip() == old.strip()
    return new_words == old_words

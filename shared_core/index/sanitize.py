"""Seed 002's FTS5 query sanitiser: any user text becomes a valid, broad FTS5 query.

1. URLs are stripped (noisy, FTS5-incompatible tokens).
2. Hyphens split words ("word-word" would read as column filter or subtraction).
3. Remaining punctuation and FTS5 special characters are stripped.
4. Single-character tokens are dropped (not a Chinese, Japanese or Korean character: one is a word).
5. Each remaining word is quoted (``"word"``) so it is matched literally.
6. Words are joined with OR for broad matching.
7. (ours) At most the first 64 distinct words are kept (:data:`MAX_TERMS`): every word is a
   posting list to merge, and a pasted page of a thousand words took seconds while adding
   nothing a few dozen do not.

Only letters, digits and combining marks survive step 3, so a quoted word can never
contain a quote, and no input can raise an FTS5 syntax error.

The keyword indexes match :func:`search_terms`: these words in their search form (lower case,
no diacritics, CJK runs as pairs of characters; see :mod:`.textform`), less the query's stop
words (:func:`without_stop_words`: "what did", "has her", the frame of a question) unless
nothing else is left. Stored text keeps every word; only queries leave them out.
"""

from __future__ import annotations

import re
import unicodedata

from .textform import CJK, query_tokens

__all__ = ["keyword_terms", "query_terms", "search_terms", "to_fts_query", "sanitize", "without_stop_words", "MAX_TERMS",
           "STOP_WORDS"]

MAX_TERMS = 64

# a scheme starts a word and is short: without the boundary and the bound, a long run of letters
# made the engine retry the scheme at every position (a 40k-character word took 8.5 s)
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]{0,31}://|www\.)\S*", re.IGNORECASE)
_CJK = re.compile(CJK)


def _is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNM"


def query_terms(text: str, max_terms: int = MAX_TERMS) -> list[str]:
    """The words of ``text`` after rules 1-4 and 7, in order, without repeats (case-insensitive)."""
    text = _URL.sub(" ", text)  # rule 1
    text = text.replace("-", " ")  # rule 2
    cleaned = "".join(ch if _is_word_char(ch) else " " for ch in text)  # rule 3
    seen: set[str] = set()
    terms = []
    for word in cleaned.split():
        if len(word) < 2 and not _CJK.match(word):  # rule 4
            continue
        key = word.casefold()
        if key not in seen:
            seen.add(key)
            terms.append(word)
            if len(terms) == max_terms:
                break
    return terms


def search_terms(text: str, max_terms: int = MAX_TERMS) -> list[str]:
    """The tokens a keyword index matches for ``text``: :func:`query_terms` in their search form.

    >>> search_terms("Straße nach 東京タワー")
    ['strasse', 'nach', '東京', '京タ', 'タワ', 'ワー']
    """
    return query_tokens(query_terms(text, max_terms), max_terms)


#: Words a query leaves out on the keyword side, by ``search.query_stop_words``: the frame of an
#: English question (wh-words, auxiliaries and modals, articles, pronouns, common prepositions and
#: conjunctions). BM25 still gave them weight: "What did Caroline research?" ranked "Caroline:
#: Cool! What did it look like?" above the turn about her research (LoCoMo R@10 +0.03 to +0.04
#: without them, docs/search.md).
STOP_WORDS: dict[str, frozenset[str]] = {
    "english": frozenset("""
        a an the this that these those any some each every
        what which who whom whose when where why how
        am is are was were be been being do does did doing done has have had having
        can could would should will shall may might must
        i me my mine myself you your yours yourself he him his himself she her hers herself
        it its itself we us our ours ourselves they them their theirs themselves
        of in on at to for from by with about as into onto than
        and or but if then so not no nor many much more most very there here
    """.split()),
    "none": frozenset(),
}


def without_stop_words(terms: list[str], stop_words: frozenset[str]) -> list[str]:
    """``terms`` (search form) less the stop words; all of them when nothing else would be left.

    >>> without_stop_words(["what", "did", "caroline", "research"], STOP_WORDS["english"])
    ['caroline', 'research']
    >>> without_stop_words(["the", "who"], STOP_WORDS["english"])
    ['the', 'who']
    """
    kept = [term for term in terms if term not in stop_words]
    return kept or terms


def keyword_terms(text: str, stop_words: str) -> list[str]:
    """The words a keyword index searches for ``text``: :func:`search_terms` less the stop words of
    ``search.query_stop_words`` (``stop_words``)."""
    return without_stop_words(search_terms(text), STOP_WORDS[stop_words])


def to_fts_query(terms: list[str]) -> str:
    """Rules 5 and 6: quote each word and join with OR ('' when there is nothing to match)."""
    return " OR ".join(f'"{term}"' for term in terms)


def sanitize(text: str) -> str:
    """The whole pipeline: user text in, FTS5 MATCH expression out.

    >>> sanitize('payment-api HMAC? see https://x.io/a "quoted" a')
    '"payment" OR "api" OR "HMAC" OR "see" OR "quoted"'
    """
    return to_fts_query(query_terms(text))

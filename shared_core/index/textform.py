"""The search form of a text: what the keyword index stores and what a query is matched as, in every language.

Both backends index :func:`search_form` of text, tags and source (SQLite: the SQL function
``openkoi_search_form``, this module's function registered on every connection, feeding FTS5;
PostgreSQL: migration 45's SQL function of the same name, feeding ``to_tsvector``), and match
the query tokens :func:`query_tokens` makes of the user's words. The steps, in order:

1. **Compatibility forms** become plain ones (Unicode NFKC): full-width ``ＡＢＣ`` is ``abc``,
   half-width ``ｶﾀｶﾅ`` is ``カタカナ``, ``ﬁ`` is ``fi``.
2. **Case** is lowered, and letters a user types as others are spelled so: ``ß`` as ``ss``
   ("Straße" is found by "strasse"), ``œ`` ``oe``, ``æ`` ``ae``, ``ø`` ``o``, ``ł`` ``l``,
   ``đ``/``ð`` ``d``, ``þ`` ``th``, ``ı`` ``i``, final ``ς`` ``σ``; in Arabic script the letter
   variants ``ى ة ٱ ی ک`` as ``ي ه ا ي ك``.
3. **Diacritics** are removed (decomposed, the marks of :data:`MARKS` dropped, recomposed):
   ``café`` is ``cafe``, ``ё`` is ``е``; Greek tonos, Hebrew points, Arabic harakat and tatweel
   and emoji variation selectors go. Marks that make a letter in other scripts (Devanagari
   vowel signs, Japanese voicing marks) stay, and are part of the word.
4. **Arabic's definite article** (``ال``, and ``وال بال كال فال لل``) is taken off a word that
   keeps at least two letters: "كتاب" finds "الكتاب".
5. **Punctuation and symbols** (:data:`PUNCTUATION`: emoji too) become spaces, so "great🤩" is
   the word "great".
6. **CJK** (Chinese, Japanese, Korean: :data:`CJK`) has no spaces between words, so each run of
   those characters is indexed as its overlapping pairs of characters, then its single
   characters ("東京タワー": 東京 京タ タワ ワー 東 京 タ ワ ー; the scheme of Lucene's CJK
   analyser with unigrams). A query run of two or more characters asks for its pairs, a single
   character for itself: "東京" finds "東京タワー", and does not find "京都".

Then each backend's tokenizer splits at what is left of spaces and symbols and stems English
words (FTS5: ``porter unicode61``; PostgreSQL: English Snowball). The character classes are
regular expressions PostgreSQL's and Python's engines read alike; migration 45 spells the same
strings (a test compares them), so both backends cut and fold a text the same way.

The steps rely only on Unicode's stable properties (NFKC and case mappings of assigned
characters never change), so a row indexed by one Python version is deleted by another with the
same tokens, as FTS5 requires.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["CJK", "MARKS", "ASCII_PUNCTUATION", "PUNCTUATION", "ARTICLE", "SPACE",
           "fold", "search_form", "query_tokens", "phrase_tokens"]

#: Han (with 々〆〇 and the Hangzhou numerals), Hiragana, Katakana (not its ゠ and ・), Bopomofo and Hangul
CJK = (r"[\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u303c\u3041-\u309f\u30a1-\u30fa"
       r"\u30fc-\u30ff\u3105-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
       r"\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff\uf900-\ufaff\U0001b000-\U0001b16f\U00020000-\U000323af]")
#: combining diacritics (Latin, Greek, Cyrillic), Hebrew points, Arabic harakat and tatweel, variation selectors
MARKS = (r"[\u0300-\u036f\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u0640\u064b-\u065f"
         r"\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff"
         r"\ufe00-\ufe0f\ufe20-\ufe2f\U000e0100-\U000e01ef]")
#: ASCII punctuation (ASCII text is folded by this and lower case alone)
ASCII_PUNCTUATION = r"[!-/:-@\[-`{-~]"
#: ASCII and Latin-1 punctuation, general punctuation, CJK, Hebrew, Arabic and Devanagari punctuation;
#: arrows, mathematical and technical symbols, shapes, dingbats and emoji
PUNCTUATION = (ASCII_PUNCTUATION[:-1] + r"\u00a1-\u00bf\u00d7\u00f7\u05be\u05c0\u05c3\u05c6\u05f3\u05f4\u060c"
               r"\u061b\u061f\u066a-\u066d\u06d4\u0964\u0965\u2000-\u206f\u2190-\u2bff\u3000-\u3004\u3008-\u3020"
               r"\u3030\u303d-\u303f\u30a0\u30fb\U0001f000-\U0001fbff]")
_ARABIC_LETTER = r"\u0620-\u064a\u066e-\u06d3\u06d5\u06ee\u06ef\u06fa-\u06ff"
#: Arabic's definite article, alone or after w-, b-, k-, f- (and l- + article: ``لل``), before two letters;
#: repeated ones all at once, so what is left has none (folding twice is folding once)
ARTICLE = (rf"(^|[^{_ARABIC_LETTER}])(?:\u0648\u0627\u0644|\u0628\u0627\u0644|\u0643\u0627\u0644|\u0641\u0627\u0644"
           rf"|\u0627\u0644|\u0644\u0644)+(?=[{_ARABIC_LETTER}]{{2}})")
#: what separates the words of the search form (an explicit set: Python's and PostgreSQL's \s differ)
SPACE = r"[\t\n\v\f\r ]"

_CJK_RUN = re.compile(CJK + "+")
_SPACES = re.compile(SPACE + "+")
_CJK_SPLIT = re.compile(f"({CJK}+)")
_MARKS = re.compile(MARKS + "+")
_PUNCTUATION = re.compile(PUNCTUATION)  # each character a space, as the ASCII shortcut does
_ARTICLE = re.compile(ARTICLE)
_ARABIC = re.compile(f"[{_ARABIC_LETTER}]")
# step 2; migration 45 spells the same with replace() and translate()
_LETTERS = str.maketrans({"ß": "ss", "œ": "oe", "æ": "ae", "þ": "th", "ς": "σ", "ø": "o", "ł": "l", "đ": "d",
                          "ð": "d", "ı": "i", "\u0649": "\u064a", "\u0629": "\u0647", "\u0671": "\u0627",
                          "\u06cc": "\u064a", "\u06a9": "\u0643"})
_ASCII_PUNCTUATION = re.compile(ASCII_PUNCTUATION)


def fold(text: str) -> str:
    """Steps 1-5: the text as its words are compared (lower case, no diacritics, no punctuation)."""
    if text.isascii():  # the steps reduce to these two for ASCII (NFKC leaves it as it is)
        return _ASCII_PUNCTUATION.sub(" ", text.lower())
    text = unicodedata.normalize("NFKC", text).lower().translate(_LETTERS)
    text = unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFD", text)))
    if _ARABIC.search(text):
        text = _ARTICLE.sub(r"\1", text)
    return _PUNCTUATION.sub(" ", text)


def _grams(run: str) -> str:
    """A CJK run as indexed: its pairs, then its characters (one character: itself)."""
    if len(run) < 2:
        return run
    return " ".join([run[i : i + 2] for i in range(len(run) - 1)] + list(run))


def search_form(text: object) -> str:
    """What the keyword index stores for ``text``: :func:`fold`, with CJK runs as pairs and characters.

    Registered on SQLite connections as ``openkoi_search_form``; PostgreSQL's function of the same
    name returns the same string.
    """
    if text is None:
        return ""
    if not isinstance(text, str):  # SQLite hands over what a column holds: FTS5 indexed a number as its text
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    if text.isascii():
        return fold(text)
    folded = fold(text)
    if not _CJK_RUN.search(folded):
        return folded
    words = [w for w in _SPACES.split(_CJK_RUN.sub(lambda m: f" {m.group(0)} ", folded)) if w]
    return " ".join(_grams(w) if _CJK_RUN.fullmatch(w) else w for w in words)


def phrase_tokens(word: str) -> list[str]:
    """The tokens one query word is matched by, in order: its folded words (one-letter ones dropped),
    a CJK run as its pairs (one character: itself). Together, as a phrase, they find the word."""
    out: list[str] = []
    for piece in _CJK_SPLIT.split(fold(word)):
        if not piece:
            continue
        if _CJK_RUN.fullmatch(piece):
            out += [piece] if len(piece) == 1 else [piece[i : i + 2] for i in range(len(piece) - 1)]
        else:
            out += [w for w in _SPACES.split(piece) if len(w) > 1]
    return out


def query_tokens(words: Iterable[str], limit: int) -> list[str]:
    """The tokens a query of ``words`` asks for (each word's :func:`phrase_tokens`), without repeats,
    at most ``limit``."""
    seen: dict[str, None] = {}
    for word in words:
        for token in phrase_tokens(word):
            seen.setdefault(token, None)
            if len(seen) == limit:
                return list(seen)
    return list(seen)

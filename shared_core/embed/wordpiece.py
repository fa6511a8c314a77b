"""BERT's uncased WordPiece tokenisation in pure Python, for the static embedder's vocabulary.

It reproduces what the Hugging Face ``tokenizers`` library does with all-MiniLM-L6-v2's
tokenizer (``BertNormalizer`` with lowercasing, ``BertPreTokenizer``, ``WordPiece``):

1. clean: drop NUL, U+FFFD and control, format and private-use characters (tab, newline and
   carriage return excepted); every whitespace character becomes a space;
2. put spaces around CJK ideographs, so each is a word of its own;
3. strip accents (NFD, then drop non-spacing marks) and lowercase, character by character;
4. split on whitespace, and around every punctuation character (ASCII punctuation and Unicode
   ``P*``), which becomes a word of its own;
5. each word: the longest vocabulary entry from its start, then the longest ``##``-prefixed
   entry from where that ended, and so on; a word with no such split (or over 100 characters)
   is ``[UNK]``.

Steps 1-3 depend on one character at a time, so they are one ``str.translate`` through a
table filled as characters are met; step 5 is remembered per word. tests/core/test_wordpiece.py
compares it with the ``tokenizers`` library where that is installed.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Sequence

__all__ = ["WordPiece"]

_MAX_WORD_CHARS = 100
_MAX_CACHED_WORDS = 200_000
_RUST_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# the CJK Unified Ideographs blocks (and compatibility ideographs) BERT's tokeniser isolates
_CJK = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


def _is_whitespace(char: str) -> bool:
    return char in _RUST_WHITESPACE


def _is_control(char: str) -> bool:
    # unassigned code points (Cn) are kept, as ``tokenizers`` keeps them (they end up [UNK])
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK)


class _CharTable(dict[int, str]):
    """``str.translate``'s table for steps 1-3 (and the spaces of step 4): each code point's
    normalised form, with spaces where a word must end; computed the first time it is met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if code == 0 or code == 0xFFFD or _is_control(char):
            out = ""
        elif _is_whitespace(char):
            out = " "
        else:
            stripped = "".join(c for c in unicodedata.normalize("NFD", char) if unicodedata.category(c) != "Mn")
            lowered = "".join(c.lower() for c in stripped)
            out = "".join(f" {c} " if _is_punctuation(c) or c.isspace() else c for c in lowered)
            if _is_cjk(char):
                out = f" {out} "
        self[code] = out
        return out


class WordPiece:
    """Text to token ids over a WordPiece vocabulary (BERT uncased rules; see the module docs)."""

    def __init__(self, vocab: Sequence[str], *, unk_token: str = "[UNK]", prefix: str = "##") -> None:
        self.vocab = list(vocab)
        self.index = {token: i for i, token in enumerate(self.vocab)}
        if unk_token not in self.index:
            raise ValueError(f"the vocabulary has no unknown-word token {unk_token!r}")
        self.unk_token = unk_token
        self.unk_id = self.index[unk_token]
        self.prefix = prefix
        self._longest = max(len(token.removeprefix(prefix)) for token in self.vocab)
        self._chars = _CharTable()
        self._words: dict[str, tuple[int, ...] | None] = {}
        self._lock = threading.Lock()

    def forget_words(self) -> None:
        """Drop the remembered word splits (they are rebuilt as words are met again)."""
        with self._lock:
            self._words.clear()

    def words(self, text: str) -> list[str]:
        """Steps 1-4: the normalised words and punctuation marks of ``text``."""
        # every whitespace character is a plain space by now (and the few others Python splits on,
        # \x1c-\x1f and \x85, were dropped as control characters), so split() splits where BERT does
        return text.translate(self._chars).split()

    def word_ids(self, word: str) -> tuple[int, ...] | None:
        """Step 5 for one normalised word: its pieces' ids, or None when it is ``[UNK]``."""
        found = self._words.get(word, False)
        if found is not False:
            return found  # type: ignore[return-value]
        ids = self._split(word)
        if len(self._words) >= _MAX_CACHED_WORDS:
            self.forget_words()
        self._words[word] = ids
        return ids

    def ids(self, text: str, *, keep_unknown: bool = False) -> list[int]:
        """The token ids of ``text``; unknown words are left out unless ``keep_unknown``."""
        out: list[int] = []
        get = self._words.get
        for word in self.words(text):
            pieces = get(word, False)
            if pieces is False:
                pieces = self.word_ids(word)
            if pieces is not None:
                out += pieces  # type: ignore[arg-type]
            elif keep_unknown:
                out.append(self.unk_id)
        return out

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text`` as strings, ``[UNK]`` included (what ``tokenizers`` shows)."""
        return [self.vocab[i] for i in self.ids(text, keep_unknown=True)]

    def _split(self, word: str) -> tuple[int, ...] | None:
        if len(word) > _MAX_WORD_CHARS:
            return None
        index, prefix, ids = self.index, self.prefix, []
        start = 0
        while start < len(word):
            end = min(len(word), start + self._longest)
            while end > start:
                piece = word[start:end] if start == 0 else prefix + word[start:end]
                token = index.get(piece)
                if token is not None:
                    ids.append(token)
                    break
                end -= 1
            else:
                return None
            start = end
        return tuple(ids)

"""Rule-based, extractive summarising: sentences, keywords, and picking what to keep.

Used where no text model is configured or its answer is unusable (working-memory
summaries, the forgetting engine's summaries). Deterministic: the same input always
gives the same output. The rules:

* sentences: split after ``.``, ``!`` or ``?`` followed by whitespace, and at line breaks;
* content words: words of 3+ characters that start with a letter, outside a short English
  stop-word list, compared case-insensitively;
* keywords: the seed-003 importance keywords present first (in their order), then content
  words by frequency (ties: first seen first);
* a sentence's score (0 for sentences of fewer than 3 words: greetings, "ok thanks"):
  ``+1`` per distinct keyword it contains, ``+2`` per importance keyword, ``+1`` when it is a
  first-person statement (I, my, we, our, ...), ``+1`` when it has a digit (dates, amounts,
  versions), ``+0.5`` when it names something (a capitalised word after the first);
* selection: best score first (ties: earlier first) while the token budget allows, then
  put back in their original order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .ranking import IMPORTANCE_KEYWORDS, keyword_hits
from .tokens import count_tokens

__all__ = ["split_sentences", "content_words", "top_keywords", "score_sentence", "Scored", "extractive_pick",
           "STOPWORDS"]

STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
for from further get got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me more most
mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over own really same
shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves
then there there's these they they'd they'll they're they've this those through to too under until up us very
was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's
whom why why's will with won't would wouldn't yes yet you you'd you'll you're you've your yours yourself
yourselves okay ok thanks thank please hi hello hey sure yeah yep right well also one two would could
""".split())

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n+\s*")
_WORD = re.compile(r"[^\W\d_][\w'’\-]*", re.UNICODE)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'll|i'd|my|mine|me|we|we're|we've|we'll|our|ours|us)\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of ``text``, stripped, empty ones left out."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def content_words(text: str) -> list[str]:
    """Casefolded words of 3+ characters that start with a letter and are not stop words."""
    out = []
    for match in _WORD.finditer(text):
        word = match.group(0).casefold().strip("'’-")
        if len(word) >= 3 and word not in STOPWORDS:
            out.append(word)
    return out


def top_keywords(texts: Iterable[str], k: int = 10, priority: Sequence[str] = IMPORTANCE_KEYWORDS) -> list[str]:
    """The importance keywords found, then the most frequent content words, ``k`` at most."""
    texts = list(texts)
    joined = "\n".join(texts)
    found = [kw for kw in priority if keyword_hits(joined, (kw,))]
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for text in texts:
        for word in content_words(text):
            counts[word] += 1
            first.setdefault(word, len(first))
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))
    out = list(found)
    for word in ranked:
        if len(out) >= k:
            break
        if word not in out and not any(word in kw.split() for kw in found):
            out.append(word)
    return out[:k]


def score_sentence(sentence: str, keywords: Iterable[str] = (), priority: Sequence[str] = IMPORTANCE_KEYWORDS) -> float:
    """The rule-based worth of a sentence (see the module docstring)."""
    words = _WORD.findall(sentence)
    if len(words) < 3:
        return 0.0
    folded = set(content_words(sentence))
    score = float(sum(1 for kw in set(keywords) if kw in folded or (" " in kw and keyword_hits(sentence, (kw,)))))
    score += 2.0 * keyword_hits(sentence, priority)
    if _FIRST_PERSON.search(sentence):
        score += 1.0
    if _DIGIT.search(sentence):
        score += 1.0
    if any(w[:1].isupper() for w in words[1:]):
        score += 0.5
    return score


@dataclass(frozen=True)
class Scored:
    """A candidate line for an extractive summary: where it came from, its text and its score."""

    index: int
    text: str
    score: float


def extractive_pick(
    candidates: Sequence[Scored],
    token_budget: int,
    count: Callable[[str], int] = count_tokens,
    max_items: int | None = None,
) -> list[Scored]:
    """The best-scoring candidates that fit ``token_budget`` together, in their original order.

    Candidates scoring 0 are never picked. A candidate too long for the remaining budget
    is skipped, and a shorter one may still fit.
    """
    chosen: list[Scored] = []
    used = 0
    for item in sorted(candidates, key=lambda c: (-c.score, c.index)):
        if item.score <= 0:
            break
        if max_items is not None and len(chosen) >= max_items:
            break
        cost = count(item.text) + 1  # + the line break
        if used + cost > token_budget:
            continue
        chosen.append(item)
        used += cost
    return sorted(chosen, key=lambda c: c.index)

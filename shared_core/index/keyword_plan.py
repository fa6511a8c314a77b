"""Which rows PostgreSQL's keyword side scores: a top-k plan over the GIN index.

Scoring a row is what a keyword search pays for: reading it from the table (a page each, for
rows scattered over a million) and BM25 per query word. In a million memories a question's
words, once the common ones are gated out, can still be held by tens of thousands of rows;
the GIN index finds them (and evaluates AND, OR and NOT over its posting lists) in a
millisecond or two, without reading a row. So the plan picks, on the index, the rows that
can rank first, and scores only those (:func:`steps`):

1. every row holding one of the rarest words, together held by at most ``cap`` rows (by
   their document frequencies): the highest-idf words, whose rows the best matches hold;
2. then the rows holding two of the next :data:`NEAR` rarest words (the rarest themselves when
   even the rarest word is held by more than ``cap`` rows), those with the rarer words first: a
   row with several of the words can beat one with a single rare word;
3. only when these are fewer than the k asked for (a scope that holds few of them), the rows
   holding any other word.

A query of one word held by more than ``cap`` rows scores ``cap`` of its rows.

Each step's rows are capped; when no cap is met, the result is that of scoring every matching
row. What can be missed is a row in a step past its cap (the rows it reads are a sample), or
one holding a single one of the commoner words: its BM25 is at most that word's idf x (k1 + 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

__all__ = ["NEAR", "at_least", "either", "every", "rarest", "steps"]

NEAR = 4  # step 2 looks at this many of the rarest remaining words


def rarest(df: Sequence[int], cap: int) -> tuple[list[int], list[int]]:
    """(the words scored first: the rarest, held by at most ``cap`` rows together, at least one; the rest),
    as indexes into ``df``, each list rarest first."""
    order = sorted(range(len(df)), key=lambda i: (df[i], i))
    first: list[int] = []
    total = 0
    for i in order:
        if first and total + df[i] > cap:
            break
        first.append(i)
        total += df[i]
    return first, [i for i in order if i not in first]


def at_least(parts: Sequence[str], count: int) -> str:
    """A tsquery matching rows that hold at least ``count`` of ``parts``."""
    return either([every(chosen) for chosen in combinations(parts, count)])


def steps(parts: Sequence[str], df: Sequence[int], cap: int) -> tuple[list[tuple[str, int]], str]:
    """Steps 1 and 2 for the words ``parts``, held by ``df`` rows each: (tsquery, rows to read at most)
    for each, their rows disjoint; and a tsquery of every row they cover (step 3 reads the others).

    Step 2 is one tsquery per word of the next ones, rarest first: that word, any later one, none
    before it. Each has a word every row must hold, which GIN walks (an OR of pairs would make it
    read the union of every posting list, once per tsquery)."""
    first, rest = rarest(df, cap)
    plan: list[tuple[str, int]] = []
    rare = ""
    if first and df[first[0]] <= cap:
        rare = either([parts[i] for i in first])
        plan.append((rare, cap))
    else:  # even the rarest word is common: the rows holding two of the rarest come first
        rest = first + rest
    near = [parts[i] for i in rest[:NEAR]]
    for n, word in enumerate(near[:-1]):
        outside = [rare] if rare else []
        outside += near[:n]
        plan.append((" & ".join([f"({word})", f"({either(near[n + 1 :])})", *(f"!({o})" for o in outside)]),
                     max(cap // 2 // (len(near) - 1), 1)))  # half as many rows as step 1, in all
    if not plan and near:  # one word, held by more than ``cap`` rows: a capped sample of its rows
        return [(either(near), cap)], either(near)
    covered = [rare] if rare else []
    if len(near) > 1:
        covered.append(at_least(near, 2))
    return plan, either(covered) if covered else ""


def either(parts: Sequence[str]) -> str:
    """A tsquery matching rows that hold any of ``parts`` (tsqueries)."""
    return " | ".join(f"({p})" for p in parts)


def every(parts: Sequence[str]) -> str:
    """A tsquery matching rows that hold all of ``parts``."""
    return " & ".join(f"({p})" for p in parts)

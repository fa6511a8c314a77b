"""Which stored fact a new fact corrects: so that a correction supersedes it instead of standing beside it.

Facts are read for their **slot** (what they are about) and **value**, from the third-person
wording the extraction rules write ("The user lives in Oslo", "The user is not allergic to
peanuts", "The user's cat's name is Miso") and the usual variants ("User prefers dark mode"):

============================ =========================== ==============================
fact                         slot                        one value at a time?
============================ =========================== ==============================
the user's name is X         name                        yes
the user's <thing> is X      of <thing>                  yes
the user lives in / moved to residence                   yes
/ is based in X
the user works at / for X    workplace                   yes
the user is a / an X         role                        yes
the user is from X           origin                      yes
the user is N years old      age                         yes
the user is allergic to X    allergic to X               (the value is the polarity)
the user uses / speaks /     uses (speaks, owns ...)     no
owns / drives / plays X
the user likes / loves /     taste                       no
hates / doesn't eat X
the user prefers X           prefers                     no
the user has X               has                         no
the <thing> runs on / is X   the <thing>                 yes
============================ =========================== ==============================

A new fact **corrects** a current fact of the namespace with the same slot when

* it says the opposite of it: one of them is negated ("not", "no longer", "doesn't", "never",
  "hates" against "likes") and their values are the same thing ("Vim" and "Vim for everything");
* or it is said as a correction ("Actually, ...", "Correction: ...", "..., not Pri"), both are
  affirmative, and the slot holds one value at a time,
  or their values share a word ("prefers aisle seats" after "prefers window seats"), or the old
  one holds the value the correction names as wrong ("Pri").

A fact in none of these shapes has no slot; a correction of it is matched by
:func:`shared_core.memories.versioning.subject_key` (the words before the first verb) and a shared word.
Among several candidates the one holding the named wrong value wins, then the opposite, then the
one sharing most words, then the newest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..memories import Memory
from ..memories.versioning import subject_key
from .records import ExtractedFact

__all__ = ["FactSlot", "slot_of", "corrected_fact"]


@dataclass(frozen=True)
class FactSlot:
    """What a fact is about (``key``), what it says there (``value``, a set of words) and how."""

    key: str
    value: frozenset[str]
    negated: bool = False
    exclusive: bool = False  # the slot holds one value at a time (a name, a home town)


_FILLER = frozenset("a an the of for to in on at with and or my our their his her its user user's".split())
_WORD = re.compile(r"[^\W_][\w.'\-/]*", re.UNICODE)
_NEGATION = r"(?P<neg>no longer |doesn't |does not |don't |do not |never |can't |cannot |isn't |is not |not )?"
_USER = r"^(?:the )?user"
_NAME = re.compile(rf"{_USER}(?:'s name is| is called) (?P<value>.+)$")
_POSSESSION = re.compile(
    rf"{_USER}'s (?P<thing>[\w' -]+?) (?P<neg>is not |isn't |is no longer |are not |aren't |are no longer )?"
    r"(?P<verb>is|are|runs|uses|lives|works|starts|ends|falls|costs|comes|expires|renews|opens|closes|weighs|means|"
    r"was born) (?P<value>.+)$"
)
_IDENTITY = re.compile(rf"{_USER} (?:is|was) (?P<neg>not |no longer )?(?P<value>.+)$")
_PLACE = re.compile(
    rf"{_USER} {_NEGATION}(?P<verb>lives|live|lived|moved|relocated|works|work|worked|grew up|was born|studies|"
    r"study|studied) (?P<prep>in|at|for|to|as|on|near|from|with) (?P<value>.+)$"
)
_TASTE = re.compile(
    rf"{_USER} {_NEGATION}(?P<verb>likes|like|loves|love|enjoys|enjoy|hates|dislikes|stand|avoids|eats|eat|drinks|"
    r"drink|prefers|prefer)(?: (?P<value>.+))?$"
)
_USAGE = re.compile(rf"{_USER} {_NEGATION}(?P<verb>uses|use|speaks|speak|owns|own|drives|drive|plays|play|smokes|smoke)"
                    r"(?: (?P<value>.+))?$")
_HAVE = re.compile(rf"{_USER} {_NEGATION}(?P<verb>has|have) (?P<value>.+)$")
_THING = re.compile(r"^the (?P<thing>(?!user\b)[\w' .-]+?) (?P<verb>is|are|falls|starts|ends|is due|is set for|"
                    r"is scheduled for|was moved to|runs on|runs in|runs at|is hosted on|is hosted in|is hosted at|"
                    r"is deployed to|is deployed on|is deployed in|is located in|is located at|is stored in|"
                    r"expires on|renews on) (?P<value>.+)$")
_NEGATIVE_TASTES = frozenset({"hates", "dislikes", "avoids"})
_IDENTITY_SLOTS = (  # (pattern on the value, slot, one value at a time)
    (re.compile(r"^(?:allergic|intolerant) to (?P<rest>.+)$"), "allergic to", False),
    (re.compile(r"^(?:originally )?from (?P<rest>.+)$"), "origin", True),
    (re.compile(r"^based in (?P<rest>.+)$"), "residence", True),
    (re.compile(r"^(?P<rest>\d+) years old$"), "age", True),
    (re.compile(r"^(?P<rest>vegan|vegetarian|pescatarian)$"), "diet", True),
    (re.compile(r"^(?P<rest>married|divorced|single|widowed)$"), "marital status", True),
    (re.compile(r"^(?P<rest>left-handed|right-handed)$"), "handedness", True),
    (re.compile(r"^(?P<rest>retired|self-employed|unemployed)$"), "employment", True),
    (re.compile(r"^an? (?P<rest>.+)$"), "role", True),
)
_PLACE_SLOTS = {"lives": "residence", "live": "residence", "lived": "residence", "moved": "residence",
                "relocated": "residence", "grew up": "childhood home", "was born": "birth", "studies": "school",
                "study": "school", "studied": "school"}


def _words(text: str) -> frozenset[str]:
    return frozenset(w.strip(".'-") for w in _WORD.findall(text.casefold())) - _FILLER - {""}


def _base(verb: str) -> str:
    return {"studies": "study", "has": "have"}.get(verb, verb[:-1] if verb.endswith("s") else verb)


def slot_of(text: str) -> FactSlot | None:
    """The slot, value and polarity of a fact in one of the module's shapes; None otherwise."""
    said = " ".join(text.replace("\u2019", "'").split()).casefold().rstrip(" .!")
    if match := _NAME.match(said):
        return FactSlot("name", _words(match["value"]), exclusive=True)
    if match := _POSSESSION.match(said):
        return FactSlot(f"of {' '.join(sorted(_words(match['thing'])))} {match['verb']}", _words(match["value"]),
                        bool(match["neg"]), exclusive=True)
    if match := _PLACE.match(said):
        verb, prep = match["verb"], match["prep"]
        negated = bool(match["neg"])
        if verb.startswith("work"):
            key = "role" if prep == "as" else "workplace"
        else:
            key = _PLACE_SLOTS[verb]
        return FactSlot(key, _words(match["value"]), negated, exclusive=True)
    if match := _TASTE.match(said):
        verb = match["verb"]
        value = _words(match["value"] or "")
        if verb.startswith("prefer"):
            return FactSlot("prefers", value, bool(match["neg"]))
        # "hates" is "does not like"; "can't stand" is too
        negated = verb == "stand" or bool(match["neg"]) != (verb in _NEGATIVE_TASTES)
        return FactSlot("taste", value, negated)
    if match := _USAGE.match(said):
        return FactSlot(f"{_base(match['verb'])}s", _words(match["value"] or ""), bool(match["neg"]))
    if match := _HAVE.match(said):
        value = _words(match["value"]) - {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                          "ten", "any", "no"}
        return FactSlot("has", value, bool(match["neg"]) or match["value"].startswith("no "))
    if match := _IDENTITY.match(said):
        identity = match["value"]
        for pattern, key, exclusive in _IDENTITY_SLOTS:
            if found := pattern.match(identity):
                if key == "allergic to":  # the allergen is the slot: "allergic to peanuts" has a yes or a no
                    return FactSlot(f"allergic to {' '.join(sorted(_words(found['rest'])))}", frozenset(),
                                    bool(match["neg"]))
                return FactSlot(key, _words(found["rest"]), bool(match["neg"]), exclusive)
        return FactSlot("is", _words(identity), bool(match["neg"]))
    if match := _THING.match(said):
        return FactSlot(f"the {' '.join(sorted(_words(match['thing'])))}", _words(match["value"]), exclusive=True)
    return None


def _same_thing(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two values name the same thing: equal, or one holds all the other's words ("vim", "vim everything")."""
    return a == b or (bool(a) and bool(b) and (a <= b or b <= a))


def corrected_fact(fact: ExtractedFact | str, current: Sequence[Memory]) -> Memory | None:
    """The fact among ``current`` (the namespace's current facts, newest first) that ``fact`` corrects, or None.

    None too when ``fact`` is already one of them (nothing to correct: it is known).
    """
    item = fact if isinstance(fact, ExtractedFact) else ExtractedFact(str(fact), "given")
    text = " ".join(item.text.split()).casefold().rstrip(" .!")
    if any(" ".join(m.text.split()).casefold().rstrip(" .!") == text for m in current):
        return None
    wrong = _words(item.replaces) if item.replaces else frozenset()
    new = slot_of(item.text)
    best: tuple[tuple[int, int, int], Memory] | None = None
    for memory in current:  # newest first: of equal candidates, the newest stays
        rank = _rank(new, item, wrong, memory)
        if rank is not None and (best is None or rank > best[0]):
            best = (rank, memory)
    return None if best is None else best[1]


def _rank(new: FactSlot | None, item: ExtractedFact, wrong: frozenset[str], memory: Memory) -> tuple[int, int, int] | None:
    """How surely ``item`` corrects ``memory`` (bigger is surer), or None when it does not."""
    if memory.kind != "fact" or memory.valid_to is not None:
        return None
    old = slot_of(memory.text)
    named = int(bool(wrong) and old is not None and wrong <= old.value) if old else 0
    if new is None or old is None:  # no slot: a correction matched by subject key and a shared word
        if not (item.correction or item.replaces):
            return None
        key = subject_key(item.text)
        shared = _words(item.text) & _words(memory.text)
        if key is None or subject_key(memory.text) != key or not shared:
            return None
        return (int(bool(wrong) and wrong <= _words(memory.text)), 0, len(shared))
    if old.key != new.key:
        return None
    overlap = len(old.value & new.value)
    if old.negated != new.negated:  # one says the opposite of the other
        if _same_thing(old.value, new.value):
            return (named, 1, overlap)
        return None
    if new.negated or not (item.correction or item.replaces):
        return None
    if named or new.exclusive or overlap:
        return (named, 0, overlap)
    return None

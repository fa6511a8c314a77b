"""Auto-categorisation of facts (seed 004): a small category set, keyword rules, an optional model.

Seed 004's structured memory "auto-categorizes" facts so that retrieval can be scoped to the
categories a query is about. Without a text model the category comes from a documented keyword
map (:data:`CATEGORY_KEYWORDS`, overridable with ``memory.category_keywords``):

* the text is split into words (letters, digits, apostrophes), casefolded; a word and each
  keyword are compared in a normal form that drops a possessive ``'s`` and a plural ``s``
  (not ``ss``; words of 4+ letters), so "cat's", "cats" and "cat" are one word;
* a keyword of several words ("dark mode", "years old") matches that run of words;
* a category scores one point per distinct keyword of it found in the text;
* the best score wins; ties go to the category listed first (specific topics before the
  generic "preferences" and "personal": "My cat's name is Miso" is about ``pets``);
* no keyword at all: ``memory.default_category`` ("" by default: the fact stays uncategorised and
  is found by the flat fallback; set it to e.g. "general" to give every fact a category).

With ``memory.categorizer = "model"`` and ``store.text_model`` set, the model picks one of the
categories (JSON ``{"category": "..."}``); an answer outside the set, or any failure, falls back
to the rules. Queries are categorised the same way (:meth:`Categorizer.for_query`), which is the
first tier of the category-scoped search (:mod:`shared_core.category_search`).

>>> Categorizer().categorize("My cat's name is Whiskerino")
'pets'
>>> Categorizer().for_query("where do I live and what is my cat called?")
['pets', 'location', 'personal']
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .config import MemoryConfig
from .llm import ModelOutputError, TextModel, parse_json_output

__all__ = ["CATEGORY_KEYWORDS", "CategoryMatch", "Categorizer", "normal_word", "words_of"]

logger = logging.getLogger("openkoi.categories")

# Order matters: on a tie the category listed first wins.
CATEGORY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "pets": (
        "pet", "cat", "kitten", "dog", "puppy", "parrot", "hamster", "rabbit", "bunny", "goldfish", "horse", "pony",
        "tortoise", "turtle", "guinea pig", "vet", "veterinarian", "litter box", "leash",
    ),
    "people": (
        "wife", "husband", "partner", "spouse", "son", "daughter", "mother", "mom", "mum", "father", "dad",
        "brother", "sister", "sibling", "friend", "boyfriend", "girlfriend", "family", "child", "children", "kid",
        "baby", "grandmother", "grandma", "grandfather", "grandpa", "grandparent", "parent", "aunt", "uncle",
        "cousin", "nephew", "niece", "neighbour", "neighbor", "fiance", "fiancee", "married", "wedding",
        "roommate", "flatmate",
    ),
    "health": (
        "doctor", "dentist", "allergy", "allergies", "allergic", "medication", "medicine", "pill", "prescription",
        "diet", "vegan", "vegetarian", "gluten", "lactose", "diabetes", "diabetic", "asthma", "blood pressure",
        "hospital", "surgery", "injury", "illness", "sick", "symptom", "therapy", "therapist", "pregnant",
        "pregnancy", "insomnia", "migraine", "health", "healthy", "physiotherapy",
    ),
    "food": (
        "food", "eat", "eats", "eating", "meal", "breakfast", "lunch", "dinner", "cuisine", "restaurant", "coffee",
        "tea", "wine", "beer", "drink", "pizza", "sushi", "pasta", "chocolate", "dessert", "cooking", "recipe",
        "spicy", "snack",
    ),
    "travel": (
        "travel", "trip", "flight", "fly", "flying", "airport", "airline", "hotel", "vacation", "holiday",
        "passport", "visa", "itinerary", "booking", "luggage", "seat", "train", "cruise", "destination", "abroad",
    ),
    "finance": (
        "money", "budget", "salary", "income", "bank", "payment", "price", "cost", "invoice", "tax", "taxes",
        "loan", "mortgage", "rent", "savings", "invest", "investment", "stock", "crypto", "dollar", "euro",
        "currency", "expense", "expenses", "credit card", "debt", "insurance", "pension",
    ),
    "work": (
        "work", "works", "job", "company", "employer", "office", "team", "project", "manager", "boss", "colleague",
        "coworker", "client", "customer", "meeting", "deadline", "career", "promotion", "interview", "startup",
        "business", "hired", "standup", "sprint",
    ),
    "technical": (
        "server", "database", "api", "code", "coding", "deploy", "deployment", "python", "javascript",
        "typescript", "rust", "java", "golang", "bug", "repository", "repo", "git", "github", "gitlab", "docker",
        "kubernetes", "linux", "macos", "laptop", "computer", "software", "framework", "library", "sql",
        "postgres", "postgresql", "mysql", "sqlite", "cloud", "aws", "gcp", "azure", "production", "staging",
        "cli", "editor", "vim", "emacs", "vscode", "ide", "dark mode", "interface", "app", "website", "endpoint",
        "backend", "frontend", "terminal", "shell", "keyboard", "browser",
    ),
    "location": (
        "live", "lives", "living", "lived", "moved", "city", "country", "address", "timezone", "time zone",
        "hometown", "home town", "based in", "located", "neighbourhood", "neighborhood", "street", "apartment",
        "house", "region",
    ),
    "schedule": (
        "appointment", "schedule", "calendar", "tomorrow", "weekly", "daily", "monthly", "every day", "monday",
        "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekend", "reminder", "remind",
        "anniversary", "o'clock", "routine",
    ),
    "hobbies": (
        "hobby", "hobbies", "music", "instrument", "play", "guitar", "piano", "violin", "cello", "drums",
        "saxophone", "flute", "trumpet", "choir", "singing", "band", "football", "soccer",
        "basketball", "tennis", "golf", "chess", "reading", "book", "novel", "movie", "film", "hiking", "running",
        "marathon", "gym", "yoga", "swimming", "cycling", "bike", "gaming", "video game", "sport", "painting",
        "photography", "gardening", "knitting", "climbing", "skiing",
    ),
    "preferences": (
        "prefer", "prefers", "preferred", "preference", "i like", "we like", "user likes", "love", "loves", "hate",
        "hates", "dislike", "dislikes", "don't like", "doesn't like", "favourite", "favorite", "enjoy", "enjoys",
        "rather", "fan of", "can't stand",
    ),
    "personal": (
        "name", "named", "called", "nickname", "age", "years old", "born", "birthday", "nationality", "citizen",
        "language", "speak", "speaks", "native", "pronouns", "religion",
    ),
}

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*", re.UNICODE)

_PROMPT = """Choose the category of this fact about a user or their work.
Categories: {categories}
Fact: {text}
Answer with JSON only: {{"category": "<one of the categories>"}}"""

_QUERY_PROMPT = """Which categories of stored facts could answer this question? Pick at most {limit}.
Categories: {categories}
Question: {text}
Answer with JSON only: {{"categories": ["<category>", ...]}} (an empty list if none fits)"""


@functools.lru_cache(maxsize=1 << 16)  # words repeat across texts; bulk loads categorise many
def normal_word(word: str) -> str:
    """A word's comparison form: casefolded, without a possessive 's or a plural s (see the module docs)."""
    word = word.casefold().replace("\u2019", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) >= 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def words_of(text: str) -> list[str]:
    """The normal forms of the words of ``text``, in order."""
    return list(map(normal_word, _WORD.findall(text)))


@dataclass(frozen=True)
class CategoryMatch:
    """A category the rules found in a text, its score and the keywords that matched."""

    category: str
    score: int
    keywords: tuple[str, ...]


class Categorizer:
    """Categories for facts and queries: keyword rules, or a text model with the rules as fallback.

    ``keywords``: category -> keywords, in priority order (default :data:`CATEGORY_KEYWORDS`).
    ``default``: the category of a fact no rule matches (``""``: none). ``model``: a
    :class:`~shared_core.llm.TextModel` to ask first (``None``: rules only).
    """

    def __init__(self, keywords: Mapping[str, Sequence[str]] | None = None, *, default: str = "",
                 model: TextModel | None = None) -> None:
        table = dict(CATEGORY_KEYWORDS if not keywords else keywords)
        if not table:
            raise ValueError("a categorizer needs at least one category with keywords")
        self._singles: dict[str, list[tuple[str, str]]] = {}
        self._phrases: list[tuple[str, str, str]] = []
        for category, words in table.items():
            if not isinstance(category, str) or not category.strip():
                raise ValueError(f"category names must be non-empty strings, got {category!r}")
            if isinstance(words, str):
                raise ValueError(f"the keywords of {category!r} must be a list of strings, not one string")
            for keyword in words:
                parts = words_of(keyword)
                if not parts:
                    raise ValueError(f"keyword {keyword!r} of {category!r} has no words")
                form = " ".join(parts)  # "cat" and "cats" are one keyword
                if len(parts) == 1:
                    if (category, form) not in self._singles.get(form, []):
                        self._singles.setdefault(form, []).append((category, form))
                elif (f" {form} ", category, form) not in self._phrases:
                    self._phrases.append((f" {form} ", category, form))
        # each phrase under its first word: a text is checked only for phrases whose first word it has
        self._phrases_by_first: dict[str, list[tuple[str, str, str]]] = {}
        for phrase in self._phrases:
            self._phrases_by_first.setdefault(phrase[2].split(" ", 1)[0], []).append(phrase)
        self._single_words = frozenset(self._singles)
        self._phrase_words = frozenset(self._phrases_by_first)
        self._order = {category: i for i, category in enumerate(table)}
        self.categories: tuple[str, ...] = tuple(table)
        self.default = default.strip() if isinstance(default, str) else ""
        self.model = model

    @classmethod
    def from_settings(cls, cfg: MemoryConfig, model: TextModel | None) -> Categorizer:
        """The categoriser the ``memory.*`` settings describe, asking ``model`` when ``categorizer = "model"``."""
        return cls(cfg.category_keywords or None, default=cfg.default_category,
                   model=model if cfg.categorizer == "model" else None)

    # -- rules ------------------------------------------------------------------------------------

    def matches(self, text: str) -> list[CategoryMatch]:
        """Every category whose keywords occur in ``text``, best first (ties: the earlier category)."""
        ranked = sorted(self._found(text).items(), key=self._rank)
        return [CategoryMatch(category, len(keys), tuple(sorted(keys))) for category, keys in ranked]

    def rule_category(self, text: str) -> str | None:
        """The rules' category of a fact: the best match, else the default (None when that is "")."""
        found = self._found(text)
        if found:
            return min(found.items(), key=self._rank)[0]
        return self.default or None

    def _found(self, text: str) -> dict[str, set[str]]:
        """category -> the keywords of it that occur in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        words = words_of(text)
        present = set(words)
        found: dict[str, set[str]] = {}
        for word in present & self._single_words:
            for category, keyword in self._singles[word]:
                found.setdefault(category, set()).add(keyword)
        candidates = [p for word in present & self._phrase_words for p in self._phrases_by_first[word]]
        if candidates:
            joined = " " + " ".join(words) + " "
            for phrase, category, keyword in candidates:
                if phrase in joined:
                    found.setdefault(category, set()).add(keyword)
        return found

    def _rank(self, item: tuple[str, set[str]]) -> tuple[int, int]:
        """More matched keywords first, then the earlier category."""
        return -len(item[1]), self._order[item[0]]

    # -- with the optional model ----------------------------------------------------------------

    def categorize(self, text: str) -> str | None:
        """The category of a fact: the model's when one is set and answers with a known category, else the rules'."""
        if self.model is not None:
            try:
                return self._model_category(text)
            except Exception as exc:  # an optional model never blocks a write: the rules decide
                logger.warning("categorising with the text model failed (%s: %s); using the keyword rules",
                               type(exc).__name__, exc)
        return self.rule_category(text)

    def for_query(self, text: str, *, known: Iterable[str] | None = None, limit: int = 3) -> list[str]:
        """The categories a query is about, best first, at most ``limit``; only ``known`` ones when given.

        With a model: the model's pick among ``known`` (or all categories); on failure, the rules'.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        allowed = None if known is None else set(known)
        if self.model is not None:
            try:
                return self._model_query(text, allowed, limit)
            except Exception as exc:
                logger.warning("choosing query categories with the text model failed (%s: %s); using the keyword rules",
                               type(exc).__name__, exc)
        picked = [m.category for m in self.matches(text) if allowed is None or m.category in allowed]
        return picked[:limit]

    def _choices(self, allowed: set[str] | None = None) -> list[str]:
        names = list(self.categories) + ([self.default] if self.default else [])
        if allowed is not None:
            names = [n for n in names if n in allowed] + sorted(allowed - set(names))
        return names

    def _model_category(self, text: str) -> str | None:
        assert self.model is not None
        choices = self._choices()
        data = parse_json_output(self.model.complete(_PROMPT.format(categories=", ".join(choices), text=text),
                                                     max_tokens=20))
        category = data.get("category") if isinstance(data, dict) else None
        if not isinstance(category, str) or category.strip().casefold() not in {c.casefold() for c in choices}:
            raise ModelOutputError(f"the model answered {category!r}, which is not one of the categories")
        return next(c for c in choices if c.casefold() == category.strip().casefold())

    def _model_query(self, text: str, allowed: set[str] | None, limit: int) -> list[str]:
        assert self.model is not None
        choices = self._choices(allowed)
        if not choices:
            return []
        data = parse_json_output(self.model.complete(
            _QUERY_PROMPT.format(categories=", ".join(choices), text=text, limit=limit), max_tokens=60))
        picked = data.get("categories") if isinstance(data, dict) else None
        if not isinstance(picked, list) or not all(isinstance(p, str) for p in picked):
            raise ModelOutputError('expected {"categories": [...]} with category names')
        by_fold = {c.casefold(): c for c in choices}
        unknown = [p for p in picked if p.strip().casefold() not in by_fold]
        if unknown:
            raise ModelOutputError(f"the model named unknown categories {unknown}")
        return list(dict.fromkeys(by_fold[p.strip().casefold()] for p in picked))[:limit]

    def __repr__(self) -> str:
        how = "model, rules as fallback" if self.model is not None else "rules"
        return f"Categorizer({len(self.categories)} categories, {how})"

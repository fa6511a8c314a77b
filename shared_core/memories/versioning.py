"""The write rule of facts (seed 001): a new fact is a restatement, a new version, or new.

**The write rule.** A new fact never merges away information: OpenMotoko's "cosine > 0.9
reinforces" holds only for a restatement (:mod:`shared_core.restatement`: the same words once
case, punctuation, articles and contractions are set aside). Otherwise the fact is kept:

* explicitly a version: ``store.add(text, supersedes=old_id)``;
* a near-duplicate (cosine > 0.9) about the same subject (:func:`same_subject`) that changes a
  detail (a number, a name, a negation, an order): the new version of that fact (reason
  ``changed``);
* with a text model (``store.text_model``): the current facts in the namespace that are similar
  (above ``memory.fact_version_near_threshold``, default the embedder's noise floor; the
  near-duplicates included) are shown to the model with the new fact, and it answers ADD (keep
  both), UPDATE (the new one replaces one of them), DELETE (the new one says one of them is no
  longer true) or NONE (already known: that fact is reinforced, nothing is added). An answer
  that cannot be used falls back to the rules;
* the category rule: same namespace, same ``category`` (both set), and the same **subject
  key**. The subject key is ``metadata["subject"]`` when the caller gives one (compared only
  with other explicit subjects); otherwise the words before the first linking verb plus that
  verb (in one form), lowercased, without articles, possessive endings, negations or adverbs,
  when that is 1-6 words: "User's timezone is Europe/Berlin" and "The user's timezone is
  America/New_York" share ``"user timezone is"``. Facts without a category never supersede by
  this rule: "Alice is a doctor" and "Alice is 30" both hold.

A superseded fact keeps its text; ``valid_to`` is set to the moment it stopped being current
and ``superseded_by`` to the new fact's id (its metadata gets ``superseded_reason``: explicit,
changed, rule, update or delete). Default search leaves it out (``include_superseded=True`` brings it
back), and ``store.history(id)`` lists the whole chain, oldest first.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..clock import to_iso
from ..embed import profile_of
from ..errors import NotFoundError
from ..index.filters import Condition
from ..index.scope import Scope
from ..llm import ModelOutputError, parse_json_output
from ..namespaces import check_namespace
from ..restatement import is_restatement, remembered, spell_out, statement_words
from ..search_query import SearchQuery
from .records import AddResult, Memory, NearFacts

if TYPE_CHECKING:
    from ..kernel import Kernel
    from .records import Prepared

__all__ = ["FactVersions", "subject_key", "same_subject", "VERSION_EVENTS"]

logger = logging.getLogger("openkoi.facts")

# what the text model may answer about a new fact (see _CLASSIFY_PROMPT)
ADD, UPDATE, DELETE, NONE = VERSION_EVENTS = tuple("ADD UPDATE DELETE NONE".split())
SCORINGS = ("bre", "hybrid")

# each linking verb's forms, under the form a subject key shows: "was" and "are" are "is", "lived" is "lives"
_VERB_FORMS = {
    "is": "is are was were am be been", "has": "has have had", "lives": "lives live lived living",
    "works": "works work worked working", "runs": "runs run ran running", "uses": "uses use used using",
    "prefers": "prefers prefer preferred", "likes": "likes like liked", "loves": "loves love loved",
    "hates": "hates hate hated", "dislikes": "dislikes dislike disliked", "wants": "wants want wanted",
    "owns": "owns own owned", "drives": "drives drive drove driving", "speaks": "speaks speak spoke",
    "plays": "plays play played", "costs": "costs cost", "means": "means mean meant",
    "belongs": "belongs belong belonged", "moved": "moved moves move", "studies": "studies study studied studying",
    "teaches": "teaches teach taught teaching",
}
_LINKING_VERBS = {form: verb for verb, forms in _VERB_FORMS.items() for form in forms.split()}
_DROPPED = frozenset("the a an my our their his her its your this that these those".split())
# words between a subject and its verb that change the statement, not the subject: "Bob does not
# like", "I no longer use", "User now lives", "User still is"
_NOT_SUBJECT = frozenset("not never no longer still now currently actually really do does did".split())
_WORD = re.compile(r"[\w'\u2019]+")

_CLASSIFY_PROMPT = """You keep a memory of facts. A new fact arrived; decide how it relates to the existing facts.

Existing facts:
{existing}

New fact: {new}

Answer with JSON only: {{"event": {events}, "id": "<id of the existing fact>"}}
ADD: it is new information; keep every fact.
UPDATE: it replaces an existing fact (same subject, newer value).
DELETE: it says an existing fact is no longer true.
NONE: an existing fact already says this.
For UPDATE, DELETE and NONE give the id of that existing fact."""
_EVENT_CHOICES = " | ".join(f'"{event}"' for event in VERSION_EVENTS)


@remembered(1024)  # the category rule reads a category's 500 newest facts' keys at every add
def subject_key(text: str) -> str | None:
    """The words before the first linking verb, plus the verb ("user timezone is"), or None.

    Negations and adverbs before the verb are not part of the subject, and the verb is shown
    in one form, so "Bob doesn't like tea" and "Bob likes coffee" share ``"bob likes"`` and "I
    no longer use Vim" and "I use Vim" share ``"i uses"``.
    """
    subject: list[str] = []
    for word in _WORD.findall(spell_out(text))[:12]:
        verb = _LINKING_VERBS.get(word)
        if verb is not None:
            return " ".join([*subject, verb]) if 1 <= len(subject) <= 6 else None
        if word.endswith("'s"):
            word = word[:-2]
        word = word.strip("'")
        if word and word not in _DROPPED and word not in _NOT_SUBJECT:
            subject.append(word)
    return None


def same_subject(new: str, old: str, *, min_shared: int = 2) -> bool:
    """Whether two near-duplicate statements are about the same thing: the same subject key
    (:func:`subject_key`), or, when neither has one, the same first ``min_shared`` words or more
    ("The API key rotates every 30 days" / "...90 days")."""
    new_key, old_key = subject_key(new), subject_key(old)
    if new_key is not None or old_key is not None:
        return new_key == old_key
    shared = 0
    for a, b in zip(statement_words(new), statement_words(old), strict=False):
        if a != b:
            break
        shared += 1
    return shared >= min_shared


class FactVersions:
    """The write rule of ``store.add`` for facts (see the module docs); callers hold the kernel's session."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def write(self, item: Prepared, *, supersedes: str | None, dedup: bool,
              auto_category: str | None = None) -> AddResult:
        """``auto_category``: the category auto-categorisation chose; it is given to the fact after the
        versioning rule ran, so a machine-chosen category never makes two facts one subject."""
        kernel, db = self.kernel, self.kernel.backend
        memories = kernel.memories
        if supersedes is not None:
            current = self._current(supersedes, item)
            item.category = item.category or auto_category
            with db.transaction():
                result = memories.write(item, dedup=False)
                self._close(current, result, "explicit")
            return _superseding(result, current.id)
        check_duplicate = dedup and item.id is None and item.kind == "fact"
        versioning = item.kind == "fact" and item.id is None and kernel.config.memory.fact_versioning
        asks_model = versioning and kernel.text_model is not None
        old: Memory | None = None
        event, reason = ADD, ""
        if asks_model:  # outside the write lock: a model call may take seconds
            near = memories.near_facts(item) if check_duplicate else NearFacts(None, ())
            if near.restated is not None:  # spare the model call (checked again below)
                with db.transaction():
                    memories.feedback(near.restated, kernel.config.memory.reinforce_weight, hit=True)
                return AddResult(near.restated.id, "reinforced")
            event, old, reason = self._detect(item, near.changed)
        with db.transaction():
            near = NearFacts(None, ())
            if check_duplicate:
                # under the write lock: another process adding the same fact at the same moment has
                # either committed (and is found here) or waits for us (and then finds ours)
                near = memories.near_facts(item)
                if near.restated is not None:
                    memories.feedback(near.restated, kernel.config.memory.reinforce_weight, hit=True)
                    return AddResult(near.restated.id, "reinforced")
            if versioning and not asks_model:  # the rule is a query: run it on what is committed now
                event, old, reason = self._detect(item, near.changed)
            # after detection, in both paths: a machine-chosen category never makes two facts one subject
            item.category = item.category or auto_category
            if old is not None:
                fresh = memories.get_row(old.id)
                if fresh is None or fresh.valid_to is not None:  # changed meanwhile: just add
                    old, event = None, ADD
                else:
                    old = fresh
            if event == NONE and old is not None:
                memories.feedback(old, kernel.config.memory.reinforce_weight, hit=True)
                return AddResult(old.id, "reinforced")
            result = memories.write(item, dedup=False)
            if event in (UPDATE, DELETE) and old is not None:
                self._close(old, result, reason)
                return _superseding(result, old.id)
            return result

    def _current(self, old_id: str, item: Prepared) -> Memory:
        if not isinstance(old_id, str) or not old_id:
            raise ValueError(f"supersedes must be the id of the memory this one replaces, got {old_id!r}")
        old = self.kernel.memories.get_row(old_id)
        if old is None or old.namespace != item.namespace:
            raise NotFoundError(f"no memory with id {old_id!r} in namespace {item.namespace!r} to supersede")
        if old.valid_to is not None:
            raise ValueError(f"memory {old_id!r} was already superseded by {old.superseded_by!r}; "
                             "supersede the current version instead (store.history shows the chain)")
        if old.kind != item.kind:
            raise ValueError(f"a {item.kind} cannot supersede a {old.kind} ({old_id!r}); versions share a kind")
        if item.id == old_id:
            raise ValueError("a memory cannot supersede itself; give the new version another id (or none)")
        return old

    def _close(self, old: Memory, new_id: str, reason: str) -> None:
        """End ``old``'s validity now, pointing at ``new_id`` (inside the caller's transaction)."""
        self.kernel.memories.close_version(old.rowid, str(new_id), reason)

    # -- detection ------------------------------------------------------------------------------

    def _detect(self, item: Prepared, changed: Sequence[Memory] = ()) -> tuple[str, Memory | None, str]:
        """(event, the old fact it concerns, reason) for a new fact; ``changed``: the live facts above
        the dedup threshold that it does not merely restate."""
        model = self.kernel.text_model
        if model is not None:
            near = self._near(item, changed)
            if near:
                try:
                    event, old = self._classify(model, item, near)
                    return event, old, event.lower()
                except Exception as exc:  # the rule decides when the model cannot
                    logger.warning("fact versioning by the text model failed (%s: %s); using the subject-key rule",
                                   type(exc).__name__, exc)
        old = self._same_subject(item, changed)
        if old is not None:
            return UPDATE, old, "changed"
        old = self._rule_match(item)
        return (UPDATE, old, "rule") if old is not None else (ADD, None, "")

    def _same_subject(self, item: Prepared, changed: Sequence[Memory]) -> Memory | None:
        """The most similar of ``changed`` that the new fact says something new about: the same
        explicit ``metadata["subject"]``, else the same subject key, else (neither text has a
        subject key) the same first words up to where they differ, at least two of them."""
        explicit = _explicit_subject(item.metadata_json)
        for memory in changed:
            theirs = memory.metadata.get("subject")
            if explicit is not None or isinstance(theirs, str):
                if explicit is not None and isinstance(theirs, str) and theirs.strip().casefold() == explicit:
                    return memory
            elif same_subject(item.text, memory.text):
                return memory
        return None

    def _near(self, item: Prepared, changed: Sequence[Memory] = (), limit: int = 5) -> list[Memory]:
        """What the text model is shown: the live facts similar to the new one (above the embedder's
        noise floor, the near-duplicates it changes included), most similar first."""
        kernel = self.kernel
        floor = kernel.config.memory.fact_version_near_threshold
        if floor < 0:
            floor = profile_of(kernel.embedder).similarity_floor
        scope = Scope(namespaces=(item.namespace,), kinds=("fact",), live_at=to_iso(kernel.clock.now()),
                      current_only=True)
        hits, _ = kernel.searcher.run(SearchQuery.build(None, scope, vector=item.vector, limit=limit, fusion="vector",
                                                        default_fusion="vector"))
        near = list(changed)
        seen = {m.id for m in near}
        near += [h.memory for h in hits if h.memory.id not in seen
                 and h.parts.similarity is not None and h.parts.similarity > floor
                 and not is_restatement(item.text, h.memory.text)]
        return near[:limit]

    def _classify(self, model: Any, item: Prepared, near: list[Memory]) -> tuple[str, Memory | None]:
        existing = "\n".join(f"- id={m.id}: {m.text}" for m in near)
        answer = model.complete(_CLASSIFY_PROMPT.format(existing=existing, new=item.text, events=_EVENT_CHOICES), max_tokens=100)
        data = parse_json_output(answer)
        if not isinstance(data, dict):
            raise ModelOutputError(f"expected a JSON object, got {type(data).__name__}")
        event = str(data.get("event", "")).strip().upper()
        if event not in VERSION_EVENTS:
            raise ModelOutputError(f"unknown event {data.get('event')!r}; expected one of {', '.join(VERSION_EVENTS)}")
        if event == ADD:
            return event, None
        target = str(data.get("id", "")).strip()
        for memory in near:
            if memory.id == target:
                return event, memory
        raise ModelOutputError(f"{event} names {target!r}, which is not one of the facts shown")

    def _rule_match(self, item: Prepared) -> Memory | None:
        if not item.category:
            return None
        explicit = _explicit_subject(item.metadata_json)
        key = explicit or subject_key(item.text)
        if key is None:
            return None
        memories = self.kernel.memories
        candidates = memories.newest_texts(
            _fact_scope(item.namespace, item.category, to_iso(self.kernel.clock.now())), limit=500)
        for rowid, text, metadata in candidates:
            theirs = metadata.get("subject")
            if explicit is not None:
                same = isinstance(theirs, str) and theirs.strip().casefold() == explicit
            else:
                same = not isinstance(theirs, str) and subject_key(text) == key
            if same:
                return memories.by_rowids([rowid]).get(rowid)
        return None


def _superseding(result: AddResult, old_id: str) -> AddResult:
    out = AddResult(str(result), "superseded")
    out.supersedes = old_id  # type: ignore[attr-defined]
    return out


def _explicit_subject(metadata_json: str) -> str | None:
    try:
        value = json.loads(metadata_json or "{}").get("subject")
    except (json.JSONDecodeError, AttributeError):
        return None
    return value.strip().casefold() if isinstance(value, str) and value.strip() else None


def _fact_scope(namespace: str, category: str, now_iso: str | None) -> Scope:
    return Scope(namespaces=(check_namespace(namespace),), kinds=("fact",), live_at=now_iso, current_only=True,
                 where=Condition("@category", "$eq", category))

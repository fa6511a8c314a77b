"""Semantic facts (seed 001): versioning, history and BRE scoring.

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

**BRE scoring.** Seed 001 ranks facts by "dot product with a magnitude penalty" and gives no
formula; ours is :func:`shared_core.ranking.bre_score`:
``confidence x cos(q, f) / sqrt(words in f) ** penalty`` (penalty 0.2), i.e. the dot product of
the query with the fact's raw bag-of-words vector divided by that vector's magnitude to the
power ``1 + penalty``. Use it with ``store.facts.search(query, scoring="bre")``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .clock import to_iso
from .embed import profile_of
from .errors import NotFoundError
from .llm import ModelOutputError, parse_json_output
from .memories import DEFAULT_NAMESPACE, AddResult, Memory, NearFacts, check_namespace
from .ranking import bre_magnitude, bre_score
from .restatement import is_restatement, spell_out, statement_words
from .search import Hit, SearchResults

if TYPE_CHECKING:
    from .memories import _Prepared
    from .store import MemoryStore

__all__ = ["Facts", "subject_key", "same_subject", "VERSION_EVENTS", "SCORINGS"]

logger = logging.getLogger("openkoi.facts")

VERSION_EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")
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

Answer with JSON only: {{"event": "ADD" | "UPDATE" | "DELETE" | "NONE", "id": "<id of the existing fact>"}}
ADD: it is new information; keep every fact.
UPDATE: it replaces an existing fact (same subject, newer value).
DELETE: it says an existing fact is no longer true.
NONE: an existing fact already says this.
For UPDATE, DELETE and NONE give the id of that existing fact."""


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


class Facts:
    """``store.facts``: fact versioning (used by ``store.add``), history and BRE search."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    # -- writing (called by store.add with the store lock held) ---------------------------------

    def write(self, item: _Prepared, *, supersedes: str | None, dedup: bool,
              auto_category: str | None = None) -> AddResult:
        """``auto_category``: the category auto-categorisation chose; it is given to the fact after the
        versioning rule ran, so a machine-chosen category never makes two facts one subject."""
        store, db = self.store, self.store.db
        memories = store.memories
        if supersedes is not None:
            old = self._current(supersedes, item)
            item.category = item.category or auto_category
            with db.transaction():
                result = memories.write(item, dedup=False)
                self._close(old, result, "explicit")
            return _superseding(result, old.id)
        check_duplicate = dedup and item.id is None and item.kind == "fact"
        versioning = item.kind == "fact" and item.id is None and store.config.memory.fact_versioning
        asks_model = versioning and store.text_model is not None
        event, old, reason = ("ADD", None, "")
        if asks_model:  # outside the write lock: a model call may take seconds
            near = memories.near_facts(item) if check_duplicate else NearFacts(None, ())
            if near.restated is not None:  # spare the model call (checked again below)
                with db.transaction():
                    memories.feedback(near.restated, store.config.memory.reinforce_weight, hit=True)
                return AddResult(near.restated.id, "reinforced")
            event, old, reason = self._detect(item, near.changed)
        with db.transaction():
            near = NearFacts(None, ())
            if check_duplicate:
                # under the write lock: another process adding the same fact at the same moment has
                # either committed (and is found here) or waits for us (and then finds ours)
                near = memories.near_facts(item)
                if near.restated is not None:
                    memories.feedback(near.restated, store.config.memory.reinforce_weight, hit=True)
                    return AddResult(near.restated.id, "reinforced")
            if versioning and not asks_model:  # the rule is a query: run it on what is committed now
                event, old, reason = self._detect(item, near.changed)
            # after detection, in both paths: a machine-chosen category never makes two facts one subject
            item.category = item.category or auto_category
            if old is not None:
                fresh = memories.get_row(old.id)
                if fresh is None or fresh.valid_to is not None:  # changed meanwhile: just add
                    old, event = None, "ADD"
                else:
                    old = fresh
            if event == "NONE" and old is not None:
                memories.feedback(old, store.config.memory.reinforce_weight, hit=True)
                return AddResult(old.id, "reinforced")
            result = memories.write(item, dedup=False)
            if event in ("UPDATE", "DELETE") and old is not None:
                self._close(old, result, reason)
                return _superseding(result, old.id)
            return result

    def _current(self, old_id: str, item: _Prepared) -> Memory:
        if not isinstance(old_id, str) or not old_id:
            raise ValueError(f"supersedes must be the id of the memory this one replaces, got {old_id!r}")
        old = self.store.memories.get_row(old_id)
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
        now = self.store.clock.now()
        self.store.db.execute(
            "UPDATE memory_chunks SET valid_to = ?, superseded_by = ?, updated_at = ?, "
            "metadata = json_set(metadata, '$.superseded_reason', ?) WHERE chunk_rowid = ?",
            (to_iso(now), str(new_id), to_iso(now), reason, old.rowid),
        )

    # -- detection ------------------------------------------------------------------------------

    def _detect(self, item: _Prepared, changed: Sequence[Memory] = ()) -> tuple[str, Memory | None, str]:
        """(event, the old fact it concerns, reason) for a new fact; ``changed``: the live facts above
        the dedup threshold that it does not merely restate."""
        model = self.store.text_model
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
            return "UPDATE", old, "changed"
        old = self._rule_match(item)
        return ("UPDATE", old, "rule") if old is not None else ("ADD", None, "")

    def _same_subject(self, item: _Prepared, changed: Sequence[Memory]) -> Memory | None:
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

    def _near(self, item: _Prepared, changed: Sequence[Memory] = (), limit: int = 5) -> list[Memory]:
        """What the text model is shown: the live facts similar to the new one (above the embedder's
        noise floor, the near-duplicates it changes included), most similar first."""
        cfg = self.store.config.memory
        floor = cfg.fact_version_near_threshold
        if floor < 0:
            floor = profile_of(self.store.embedder).similarity_floor
        hits = self.store.search(vector=item.vector, kind="fact", namespace=item.namespace, fusion="vector",
                                 limit=limit, track_access=False)
        near = list(changed)
        seen = {m.id for m in near}
        near += [h.memory for h in hits if h.memory.id not in seen
                 and h.parts.similarity is not None and h.parts.similarity > floor
                 and not is_restatement(item.text, h.memory.text)]
        return near[:limit]

    def _classify(self, model: Any, item: _Prepared, near: list[Memory]) -> tuple[str, Memory | None]:
        existing = "\n".join(f"- id={m.id}: {m.text}" for m in near)
        answer = model.complete(_CLASSIFY_PROMPT.format(existing=existing, new=item.text), max_tokens=100)
        data = parse_json_output(answer)
        if not isinstance(data, dict):
            raise ModelOutputError(f"expected a JSON object, got {type(data).__name__}")
        event = str(data.get("event", "")).strip().upper()
        if event not in VERSION_EVENTS:
            raise ModelOutputError(f"unknown event {data.get('event')!r}; expected one of {', '.join(VERSION_EVENTS)}")
        if event == "ADD":
            return event, None
        target = str(data.get("id", "")).strip()
        for memory in near:
            if memory.id == target:
                return event, memory
        raise ModelOutputError(f"{event} names {target!r}, which is not one of the facts shown")

    def _rule_match(self, item: _Prepared) -> Memory | None:
        if not item.category:
            return None
        explicit = _explicit_subject(item.metadata_json)
        key = explicit or subject_key(item.text)
        if key is None:
            return None
        candidates = self.store.memories.select(
            _fact_scope(item.namespace, item.category, to_iso(self.store.clock.now())),
            order_by="created_at", descending=True, limit=500,
        )
        for memory in candidates:
            theirs = memory.metadata.get("subject")
            if explicit is not None:
                if isinstance(theirs, str) and theirs.strip().casefold() == explicit:
                    return memory
            elif not isinstance(theirs, str) and subject_key(memory.text) == key:
                return memory
        return None

    # -- reading --------------------------------------------------------------------------------

    def history(self, memory_id: str) -> list[Memory]:
        """Every version linked to ``memory_id`` through ``superseded_by``, oldest first
        (archived versions included, with ``archived_at`` set)."""
        store = self.store
        with store.db.lock:
            start = self._any(memory_id)
            if start is None:
                raise NotFoundError(f"no memory with id {memory_id!r}")
            seen = {start.id: start}
            todo = [start]
            while todo:
                memory = todo.pop()
                linked = [self._any(memory.superseded_by)] if memory.superseded_by else []
                for row in store.db.query(
                    "SELECT id FROM memory_chunks WHERE superseded_by = ? UNION "
                    "SELECT id FROM memory_archive WHERE superseded_by = ?", (memory.id, memory.id)
                ):
                    linked.append(self._any(row[0]))
                for other in linked:
                    if other is not None and other.id not in seen:
                        seen[other.id] = other
                        todo.append(other)
        # chain order (each version before the one that superseded it), then time for parallel branches
        pending = {m.id: 0 for m in seen.values()}
        for memory in seen.values():
            if memory.superseded_by in pending:
                pending[memory.superseded_by] += 1
        order: list[Memory] = []
        ready = [m for m in seen.values() if pending[m.id] == 0]
        while ready:
            ready.sort(key=lambda m: (_ts(m.valid_from or m.created_at), _ts(m.created_at), m.id))
            memory = ready.pop(0)
            order.append(memory)
            successor = memory.superseded_by
            if successor in pending:
                pending[successor] -= 1
                if pending[successor] == 0:
                    ready.append(seen[successor])
        placed = {m.id for m in order}  # links that loop (never made by this library) keep time order
        order += sorted((m for m in seen.values() if m.id not in placed),
                        key=lambda m: (_ts(m.valid_from or m.created_at), m.id))
        return order

    def _any(self, memory_id: str | None) -> Memory | None:
        if not memory_id:
            return None
        return self.store.memories.get_row(memory_id) or self.store.archive_store.get(memory_id)

    def search(
        self,
        query: str,
        *,
        scoring: str = "bre",
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        category: str | Sequence[str] | None = None,
        where: Any = None,
        limit: int = 10,
        min_similarity: float | None = None,
        include_superseded: bool = False,
    ) -> SearchResults:
        """Facts for ``query``. ``scoring="bre"`` (seed 001): vector candidates above the noise
        floor (``min_similarity``, default the embedder's), scored by :func:`ranking.bre_score`;
        ``"hybrid"``: the core search."""
        if scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")
        store = self.store
        if scoring == "hybrid":
            return store.search(query, kind="fact", namespace=namespace, category=category, where=where, limit=limit,
                                include_superseded=include_superseded)
        pool = max(store.config.search.candidates, limit * 5)
        hits = store.search(query, kind="fact", namespace=namespace, category=category, where=where, limit=pool,
                            fusion="vector", include_superseded=include_superseded, track_access=False)
        floor = min_similarity
        if floor is None:
            floor = store.config.search.similarity_floor
            if floor < 0:
                floor = profile_of(store.embedder).similarity_floor
        penalty = store.config.ranking.bre_magnitude_penalty
        scored: list[Hit] = []
        for hit in hits:
            similarity = hit.parts.similarity
            if similarity is None or similarity <= floor:
                continue
            confidence = 1.0 if hit.memory.confidence is None else hit.memory.confidence
            value = bre_score(similarity, bre_magnitude(len(_WORD.findall(hit.text))), confidence, penalty)
            parts = dataclasses.replace(hit.parts, relevance=value, feedback=1.0, recency=1.0, fusion="bre")
            scored.append(Hit(hit.memory, value, parts))
        scored.sort(key=lambda h: (-h.score, h.memory.rowid))
        results = SearchResults(scored[:limit], query=query)
        if results and store.config.search.track_access and not store.db.read_only:
            with store.db.lock:
                store.memories.note_access([h.memory.rowid for h in results])
        return results


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


def _fact_scope(namespace: str, category: str, now_iso: str) -> Any:
    from .index.filters import Condition
    from .index.scope import Scope

    return Scope(namespaces=(check_namespace(namespace),), kinds=("fact",), live_at=now_iso, current_only=True,
                 where=Condition("@category", "$eq", category))


def _ts(when: Any) -> float:
    return when.timestamp() if when is not None else 0.0

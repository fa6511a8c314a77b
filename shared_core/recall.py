"""Token-budgeted recall (seed 000's Historian): what to tell the model before it starts a task.

``store.recall(task_description)`` fills a token budget in priority order, each item counted
with :func:`shared_core.tokens.count_tokens` as the line it renders to:

1. anti-patterns ("don't do X"; at most 5),
2. skill recommendations (at most 3),
3. heuristics and preferences (at most 5),
4. similar past tasks (at most 3), only while more than half the budget remains.

Within a priority, the first item that does not fit ends that priority (the seed's
``break``); lower priorities still get their turn. The budget defaults to
``recall.budget_fraction`` (1/10) of ``recall.task_token_budget`` (200,000): 20,000 tokens.

Recall does not reinforce anything: when the recalled items helped, say so with
``store.recall.mark_useful(result)`` (or some of its ids); learnings then gain confidence
and restart their decay clock, other memories get seed 002's +3.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import NotFoundError
from .learnings import Learnings
from .memories import DEFAULT_NAMESPACE, check_namespace
from .memories.service import MemoryService
from .skills import Skills
from .tokens import count_tokens

if TYPE_CHECKING:
    from .kernel import Kernel
    from .learnings.records import Learning
    from .skills import SkillRecommendation

__all__ = ["Historian", "Recall", "RecalledItem"]

_TITLE = "## Recalled from memory"
_HEADERS = {
    "anti_patterns": "### Avoid (anti-patterns from past tasks)",
    "skills": "### Recommended skills",
    "learnings": "### Heuristics and preferences",
    "similar_tasks": "### Similar past tasks",
}


@dataclass(frozen=True)
class RecalledItem:
    """One recalled item: the memory id (for feedback), the line it renders to, and what it is."""

    section: str  # anti_patterns | skills | learnings | similar_tasks
    text: str
    tokens: int
    score: float
    id: str | None = None
    learning: Learning | None = None
    skill: SkillRecommendation | None = None


@dataclass
class Recall:
    """What recall found for a task, within its token budget."""

    task: str
    token_budget: int
    tokens_used: int = 0
    anti_patterns: list[RecalledItem] = field(default_factory=list)
    skills: list[RecalledItem] = field(default_factory=list)
    learnings: list[RecalledItem] = field(default_factory=list)
    similar_tasks: list[RecalledItem] = field(default_factory=list)
    similar_tasks_skipped: bool = False  # True when half the budget was gone before priority 4

    @property
    def items(self) -> list[RecalledItem]:
        return [*self.anti_patterns, *self.skills, *self.learnings, *self.similar_tasks]

    @property
    def ids(self) -> list[str]:
        return [item.id for item in self.items if item.id is not None]

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def prompt(self) -> str:
        """The prompt section ("" when nothing was recalled)."""
        return self.render()

    def render(self) -> str:
        if not self.items:
            return ""
        lines = [_TITLE]
        for section in _HEADERS:
            items: list[RecalledItem] = getattr(self, section)
            if items:
                lines.append(_HEADERS[section])
                lines.extend(item.text for item in items)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(i.section)}</td><td>{i.score:.3f}</td><td>{i.tokens}</td>"
            f"<td style='text-align:left'><pre style='margin:0'>{html.escape(i.text)}</pre></td></tr>"
            for i in self.items
        )
        caption = (f"<caption>recall for {html.escape(repr(self.task[:80]))}: {self.tokens_used} of "
                   f"{self.token_budget} tokens</caption>")
        return f"<table>{caption}<tr><th>section</th><th>score</th><th>tokens</th><th>text</th></tr>{rows}</table>"


class _Budget:
    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self.opened: set[str] = set()

    def take(self, section: str, text: str) -> int | None:
        """Tokens charged for ``text`` (plus the headers it opens), or None when it does not fit."""
        cost = count_tokens(text + "\n")
        if not self.opened:
            cost += count_tokens(_TITLE + "\n")
        if section not in self.opened:
            cost += count_tokens(_HEADERS[section] + "\n")
        if self.used + cost > self.total:
            return None
        self.used += cost
        self.opened.add(section)
        return cost


class Historian:
    """``store.recall``: call it with a task description; report useful items with :meth:`mark_useful`."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def __call__(
        self,
        task_description: str,
        *,
        token_budget: int | None = None,
        category: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        task_token_budget: int | None = None,
    ) -> Recall:
        """Recall what past tasks taught about this one, within ``token_budget`` tokens.

        ``token_budget`` defaults to 1/10 (``recall.budget_fraction``) of ``task_token_budget``
        (default ``recall.task_token_budget``, 200,000). ``category`` (the new task's) lets
        learnings and skills from that category in even when the words differ.
        """
        if not isinstance(task_description, str) or not task_description.strip():
            raise ValueError("recall needs the task's description (a non-empty string)")
        check_namespace(namespace)
        cfg = self.kernel.config.recall
        if token_budget is None:
            total = cfg.task_token_budget if task_token_budget is None else task_token_budget
            if isinstance(total, bool) or not isinstance(total, int) or total < 0:
                raise ValueError(f"task_token_budget must be a non-negative whole number, got {total!r}")
            token_budget = int(total * cfg.budget_fraction)
        elif isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0:
            raise ValueError(f"token_budget must be a non-negative whole number, got {token_budget!r}")
        result = Recall(task=task_description, token_budget=token_budget)
        budget = _Budget(token_budget)
        learnings = self.kernel.service(Learnings)
        skills = self.kernel.service(Skills)

        # priority 1: anti-patterns
        for learning, score in learnings.relevant(task_description, types=["AntiPattern"], limit=cfg.anti_patterns,
                                                  category=category, namespace=namespace, candidates=cfg.candidates):
            text = f"- {learning.content}"
            cost = budget.take("anti_patterns", text)
            if cost is None:
                break
            result.anti_patterns.append(RecalledItem("anti_patterns", text, cost, score, learning.id, learning=learning))

        # priority 2: skill recommendations
        if cfg.skills > 0:
            if not self.kernel.backend.read_only:
                skills.sync_if_changed(namespace=namespace)
            for rank, skill in enumerate(skills.recommend(task_description, category=category,
                                                          namespace=namespace, limit=cfg.skills)):
                text = f"- {skill.render()}"
                cost = budget.take("skills", text)
                if cost is None:
                    break
                result.skills.append(RecalledItem("skills", text, cost, 1.0 / (rank + 1), skill.id, skill=skill))

        # priority 3: heuristics and preferences
        for learning, score in learnings.relevant(task_description, types=["Heuristic", "Preference"],
                                                  limit=cfg.learnings, category=category, namespace=namespace,
                                                  candidates=cfg.candidates):
            text = f"- [{learning.type.value}] {learning.content}"
            cost = budget.take("learnings", text)
            if cost is None:
                break
            result.learnings.append(RecalledItem("learnings", text, cost, score, learning.id, learning=learning))

        # priority 4: similar past tasks, only while more than half the budget remains
        if cfg.similar_tasks > 0:
            if token_budget - budget.used > token_budget * cfg.similar_tasks_min_remaining:
                for hit in self.kernel.service(MemoryService).search(
                        task_description, kind="task", namespace=namespace, limit=cfg.similar_tasks,
                        track_access=False):
                    lines = hit.text.splitlines() or [hit.text]
                    text = "\n".join([f"- {lines[0]}", *(f"  {line}" for line in lines[1:])])
                    cost = budget.take("similar_tasks", text)
                    if cost is None:
                        break
                    result.similar_tasks.append(RecalledItem("similar_tasks", text, cost, hit.score, hit.id))
            else:
                result.similar_tasks_skipped = True

        result.tokens_used = budget.used
        self._track(result)
        return result

    def _track(self, result: Recall) -> None:
        """Seed 003's access tracking for what was recalled (not feedback: that is mark_useful)."""
        kernel = self.kernel
        if not result.ids or kernel.backend.read_only or not kernel.config.search.track_access:
            return
        with kernel.session():
            rowids = [m.rowid for m in kernel.memories.get_many(result.ids)]
            if rowids:
                kernel.memories.note_access(rowids)

    def mark_useful(self, items: Recall | RecalledItem | str | Iterable[RecalledItem | str], *,
                    namespace: str | None = None) -> int:
        """The caller found these recalled items useful: reinforce them; return how many were.

        Learnings gain ``memory.learning_reinforce_bump`` confidence (capped at 1.0), ``reinforced``
        + 1 and a fresh decay clock; skills with a SKILL.md and past tasks get seed 002's +3.
        Items without a memory (a skill known only from its scores) are skipped.
        """
        ids: list[str | None]
        if isinstance(items, Recall):
            ids = list(items.ids)
        elif isinstance(items, (RecalledItem, str)):
            ids = [items.id if isinstance(items, RecalledItem) else items]
        else:
            ids = [i.id if isinstance(i, RecalledItem) else i for i in items]
        count = 0
        learnings = self.kernel.service(Learnings)
        for memory_id in dict.fromkeys(i for i in ids if i):
            try:
                if learnings.is_learning(memory_id):
                    learnings.reinforce(memory_id, namespace=namespace)
                else:
                    self.kernel.service(MemoryService).reinforce(memory_id, namespace=namespace)
            except NotFoundError:
                continue
            count += 1
        return count

    def __repr__(self) -> str:
        return f"Historian({self.kernel.backend.path!r})"

"""Facts and summaries from conversation turns: the rules without a model, a prompt with one.

**Facts by rules**: :func:`~shared_core.context.fact_rules.extract_facts` (its module documents the rules).

**Extractive summary**: the working-memory summariser of :mod:`shared_core.conversations.working`
(the previous summary's lines kept first, then the best-scored sentences within the budget).

**With a text model**: one prompt asks for the facts and the summary as JSON
(``{"facts": [...], "summary": "..."}``). An unusable answer falls back to the rules: an answer
that is not a JSON object (or the call fails) -> rules for both; a bad ``facts`` list -> rule
facts; a missing, empty or over-long (more than twice the budget) ``summary`` -> the extractive
one. ``Extraction.method`` says which ran (``model``, ``rules``, ``model+rules``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

from ..llm import ModelOutputError, TextModel, parse_json_output
from ..tokens import count_tokens
from .fact_rules import extract_facts, finish_fact
from .messages import Turn
from .records import ExtractedFact, Extraction

__all__ = ["extract", "summarize_turns", "EXTRACTION_PROMPT", "FACTS_HEADER", "NARRATIVE_HEADER"]

logger = logging.getLogger("openkoi.context")


# -- summaries ----------------------------------------------------------------------------------


FACTS_HEADER = "Facts:"
NARRATIVE_HEADER = "Conversation:"


def _split_previous(previous: str | None) -> tuple[list[str], str | None]:
    """(fact lines, narrative) of an earlier extractive summary; a model's summary is all narrative."""
    if not previous or not previous.startswith(FACTS_HEADER + "\n"):
        return [], previous
    head, _, narrative = previous[len(FACTS_HEADER) + 1:].partition(f"\n{NARRATIVE_HEADER}\n")
    facts = [line.removeprefix("- ").strip() for line in head.splitlines() if line.strip()]
    return facts, narrative.strip() or None


def summarize_turns(turns: Sequence[Turn], *, budget: int, previous: str | None = None) -> str:
    """The extractive summary of ``turns`` (after ``previous``) within ``budget`` tokens (no model).

    The rule-based facts of the turns (read again here, not stored) come first, under
    ``Facts:``, after those of the earlier summary, in at most half the budget; then, under
    ``Conversation:``, the working-memory summariser's best sentences in the rest. Without
    facts it is the summariser's text alone.
    """
    from ..conversations.working import summarize_messages

    old_facts, narrative = _split_previous(previous)
    facts = list(dict.fromkeys([*old_facts, *(f.text for f in extract_facts(turns, max_facts=50))]))
    lines: list[str] = []
    used = count_tokens(f"{FACTS_HEADER}\n{NARRATIVE_HEADER}\n")
    for fact in facts:
        cost = count_tokens(f"- {fact}\n")
        if used + cost > budget // 2:
            break
        lines.append(f"- {fact}")
        used += cost
    room = max(1, budget - used) if lines else budget
    rest, _ = summarize_messages(narrative, list(turns), budget=room, model=None)  # type: ignore[arg-type]
    if not lines:
        return rest
    return f"{FACTS_HEADER}\n" + "\n".join(lines) + f"\n{NARRATIVE_HEADER}\n{rest}"


# -- with a model -------------------------------------------------------------------------------

EXTRACTION_PROMPT = """You maintain the long-term memory of an assistant. Read the conversation below.
{tasks}
Facts: durable facts worth remembering in later sessions: about the user (names, people and pets,
where they live and work, preferences, dates, numbers) and decisions taken, also from tool results
and what the assistant observed about the user. A correction or negation is a fact too: state it
as corrected ("The user is not allergic to peanuts.", "The user no longer uses Vim."). One
self-contained sentence each, in the third person ("The user ..."). Leave out questions, greetings,
guesses, passing states and anything the assistant merely suggested. At most {max_facts}; none is fine.
{summary_rule}Answer with JSON only: {shape}

Summary of the conversation before these messages:
{previous}
{done}
Messages to read for facts:
{pending}
"""


def _render(turns: Sequence[Turn], limit: int = 2000) -> str:
    lines = []
    for turn in turns:
        text = turn.text.strip()
        if not text and turn.tool_calls:
            text = "(called " + ", ".join(str(c.get("name", "a tool")) if isinstance(c, dict) else "a tool"
                                          for c in turn.tool_calls) + ")"
        if text:
            lines.append(f"{turn.role}: {text[:limit]}")
    return "\n".join(lines) or "(none)"


def _model_answer(model: TextModel, pending: Sequence[Turn], done: Sequence[Turn], previous: str | None,
                  budget: int, max_facts: int, want_summary: bool) -> Any:
    tasks = ("Do two things: list the facts, and summarise the whole conversation." if want_summary
             else "List the facts.")
    summary_rule = (f"Summary: the whole conversation (the earlier summary and all messages) in at most {budget} "
                    "tokens, keeping names, facts, decisions, open questions, numbers and dates.\n"
                    if want_summary else "")
    shape = '{"facts": ["..."], "summary": "..."}' if want_summary else '{"facts": ["..."]}'
    done_text = (f"\nOlder messages (already remembered: summarise them, take no facts from them):\n{_render(done)}\n"
                 if done else "")
    prompt = EXTRACTION_PROMPT.format(tasks=tasks, max_facts=max_facts, summary_rule=summary_rule, shape=shape,
                                      previous=previous or "(none)", done=done_text, pending=_render(pending))
    data = parse_json_output(model.complete(prompt, max_tokens=budget + 40 * max_facts))
    if not isinstance(data, dict):
        raise ModelOutputError(f"expected a JSON object, got {type(data).__name__}")
    return data


def _model_facts(data: dict[str, Any], max_facts: int, max_chars: int) -> list[ExtractedFact]:
    raw = data.get("facts")
    if not isinstance(raw, list):
        raise ModelOutputError('the answer has no "facts" list')
    out: list[ExtractedFact] = []
    seen: set[str] = set()
    for item in raw:
        text = item.get("text", item.get("fact")) if isinstance(item, dict) else item
        if not isinstance(text, str):
            raise ModelOutputError(f"a fact must be a string, got {item!r}")
        text = " ".join(text.split())
        if not text or len(text) > max_chars or text.casefold() in seen:
            continue  # one bad fact is dropped, not the others
        seen.add(text.casefold())
        out.append(ExtractedFact(finish_fact(text), "model"))
    return out[:max_facts]


def _model_summary(data: dict[str, Any], budget: int) -> str:
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ModelOutputError('the answer has no "summary" text')
    if count_tokens(summary) > 2 * budget:
        raise ModelOutputError(f"the summary is longer than twice the {budget}-token budget")
    return summary.strip()


def extract(
    turns: Sequence[Turn],
    *,
    already: Collection[int] = frozenset(),
    previous: str | None = None,
    model: TextModel | None = None,
    want_summary: bool = True,
    budget: int = 500,
    max_facts: int = 20,
    max_chars: int = 300,
) -> Extraction:
    """Facts from ``turns`` and (``want_summary``) a summary of ``previous`` followed by ``turns``.

    ``already``: the ``Turn.index`` of turns whose facts were taken before (a flush): they are
    summarised but never read for facts again. Uses ``model`` when given, falling back to the
    rules piece by piece (see the module docs).
    """
    pending = [t for t in turns if t.index not in already]
    if model is not None:
        done = [t for t in turns if t.index in already]
        try:
            data = _model_answer(model, pending, done, previous, budget, max_facts, want_summary)
        except Exception as exc:  # an optional model never loses the input: the rules run instead
            logger.warning("fact extraction by the text model failed (%s: %s); using the rules", type(exc).__name__, exc)
            error: str | None = f"{type(exc).__name__}: {exc}"
        else:
            errors: list[str] = []
            try:
                facts = _model_facts(data, max_facts, max_chars)
            except ModelOutputError as exc:
                errors.append(str(exc))
                facts = extract_facts(pending, max_facts=max_facts, max_chars=max_chars)
            summary = ""
            if want_summary:
                try:
                    summary = _model_summary(data, budget)
                except ModelOutputError as exc:
                    errors.append(str(exc))
                    summary = summarize_turns(turns, budget=budget, previous=previous)
            if errors:
                logger.warning("part of the text model's extraction was unusable (%s); the rules filled in",
                               "; ".join(errors))
            return Extraction(facts, summary, "model+rules" if errors else "model", "; ".join(errors) or None)
    else:
        error = None
    facts = extract_facts(pending, max_facts=max_facts, max_chars=max_chars)
    summary = summarize_turns(turns, budget=budget, previous=previous) if want_summary else ""
    return Extraction(facts, summary, "rules", error)

"""Working memory (seed 001): the last messages in full, older ones folded into a summary.

Rule (``context.working_keep`` = 20, ``context.working_summarize_after`` = 40): while
more than 40 messages of a session are not covered by its working summary, all but the
last 20 of them are folded into a new summary (the previous summary plus those
messages), stored in ``working_memory_summaries``. The model then sees::

    system prompt + "Summary of the earlier conversation" + every message after the summary

so it always sees between 20 and 40 recent messages in full, and a summary is written once
every 20 messages rather than on every turn.

Summaries come from ``store.text_model`` when one is set (a prompt asking for about
``context.summary_tokens`` = 500 tokens, answered as JSON ``{"summary": ...}`` or plain
text); without a model, or when its answer is unusable (an error, empty, an object
without ``summary``, or more than twice the budget), the extractive summariser of
:mod:`shared_core.summarize` picks the most informative sentences within the budget,
keeping lines of the previous summary first.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..llm import ModelOutputError, TextModel, parse_json_output
from ..summarize import Scored, extractive_pick, score_sentence, split_sentences, top_keywords
from ..tokens import count_tokens
from .records import Message, WorkingSummary

__all__ = ["WorkingMemory", "summarize_messages", "SUMMARY_PROMPT", "SUMMARY_HEADER"]

logger = logging.getLogger("openkoi.conversations")

SUMMARY_HEADER = "Summary of the earlier conversation:"

SUMMARY_PROMPT = """You maintain the working memory of a conversation between a user and an assistant.
Write a summary of the conversation so far in at most {budget} tokens. Keep what the assistant
will need later: names, facts about the user, preferences, decisions, commitments, open
questions, numbers and dates. Write plain sentences, no preamble.
Answer with JSON: {{"summary": "..."}}

Summary so far:
{previous}

New messages:
{messages}
"""


@dataclass
class WorkingMemory:
    """What the model sees of a session: the working summary (if any) and the messages after it."""

    session_id: str
    summary: WorkingSummary | None
    messages: list[Message] = field(default_factory=list)
    total_messages: int = 0

    @property
    def token_count(self) -> int:
        summary = self.summary.token_count if self.summary else 0
        return summary + sum(m.token_count for m in self.messages)

    def to_messages(self, system: str | None = None) -> list[dict[str, Any]]:
        """Chat-completion style dicts: system prompt, summary (as a system message), recent messages."""
        out: list[dict[str, Any]] = []
        if system:
            out.append({"role": "system", "content": system})
        if self.summary is not None:
            out.append({"role": "system", "content": f"{SUMMARY_HEADER}\n{self.summary.summary}"})
        out.extend(m.to_chat() for m in self.messages)
        return out

    def render(self, system: str | None = None) -> str:
        """The same as plain text, one ``role: content`` block per message."""
        parts = []
        for item in self.to_messages(system):
            content = item["content"]
            if not isinstance(content, str):
                content = "\n".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
            parts.append(f"{item['role']}: {content}")
        return "\n\n".join(parts)

    def _repr_html_(self) -> str:
        rows = []
        if self.summary is not None:
            rows.append(f"<tr><td>summary</td><td>1-{self.summary.last_seq}</td>"
                        f"<td style='text-align:left'>{html.escape(self.summary.summary)}</td></tr>")
        for m in self.messages:
            text = m.content if len(m.content) <= 200 else m.content[:197] + "..."
            rows.append(f"<tr><td>{html.escape(m.role)}</td><td>{m.seq}</td>"
                        f"<td style='text-align:left'>{html.escape(text)}</td></tr>")
        caption = (f"<caption>session {html.escape(self.session_id)}: {self.total_messages} messages, "
                   f"{len(self.messages)} in full, ~{self.token_count} tokens</caption>")
        return f"<table>{caption}<tbody>{''.join(rows)}</tbody></table>"


def _message_text(message: Message) -> str:
    text = message.content.strip()
    if not text and message.tool_calls:
        text = "called " + ", ".join(str(c.get("name", "a tool")) if isinstance(c, dict) else "a tool"
                                     for c in message.tool_calls)
    return text


def _model_summary(model: TextModel, previous: str | None, messages: Sequence[Message], budget: int) -> str:
    lines = []
    for m in messages:
        text = _message_text(m)
        if text:
            lines.append(f"{m.role}: {text[:2000]}")
    prompt = SUMMARY_PROMPT.format(budget=budget, previous=previous or "(none yet)", messages="\n".join(lines))
    answer = model.complete(prompt, max_tokens=budget)
    try:
        parsed = parse_json_output(answer)
    except ModelOutputError:
        if not isinstance(answer, str) or not answer.strip():
            raise
        if answer.lstrip().startswith(("{", "[")):
            raise ModelOutputError("the model's answer looks like broken JSON") from None
        text = answer.strip()
    else:
        if not isinstance(parsed, dict) or not isinstance(parsed.get("summary"), str):
            raise ModelOutputError('the model did not answer with {"summary": "..."}')
        text = parsed["summary"].strip()
    if not text:
        raise ModelOutputError("the model's summary is empty")
    if count_tokens(text) > 2 * budget:
        raise ModelOutputError(f"the model's summary is longer than twice the {budget}-token budget")
    return text


def _extractive_summary(previous: str | None, messages: Sequence[Message], budget: int) -> str:
    texts = [_message_text(m) for m in messages]
    keywords = top_keywords(t for t in texts if t)
    candidates: list[Scored] = []
    index = 0
    for line in split_sentences(previous or ""):
        line = line.removeprefix("- ").strip()
        if line:
            # what an earlier summary kept stays ahead of new material of the same worth
            candidates.append(Scored(index, f"- {line}", max(score_sentence(line, keywords), 0.5) + 1.0))
            index += 1
    for message, text in zip(messages, texts, strict=False):
        for sentence in split_sentences(text):
            candidates.append(Scored(index, f"- {message.role}: {sentence}", score_sentence(sentence, keywords)))
            index += 1
    picked = extractive_pick(candidates, budget)
    if picked:
        return "\n".join(c.text for c in picked)
    roles: dict[str, int] = {}
    for m in messages:
        roles[m.role] = roles.get(m.role, 0) + 1
    counts = ", ".join(f"{role} {n}" for role, n in roles.items())
    return f"- {len(messages)} earlier messages ({counts}) with no notable statements."


def summarize_messages(
    previous: str | None, messages: Sequence[Message], *, budget: int, model: TextModel | None
) -> tuple[str, str]:
    """(summary text, method): the model's summary when it gives a usable one, else the extractive one."""
    if model is not None:
        try:
            return _model_summary(model, previous, messages, budget), "model"
        except Exception as exc:  # any failure of an optional model falls back; the messages are never lost
            logger.warning("working-memory summary by the text model failed (%s); using the extractive one", exc)
    return _extractive_summary(previous, messages, budget), "extractive"

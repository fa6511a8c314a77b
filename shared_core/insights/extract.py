"""Turning messages into insights: through a text model, or by a few modest rules without one.

Seed 003's pipeline groups messages by platform + channel and has a model extract structured
insights from each group. With ``store.text_model`` set, that is what happens here: each
group is cut into batches that fit ``insights.extract_prompt_tokens``, and the model answers
JSON (parsed with ``llm.parse_json_output``). An answer that cannot be used stores nothing
for its batch and is logged and reported as a warning; it never raises.

Without a model, rules look at each sentence for three things, in this order:

* **decisions**: "we decided", "decided to", "decision:", "agreed to/on/that", "let's go with",
  "we'll go with", "approved", "final call" -> label ``decision``, importance high;
* **deadlines**: "due", "deadline", "by", "before", "until", "no later than" followed by a
  date-like phrase (today, tonight, tomorrow, a weekday, next week, end of day/week/month,
  EOD/EOW, an ISO date, 3/14, "March 14", "14 March") -> label ``deadline``, importance high,
  urgency urgent (immediate for today/tonight/EOD);
* **action items**: "todo", "action item", "follow up", "please", "can/could you", "need(s) to",
  "must", "assigned to", "I'll"/"I will" -> label ``action_item``, importance medium.

Words anywhere in the message such as critical, blocker, outage, incident, security raise
importance to critical; asap, immediately, right away, today, tonight, EOD make the urgency
immediate, urgent, tomorrow, soon make it urgent; "no rush", "whenever", "someday" lower it.
The dedupe key is the label plus a hash of the sentence's words, so the same sentence
seen twice updates one insight (its details and timeline grow).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..clock import from_iso, to_iso
from ..llm import ModelOutputError, parse_json_output
from ..tokens import count_tokens
from .records import IMPORTANCE_LEVELS, URGENCY_LEVELS, InsightData, dedupe_key_for

__all__ = ["SourceMessage", "normalise_messages", "group_messages", "rule_based_insights", "build_prompt",
           "batches", "parse_model_insights"]


@dataclass(frozen=True)
class SourceMessage:
    text: str
    person: str | None = None
    timestamp: datetime | None = None
    platform: str | None = None
    channel: str | None = None
    message_id: str | None = None

    def detail(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        for key in ("person", "platform", "channel", "message_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.timestamp is not None:
            out["timestamp"] = to_iso(self.timestamp)
        return out

    def line(self) -> str:
        when = f"[{to_iso(self.timestamp)}] " if self.timestamp else ""
        who = f"{self.person}: " if self.person else ""
        return f"{when}{who}{self.text}"


def _first(data: Mapping[str, Any] | Any, *names: str) -> Any:
    for name in names:
        value = data.get(name) if isinstance(data, Mapping) else getattr(data, name, None)
        if value is not None:
            return value
    return None


def _timestamp(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return from_iso(to_iso(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000.0 if value > 1e11 else float(value)  # seed 003 stores Unix ms
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    if isinstance(value, str):
        try:
            return from_iso(value)
        except ValueError:
            raise ValueError(f"message timestamp {value!r} is not ISO-8601 or Unix time") from None
    raise TypeError(f"message timestamp must be a datetime, ISO string or Unix time, got {type(value).__name__}")


def normalise_messages(messages: Iterable[Any], *, platform: str | None = None,
                       channel: str | None = None) -> list[SourceMessage]:
    """Messages as strings, dicts (text/content, person/sender/author/user, timestamp/ts/at,
    platform, channel, id/message_id) or objects with those attributes. Empty texts are skipped."""
    if isinstance(messages, (str, Mapping)):
        messages = [messages]
    out: list[SourceMessage] = []
    for raw in messages:
        if isinstance(raw, str):
            text, data = raw, {}
        else:
            data = raw
            text = _first(raw, "text", "content", "message")
        if text is None:
            raise ValueError(f"a message needs its text (a 'text' or 'content' field), got {raw!r}")
        if not isinstance(text, str):
            raise TypeError(f"message text must be a string, got {type(text).__name__}")
        if not text.strip():
            continue
        message_id = _first(data, "message_id", "messageId", "id") if data else None
        out.append(SourceMessage(
            text=text.strip(),
            person=_str_or_none(_first(data, "person", "sender", "author", "user", "userId") if data else None),
            timestamp=_timestamp(_first(data, "timestamp", "ts", "at", "created_at") if data else None),
            platform=_str_or_none(_first(data, "platform") if data else None) or platform,
            channel=_str_or_none(_first(data, "channel") if data else None) or channel,
            message_id=None if message_id is None else str(message_id),
        ))
    return out


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def group_messages(messages: Sequence[SourceMessage]) -> dict[tuple[str | None, str | None], list[SourceMessage]]:
    """Seed 003: messages grouped by platform + channel (in first-seen order)."""
    groups: dict[tuple[str | None, str | None], list[SourceMessage]] = {}
    for message in messages:
        groups.setdefault((message.platform, message.channel), []).append(message)
    return groups


# -- rules --------------------------------------------------------------------------------------

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION = re.compile(
    r"\b(?:we(?:'ve| have)? decided|decided to|decision(?: is)?:|agreed (?:to|on|that)|let'?s go with|"
    r"we(?:'ll| will) go with|approved|final call)\b", re.IGNORECASE)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_WHEN = (
    r"(?:the\s+)?(?:eod|eow|end of (?:the )?(?:day|week|month|quarter)|today|tonight|tomorrow|next week|"
    r"(?:next\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|"
    rf"{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH})"
)
_DEADLINE = re.compile(rf"\b(?:(?:due|by|before|until|no later than)\s+{_WHEN}|deadline\b)", re.IGNORECASE)
_ACTION = re.compile(
    r"\b(?:todo|to-do|action item|follow[ -]up|please|can you|could you|needs? to|must|assigned to|i'?ll|i will)\b",
    re.IGNORECASE)
_CRITICAL = re.compile(r"\b(?:critical|blocker|blocking|outage|incident|security|data loss)\b", re.IGNORECASE)
_IMMEDIATE = re.compile(r"\b(?:asap|immediately|right away|right now|today|tonight|eod)\b", re.IGNORECASE)
_URGENT = re.compile(r"\b(?:urgent|urgently|tomorrow|soon)\b", re.IGNORECASE)
_RELAXED = re.compile(r"\b(?:no rush|whenever|someday|low priority|nice to have)\b", re.IGNORECASE)

_LABELS = {"decision": "Decision", "deadline": "Deadline", "action_item": "Action item"}


def _classify(sentence: str) -> str | None:
    if _DECISION.search(sentence):
        return "decision"
    if _DEADLINE.search(sentence):
        return "deadline"
    if _ACTION.search(sentence):
        return "action_item"
    return None


def _levels(label: str, sentence: str) -> tuple[str, str]:
    importance = "high" if label in ("decision", "deadline") else "medium"
    urgency = "urgent" if label == "deadline" else "medium"
    if _CRITICAL.search(sentence):
        importance = "critical"
    if _IMMEDIATE.search(sentence):
        urgency = "immediate"
    elif _URGENT.search(sentence):
        urgency = "urgent"
    elif _RELAXED.search(sentence):
        urgency = "low"
        if importance == "medium":
            importance = "low"
    return importance, urgency


def _title(label: str, sentence: str, words: int = 10) -> str:
    parts = sentence.split()
    short = " ".join(parts[:words]) + (" ..." if len(parts) > words else "")
    return f"{_LABELS[label]}: {short.rstrip('.!?')}"


def rule_based_insights(messages: Sequence[SourceMessage]) -> list[InsightData]:
    """Decisions, deadlines and action items found by the rules above, one per sentence."""
    found: dict[str, InsightData] = {}
    for message in messages:
        for sentence in (s.strip() for s in _SENTENCES.split(message.text)):
            if len(sentence) < 8:
                continue
            label = _classify(sentence)
            if label is None:
                continue
            normal = " ".join(re.findall(r"[^\W_]+", sentence.casefold()))
            key = f"{label}:{hashlib.sha1(normal.encode()).hexdigest()[:16]}"
            importance, urgency = _levels(label, message.text)  # cues may sit in a neighbouring sentence
            event: dict[str, Any] = {"event": f"{label.replace('_', ' ')} mentioned"}
            if message.timestamp is not None:
                event = {"at": to_iso(message.timestamp), **event}
            if message.person:
                event["by"] = message.person
            existing = found.get(key)
            if existing is not None:  # the same sentence twice in one batch: one insight, two mentions
                existing.details = [*existing.details, message.detail()]
                existing.timeline = [*existing.timeline, event]
                continue
            found[key] = InsightData(
                title=_title(label, sentence), description=sentence, importance=importance, urgency=urgency,
                details=[message.detail()], timeline=[event], task_label=label, dedupe_key=key,
                platform=message.platform, channel=message.channel,
            )
    return list(found.values())


# -- the model ----------------------------------------------------------------------------------

_PROMPT = """You extract insights worth tracking from chat messages: decisions, action items, deadlines,
risks, bug reports, feature requests, commitments. Ignore small talk.
Answer with JSON only, in this shape:
{{"insights": [{{"title": "short label", "description": "one or two sentences",
  "importance": "{importance}", "urgency": "{urgency}",
  "task_label": "decision | action_item | deadline | bug_report | feature_request | risk | other",
  "dedupe_key": "a short stable key for this topic, e.g. launch-date",
  "details": ["facts from the messages"], "timeline": [{{"at": "ISO time", "event": "what happened"}}]}}]}}
Give at most {limit} insights; answer {{"insights": []}} when nothing is worth tracking.
Platform: {platform}. Channel: {channel}.
Messages:
{messages}
"""


def build_prompt(messages: Sequence[SourceMessage], *, platform: str | None, channel: str | None, limit: int,
                 importance_levels: Iterable[str] = IMPORTANCE_LEVELS,
                 urgency_levels: Iterable[str] = URGENCY_LEVELS) -> str:
    return _PROMPT.format(
        importance=" | ".join(importance_levels), urgency=" | ".join(urgency_levels), limit=limit,
        platform=platform or "unknown", channel=channel or "unknown",
        messages="\n".join(m.line() for m in messages),
    )


def batches(messages: Sequence[SourceMessage], token_budget: int) -> list[list[SourceMessage]]:
    """Consecutive runs of messages whose lines fit ``token_budget`` (a longer single message is cut)."""
    out: list[list[SourceMessage]] = []
    current: list[SourceMessage] = []
    used = 0
    for message in messages:
        cost = count_tokens(message.line())
        if cost > token_budget:  # keep the start of an overlong message
            keep = max(1, int(len(message.text) * token_budget / cost) - 1)
            message = SourceMessage(message.text[:keep], message.person, message.timestamp, message.platform,
                                    message.channel, message.message_id)
            cost = count_tokens(message.line())
        if current and used + cost > token_budget:
            out.append(current)
            current, used = [], 0
        current.append(message)
        used += cost
    if current:
        out.append(current)
    return out


def parse_model_insights(answer: Any, *, importance_levels: Iterable[str], urgency_levels: Iterable[str],
                         limit: int) -> tuple[list[InsightData], list[str]]:
    """The insights in a model's answer, and warnings about items that were left out.

    Raises :class:`ModelOutputError` when the answer as a whole is unusable (not JSON, not an
    ``{"insights": [...]}`` object or a list).
    """
    data = parse_json_output(answer)
    if isinstance(data, Mapping):
        data = data.get("insights")
    if not isinstance(data, list):
        raise ModelOutputError('the model did not answer {"insights": [...]}')
    importance_ok, urgency_ok = set(importance_levels), set(urgency_levels)
    items: list[InsightData] = []
    warnings: list[str] = []
    for number, raw in enumerate(data, 1):
        if len(items) >= limit:
            warnings.append(f"the model gave more than {limit} insights; the rest were ignored")
            break
        if not isinstance(raw, Mapping):
            warnings.append(f"insight {number} is not an object; skipped")
            continue
        title = raw.get("title")
        if not isinstance(title, str) or not title.strip():
            warnings.append(f"insight {number} has no title; skipped")
            continue
        description = raw.get("description")
        importance = str(raw.get("importance") or "medium").strip().lower()
        urgency = str(raw.get("urgency") or "medium").strip().lower()
        if importance not in importance_ok:
            warnings.append(f"insight {number} has importance {importance!r}; used 'medium'")
            importance = "medium"
        if urgency not in urgency_ok:
            warnings.append(f"insight {number} has urgency {urgency!r}; used 'medium'")
            urgency = "medium"
        label = raw.get("task_label", raw.get("taskLabel"))
        key = raw.get("dedupe_key", raw.get("dedupeKey"))
        items.append(InsightData(
            title=title.strip(),
            description=description.strip() if isinstance(description, str) else "",
            importance=importance,
            urgency=urgency,
            details=_as_records(raw.get("details"), "text"),
            timeline=_as_records(raw.get("timeline"), "event"),
            task_label=str(label).strip() if isinstance(label, (str, int)) and str(label).strip() else None,
            dedupe_key=str(key).strip() if isinstance(key, (str, int)) and str(key).strip() else dedupe_key_for(title),
        ))
    return items, warnings


def _as_records(value: Any, text_key: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    out: list[dict[str, Any]] = []
    for item in value:
        if isinstance(item, Mapping):
            out.append({str(k): v for k, v in item.items() if isinstance(v, (str, int, float, bool)) or v is None})
        elif isinstance(item, (str, int, float)):
            out.append({text_key: item})
    return out

"""Moving memories in and out: JSONL backups, Markdown exports, and flat-file imports.

Seed 002's migration path: a flat ``MEMORY.md`` (and ``memory/*.md`` daily files) is
split into discrete memories with ``source="migration"``: every list item is one
memory, every other paragraph is one memory, and the nearest heading above becomes the
category. Ids are derived from namespace and text, so importing the same file twice
changes nothing. JSONL holds whole records (feedback, dates, archive state) and
restores them as they were.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .clock import from_iso
from .memories import DEFAULT_NAMESPACE, Memory
from .memories.activity_repository import ActivityDay

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = [
    "ParsedMemory",
    "ImportReport",
    "parse_markdown",
    "import_markdown",
    "import_jsonl",
    "export_jsonl",
    "export_markdown",
    "markdown_files",
]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_TAGS = re.compile(r"\s*\(tags?:\s*([^)]*)\)\s*$", re.IGNORECASE)
_ACTIVITY_FIELDS = {"day", "accesses", "reinforcements", "demotions", "score_delta"}
_DAILY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class ParsedMemory:
    text: str
    category: str | None = None
    tags: tuple[str, ...] = ()


@dataclass
class ImportReport:
    """What an import did, file by file."""

    created: int = 0
    unchanged: int = 0
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"imported {self.created} new, {self.unchanged} already present, from {len(self.files)} file(s)"
        if self.errors:
            text += "; " + "; ".join(f"{path}: {reason}" for path, reason in self.errors)
        return text


def parse_markdown(text: str) -> list[ParsedMemory]:
    """Split a flat Markdown memory file into discrete memories (see the module docstring)."""
    text = _COMMENT.sub("", text)
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        for end in range(1, len(lines)):
            if lines[end].strip() == "---":
                lines = lines[end + 1 :]
                break
    out: list[ParsedMemory] = []
    category: str | None = None
    block: list[str] = []
    in_item = False
    in_fence = False

    def flush() -> None:
        nonlocal block, in_item
        body = "\n".join(line.rstrip() for line in block).strip()
        block, in_item = [], False
        if not body:
            return
        tags: tuple[str, ...] = ()
        match = _TAGS.search(body)
        if match:
            tags = tuple(t.strip() for t in match.group(1).split(",") if t.strip())
            body = body[: match.start()].rstrip()
        if body:
            out.append(ParsedMemory(body, category, tags))

    for line in lines:
        if line.strip().startswith("```"):
            in_fence = not in_fence
            block.append(line)
            continue
        if in_fence:
            block.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            category = heading.group(2).strip() or None
            continue
        item = _ITEM.match(line)
        if item and len(item.group(1)) < 2:  # a top-level list item starts a new memory
            flush()
            block = [item.group(2)]
            in_item = True
            continue
        if not line.strip():
            flush()
            continue
        if in_item and not line.startswith((" ", "\t")) and block and not _ITEM.match(line):
            flush()
        block.append(line.strip() if in_item else line)
    flush()
    return out


def markdown_files(paths: Iterable[str | Path]) -> list[Path]:
    """The Markdown files named, with folders expanded to ``MEMORY.md`` and ``memory/*.md``-style files."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.md") if p.is_file()))
        elif path.exists():
            found.append(path)
        else:
            raise FileNotFoundError(f"{path} does not exist")
    return found


def _import_id(namespace: str, text: str) -> str:
    digest = hashlib.sha1(f"{namespace}\x1f{' '.join(text.split()).casefold()}".encode()).hexdigest()
    return "md-" + digest[:16]


def import_markdown(
    store: MemoryStore,
    paths: Iterable[str | Path],
    *,
    namespace: str = DEFAULT_NAMESPACE,
    source: str = "migration",
) -> ImportReport:
    """Import flat Markdown memory files (seed 002's migration); re-importing changes nothing."""
    report = ImportReport()
    for path in markdown_files(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            report.errors.append((str(path), str(exc)))
            continue
        daily = _DAILY.match(path.name)
        created = datetime(int(daily[1]), int(daily[2]), int(daily[3]), tzinfo=timezone.utc) if daily else None
        report.files.append(str(path))
        items = parse_markdown(text)
        with store.transaction():
            for item in items:
                memory_id = _import_id(namespace, item.text)
                if store.get_many([memory_id]):
                    report.unchanged += 1
                    continue
                store.add(item.text, id=memory_id, namespace=namespace, category=item.category, tags=list(item.tags),
                          source=source, metadata={"imported_from": path.name}, created_at=created)
                report.created += 1
    return report


def export_jsonl(store: MemoryStore, out: IO[str], *, namespace: str | None = None,
                 include_archive: bool = True) -> int:
    """Write one JSON object per memory (archived ones with ``archived_at``, and the days of access and
    feedback the inspector charts as ``activity``); return the count."""
    count = 0
    activity: dict[str, dict[str, list[ActivityDay]]] = {}  # namespace -> memory id -> days
    for memory in _all_memories(store, namespace, include_archive):
        if memory.namespace not in activity:
            with store.kernel.session():
                activity[memory.namespace] = store.kernel.memories.activity.by_memory(memory.namespace)
        record = memory.to_dict()
        days = activity[memory.namespace].get(memory.id)
        if days:
            record["activity"] = [asdict(day) for day in days]
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def _activity(raw: object) -> list[ActivityDay]:
    """A backup's ``activity`` list, checked: days as YYYY-MM-DD and counts as numbers."""
    if not isinstance(raw, list):
        raise ValueError("'activity' must be a list of days")
    days = []
    for entry in raw:
        if not isinstance(entry, dict) or set(entry) != _ACTIVITY_FIELDS:
            raise ValueError(f"each activity day must have exactly {sorted(_ACTIVITY_FIELDS)}")
        day = date.fromisoformat(str(entry["day"])).isoformat()
        accesses, reinforcements, demotions = (entry[k] for k in ("accesses", "reinforcements", "demotions"))
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                   for c in (accesses, reinforcements, demotions)) \
                or isinstance(entry["score_delta"], bool) or not isinstance(entry["score_delta"], (int, float)):
            raise ValueError(f"activity of {day}: counts must be whole numbers of 0 or more, score_delta a number")
        days.append(ActivityDay(day, accesses, reinforcements, demotions, float(entry["score_delta"])))
    return days


def import_jsonl(store: MemoryStore, lines: Iterable[str]) -> ImportReport:
    """Restore records written by :func:`export_jsonl`; ids that already exist are left alone."""
    report = ImportReport(files=["<jsonl>"])
    fields = set(Memory.__dataclass_fields__) - {"rowid"}
    timestamps = {"created_at", "updated_at", "last_hit_at", "last_access_at", "expires_at", "valid_from",
                  "valid_to", "embedded_at", "archived_at"}
    records: list[tuple[Memory, list[ActivityDay]]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict) or "id" not in data or "text" not in data:
                raise ValueError("each line must be an object with at least 'id' and 'text'")
            activity = _activity(data.pop("activity")) if "activity" in data else []
            unknown = set(data) - fields
            if unknown:
                raise ValueError(f"unknown fields {sorted(unknown)}")
            for key in timestamps & set(data):
                data[key] = from_iso(data[key])
            records.append((Memory(**data), activity))
        except (ValueError, TypeError) as exc:
            report.errors.append((f"line {number}", str(exc)))
    with store.transaction():
        for memory, activity in records:
            if store.get_many([memory.id]) or _archived(store, memory.id):
                report.unchanged += 1
                continue
            vector = store.embed([memory.text])[0]
            store.kernel.memories.insert_full(memory, vector)
            store.kernel.memories.activity.restore(memory.id, memory.namespace, activity)
            if memory.archived_at is not None:
                row = store.kernel.memories.get_row(memory.id)
                assert row is not None
                store.kernel.archive.move([row.rowid], memory.archive_reason or "imported")
            report.created += 1
    return report


def export_markdown(store: MemoryStore, out: IO[str], *, namespace: str | None = None) -> int:
    """A readable Markdown file per namespace section, grouped by category; re-importable."""
    count = 0
    by_namespace: dict[str, dict[str | None, list[Memory]]] = {}
    for memory in _all_memories(store, namespace, include_archive=False):
        by_namespace.setdefault(memory.namespace, {}).setdefault(memory.category, []).append(memory)
    for ns, categories in by_namespace.items():
        out.write(f"# Memories: {ns}\n\n")
        for category in sorted(categories, key=lambda c: (c is not None, c or "")):
            out.write(f"## {category or 'Uncategorised'}\n\n")
            for memory in categories[category]:
                text = memory.text.replace("\n", "\n  ")
                tags = f" (tags: {', '.join(memory.tags)})" if memory.tags else ""
                out.write(f"- {text}{tags}\n")
                count += 1
            out.write("\n")
    return count


def _all_memories(store: MemoryStore, namespace: str | None, include_archive: bool) -> Iterator[Memory]:
    namespaces = [namespace] if namespace is not None else list(store.namespaces())
    for ns in namespaces:
        yield from store.list(namespace=ns, include_expired=True, include_superseded=True)
    if include_archive:
        from .index.scope import Scope

        scope = Scope(namespaces=(namespace,) if namespace else None, namespace_prefix=None if namespace else "",
                      current_only=False)
        yield from store.kernel.archive.select(scope)


def _archived(store: MemoryStore, memory_id: str) -> bool:
    return store.kernel.archive.get(memory_id) is not None

"""Skill memory (seed 000, layer 5): SKILL.md files plus the effectiveness matrix.

Effectiveness is a running average of the final score per (skill, task category), upserted
after every completed task with the seed's own SQL. ``rank(category)`` orders skills by it.

SKILL.md files live under ``<data dir>/skills/{managed,proposed,user}/`` (seed 000's
layout: installed, auto-proposed from usage patterns, user-written). :meth:`Skills.sync`
finds them, indexes each as a memory of kind ``"skill"`` (its id derived from the path, so
a file is never indexed twice), re-indexes a file whose content hash changed, and drops
the entry of a file that is gone. A file may start with a ``---`` front matter giving
``name:`` and ``description:``; otherwise the name is its directory's.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embed import content_hash
from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, check_namespace
from ..memories.service import MemoryService
from .records import SKILL_ORIGINS, SkillFile, SkillRecommendation, SkillScore, SyncReport
from .repository import SkillRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Skills", "parse_skill_file"]

logger = logging.getLogger("openkoi.skills")


class Skills:
    """``store.skills``: effectiveness per (skill, category), and the SKILL.md files."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = SkillRepository(kernel.backend)
        self._signatures: dict[str, tuple[Any, ...]] = {}  # namespace -> files' (path, mtime, size) at last sync

    @property
    def root(self) -> Path:
        """``<data dir>/skills``."""
        return Path(self.kernel.data_dir) / "skills"

    # -- effectiveness ------------------------------------------------------------------------

    def record(self, skill_name: str, category: str, score: float, *, namespace: str = DEFAULT_NAMESPACE) -> SkillScore:
        """Fold one task's score into the running average for (skill, category) (seed 000's SQL)."""
        skill_name, category = _name(skill_name, "skill_name"), _name(category, "category")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
            raise ValueError(f"score must be a number between 0 and 1, got {score!r}")
        with self.kernel.session(write=True):
            self._repo.fold_score(check_namespace(namespace), skill_name, category, float(score),
                                  self.kernel.clock.now())
        return self.get(skill_name, category, namespace=namespace)

    def get(self, skill_name: str, category: str, *, namespace: str = DEFAULT_NAMESPACE) -> SkillScore:
        with self.kernel.session():
            score = self._repo.score(namespace, skill_name, category)
        if score is None:
            raise NotFoundError(f"no effectiveness record for skill {skill_name!r} in category {category!r}")
        return score

    def rank(
        self, category: str, *, namespace: str = DEFAULT_NAMESPACE, limit: int | None = None, min_samples: int = 1
    ) -> list[SkillScore]:
        """Skills for a task category, best average score first (more samples break ties)."""
        with self.kernel.session():
            rows = self._repo.ranked(check_namespace(namespace), category, int(min_samples))
        return rows[:limit] if limit is not None else rows

    # -- SKILL.md files -----------------------------------------------------------------------

    def sync(self, *, namespace: str = DEFAULT_NAMESPACE) -> SyncReport:
        """Index new and changed SKILL.md files, drop entries of deleted ones."""
        check_namespace(namespace)
        report = SyncReport()
        memories = self.kernel.service(MemoryService)
        found: dict[str, tuple[str, str, str, str]] = {}  # id -> (text, name, origin, relative path)
        for origin in SKILL_ORIGINS:
            folder = self.root / origin
            if not folder.is_dir():
                continue
            for path in sorted(folder.rglob("SKILL.md")):
                relative = path.relative_to(self.root).as_posix()
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    logger.warning("skipping %s: %s", path, exc)
                    report.skipped.append(relative)
                    continue
                if not text.strip() or "\x00" in text:
                    report.skipped.append(relative)
                    continue
                name, _ = parse_skill_file(text, default_name=path.parent.name if path.parent != folder else origin)
                found[_skill_id(namespace, relative)] = (text, name, origin, relative)
        with self.kernel.session():
            existing = {m.id: m for m in memories.list(namespace=namespace, kind="skill", include_expired=True,
                                                       where={"skill_path": {"$exists": True}})}
            for skill_id, (text, name, origin, relative) in found.items():
                old = existing.get(skill_id)
                if old is not None and old.content_hash == content_hash(text) and old.metadata.get("name") == name:
                    report.unchanged += 1
                    continue
                _, description = parse_skill_file(text, default_name=name)
                memories.add(
                    text, id=skill_id, kind="skill", namespace=namespace, source=f"skills/{origin}",
                    tags=[origin, name], dedup=False,
                    metadata={"name": name, "origin": origin, "skill_path": relative, "description": description},
                )
                (report.updated if old is not None else report.added).append(name)
            gone = [m for skill_id, m in existing.items() if skill_id not in found]
            if gone:
                memories.delete([m.id for m in gone], missing_ok=True)
                report.removed.extend(m.metadata.get("name", m.id) for m in gone)
        return report

    def sync_if_changed(self, *, namespace: str = DEFAULT_NAMESPACE) -> SyncReport | None:
        """:meth:`sync` unless no SKILL.md was added, removed or touched since this store's last sync."""
        signature = self._signature()
        if self._signatures.get(namespace) == signature:
            return None
        report = self.sync(namespace=namespace)
        self._signatures[namespace] = signature
        return report

    def _signature(self) -> tuple[Any, ...]:
        entries = []
        for origin in SKILL_ORIGINS:
            folder = self.root / origin
            if folder.is_dir():
                for path in folder.rglob("SKILL.md"):
                    try:
                        stat = path.stat()
                    except OSError:
                        continue
                    entries.append((str(path), stat.st_mtime_ns, stat.st_size))
        return tuple(sorted(entries))

    def files(self, *, namespace: str = DEFAULT_NAMESPACE, origin: str | None = None) -> list[SkillFile]:
        """The indexed SKILL.md files (after :meth:`sync`)."""
        where: dict[str, Any] = {"skill_path": {"$exists": True}}
        if origin is not None:
            if origin not in SKILL_ORIGINS:
                raise ValueError(f"origin must be one of {', '.join(SKILL_ORIGINS)}, got {origin!r}")
            where["origin"] = origin
        memories = self.kernel.service(MemoryService).list(namespace=namespace, kind="skill", where=where,
                                                           order_by="id")
        return [_skill_file(m) for m in memories]

    def recommend(
        self,
        task_description: str,
        *,
        category: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        limit: int = 3,
        include_proposed: bool = False,
    ) -> list[SkillRecommendation]:
        """Skills for a task: the category's best by average score, then SKILL.md files that match
        the description (proposed skills only when asked: they await review)."""
        if limit <= 0:
            return []
        files = {f.name: f for f in self.files(namespace=namespace)
                 if include_proposed or f.origin != "proposed"}
        out: dict[str, SkillRecommendation] = {}
        if category is not None:
            for score in self.rank(category, namespace=namespace):
                skill_file = files.get(score.skill_name)
                out[score.skill_name] = SkillRecommendation(
                    score.skill_name, skill_file.description if skill_file else "", score.avg_score,
                    score.sample_count, category, skill_file.id if skill_file else None,
                )
                if len(out) >= limit:
                    return list(out.values())
        if task_description and task_description.strip() and files:
            hits = self.kernel.service(MemoryService).search(
                task_description, kind="skill", namespace=namespace, limit=limit * 3, track_access=False,
                where={"skill_path": {"$exists": True}})
            for hit in hits:
                skill_file = _skill_file(hit.memory)
                if skill_file.name in out or skill_file.name not in files:
                    continue
                out[skill_file.name] = SkillRecommendation(skill_file.name, skill_file.description, id=skill_file.id)
                if len(out) >= limit:
                    break
        return list(out.values())[:limit]

    def erase(self, namespace: str) -> None:
        """Remove the namespace's rows (``erase_namespace``)."""
        self._repo.erase(namespace)


def parse_skill_file(text: str, *, default_name: str) -> tuple[str, str]:
    """(name, description) from a SKILL.md: the ``---`` front matter's ``name:`` and ``description:``;
    without them, ``default_name`` and the first paragraph after any heading."""
    name, description = "", ""
    lines = text.splitlines()
    body_start = 0
    if lines and lines[0].strip() == "---":
        for i, line in enumerate(lines[1:], 1):
            if line.strip() == "---":
                body_start = i + 1
                break
            key, sep, value = line.partition(":")
            if not sep:
                continue
            value = value.strip().strip("'\"")
            if key.strip().lower() == "name":
                name = value
            elif key.strip().lower() == "description":
                description = value
    for line in lines[body_start:]:
        stripped = line.strip()
        if not stripped:
            if description:
                break
            continue
        if stripped.startswith("#"):
            continue
        if not description:
            description = stripped
        elif not stripped.startswith(("-", "*", "|", "```")) and len(description) < 200:
            description += " " + stripped
        else:
            break
    return (name or default_name).strip(), description.strip()


def _skill_file(memory: Any) -> SkillFile:
    meta = memory.metadata
    return SkillFile(memory.id, meta.get("name", memory.id), meta.get("origin", ""), meta.get("skill_path", ""),
                     meta.get("description", ""))


def _skill_id(namespace: str, relative: str) -> str:
    return "skill-" + hashlib.sha1(f"{namespace}\x00{relative}".encode()).hexdigest()[:16]


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()

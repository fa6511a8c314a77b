"""A workspace folder (seed 004): the agent's human-readable memory, as Markdown files.

======================== ============================================= ==========================
file                     what                                          used
======================== ============================================= ==========================
AGENTS.md                fleet-wide agent descriptions                 system prompt (addendum)
SOUL.md                  the agent's personality and instructions      system prompt (addendum)
USER.md                  the user's preferences and context            system prompt (addendum)
MEMORY.md                curated long-term facts                       searched; compaction appends
HEARTBEAT.md             autonomous monitoring rules                   :meth:`Workspace.read`
memory/YYYY-MM-DD.md     daily session logs                            searched; memory_save appends
learnings/errors.md      tool failures with context                    auto-injected (addendum)
learnings/corrections.md user corrections                              auto-injected (addendum)
======================== ============================================= ==========================

Every ``*.md`` file in the folder is indexed (kind ``workspace``, see :mod:`.index`) and found by
``store.memory_manager.search`` together with the database. Files are plain UTF-8 Markdown;
edit them by hand at any time (the next sync re-indexes what changed). HTML comments are
instructions for people and are never loaded into a prompt or indexed.

Entries this library appends:

* daily log, ``memory/2026-03-02.md``: ``- 09:30 [memory_save] The user's cat is called Miso.``
  under a ``# 2026-03-02`` heading (the day and time in ``workspace.timezone``);
* ``MEMORY.md``: ``## From session trip-1 (2026-03-02)`` then ``- <fact>`` lines, a fact at most
  once in the file;
* learnings files: ``## 2026-03-02 09:30 UTC · <tool>`` then ``- error: ...`` / ``- context:
  ...`` lines (errors), ``- correction: ...`` / ``- instead of: ...`` (corrections).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ..memories.service import MemoryService
from ..tokens import count_tokens
from .index import SyncReport, file_states, sync
from .markdown import has_content, strip_comments

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Workspace", "WorkspaceFile", "LearningsEntry", "WORKSPACE_FILES", "TEMPLATES"]

WORKSPACE_FILES = ("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md", "HEARTBEAT.md")
ERRORS_FILE = "learnings/errors.md"
CORRECTIONS_FILE = "learnings/corrections.md"

TEMPLATES = {
    "AGENTS.md": "# Agents\n\n<!-- Fleet-wide agent descriptions: who does what. Loaded into the system prompt. -->\n",
    "SOUL.md": "# Soul\n\n<!-- This agent's personality and behavioural instructions. Loaded into the system prompt. -->\n",
    "USER.md": "# User\n\n<!-- The user's preferences and context. Loaded into the system prompt. -->\n",
    "MEMORY.md": "# Memory\n\n<!-- Curated long-term facts. Compaction appends the facts it stores; edit freely. -->\n",
    "HEARTBEAT.md": "# Heartbeat\n\n<!-- Autonomous monitoring rules: what to check, how often, whom to tell. -->\n",
    ERRORS_FILE: "# Tool errors\n\n<!-- Tool failures with their context, recorded automatically and shown to the "
                 "agent each session. -->\n",
    CORRECTIONS_FILE: "# Corrections\n\n<!-- The user's corrections, recorded automatically and shown to the agent "
                      "each session. -->\n",
}

@dataclass(frozen=True)
class WorkspaceFile:
    """A file's text as loaded for a prompt (comments removed) and its token count."""

    name: str
    text: str
    tokens: int


@dataclass(frozen=True)
class LearningsEntry:
    """One entry of a learnings file: its heading and its ``- key: value`` lines."""

    file: str
    heading: str
    lines: tuple[str, ...]

    def render(self) -> str:
        """One prompt line: ``- <heading>: <line>; <line>``."""
        body = "; ".join(line.removeprefix("- ").strip() for line in self.lines if line.strip())
        return f"- {self.heading}: {body}" if body else f"- {self.heading}"


class Workspace:
    """One namespace's workspace folder. Get it from ``store.memory_manager.workspace(namespace)``."""

    def __init__(self, kernel: Kernel, namespace: str, path: Path) -> None:
        self.kernel = kernel
        self.namespace = namespace
        self.path = path
        self._cfg = kernel.config.workspace

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r}, namespace={self.namespace!r})"

    # -- paths ---------------------------------------------------------------------------------

    def file(self, name: str) -> Path:
        """The path of a file of the workspace (``name`` relative, ``/``-separated, inside the folder)."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a workspace file name must be a non-empty relative path such as 'MEMORY.md'")
        rel = PurePosixPath(name.replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"workspace file names are relative paths inside the folder, got {name!r}")
        return self.path.joinpath(*rel.parts)

    def daily_log(self, when: datetime | None = None) -> str:
        """The relative name of the daily log of ``when`` (default now): ``memory/YYYY-MM-DD.md``."""
        local = (when or self.kernel.clock.now()).astimezone(ZoneInfo(self._cfg.timezone))
        return f"{self._cfg.daily_dir}/{local:%Y-%m-%d}.md"

    def markdown_files(self) -> list[str]:
        """Every ``*.md`` file in the folder, as sorted relative names (hidden folders skipped)."""
        if not self.path.is_dir():
            return []
        out = []
        for root, dirs, files in os.walk(self.path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in files:
                if name.endswith(".md") and not name.startswith("."):
                    out.append(Path(root, name).relative_to(self.path).as_posix())
        return sorted(out)

    # -- reading -------------------------------------------------------------------------------

    def read(self, name: str) -> str:
        """A file's text ("" when it does not exist)."""
        path = self.file(name)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        except UnicodeDecodeError:
            raise ValueError(f"{path} is not UTF-8 text; save it as UTF-8") from None

    def system_files(self) -> list[WorkspaceFile]:
        """The files loaded into the system prompt (``workspace.system_files``: AGENTS, SOUL, USER) that say something."""
        out = []
        for name in self._cfg.system_files:
            text = self.read(name)
            if has_content(text):
                body = strip_comments(text)
                out.append(WorkspaceFile(name, body, count_tokens(body)))
        return out

    def heartbeat(self) -> str:
        """HEARTBEAT.md without comments: the autonomous monitoring rules."""
        return strip_comments(self.read("HEARTBEAT.md"))

    def learnings(self, name: str, *, limit: int | None = None) -> list[LearningsEntry]:
        """The entries of a learnings file, newest first (the file is appended to, so from the end)."""
        entries: list[LearningsEntry] = []
        heading: str | None = None
        lines: list[str] = []
        for line in strip_comments(self.read(name)).splitlines():
            if line.startswith("## "):
                if heading is not None:
                    entries.append(LearningsEntry(name, heading, tuple(lines)))
                heading, lines = line[3:].strip(), []
            elif heading is not None and line.strip():
                lines.append(line.strip())
        if heading is not None:
            entries.append(LearningsEntry(name, heading, tuple(lines)))
        entries.reverse()
        return entries if limit is None else entries[:limit]

    # -- writing -------------------------------------------------------------------------------

    def init(self, *, overwrite: bool = False) -> list[str]:
        """Make the folder and the missing files from short templates; return the files written."""
        written = []
        for name, template in TEMPLATES.items():
            path = self.file(name)
            if path.exists() and not overwrite:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template, encoding="utf-8")
            written.append(name)
        (self.path / self._cfg.daily_dir).mkdir(parents=True, exist_ok=True)
        return written

    def append(self, name: str, text: str, *, header: str | None = None) -> tuple[Path, int]:
        """Append ``text`` to a file (created, with ``header`` first, if missing); return (path, size before).

        The size before lets a caller whose database write fails cut the file back.
        """
        path = self.file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            before = path.stat().st_size
        except FileNotFoundError:
            before = 0
        with open(path, "a", encoding="utf-8", newline="\n") as handle:
            if before == 0 and header:
                handle.write(header)
            elif before > 0 and not _ends_with_newline(path, before):
                handle.write("\n")
            handle.write(text)
            handle.flush()
        return path, before

    def size(self, name: str) -> int | None:
        """A file's size in bytes, or None when it does not exist."""
        try:
            return self.file(name).stat().st_size
        except FileNotFoundError:
            return None

    def restore_size(self, name: str, size: int | None) -> None:
        """Undo appends: cut a file back to ``size`` bytes, or remove it when it did not exist (``None``)."""
        path = self.file(name)
        if size is None:
            path.unlink(missing_ok=True)
            return
        current = self.size(name)
        if current is not None and current > size:
            with open(path, "r+b") as handle:
                handle.truncate(size)

    def log(self, text: str, *, tag: str = "note", when: datetime | None = None) -> tuple[str, int]:
        """Append ``- HH:MM [tag] text`` to the day's log; return (relative name, size before)."""
        line = " ".join(_one_line(text).split())
        if not line:
            raise ValueError("a daily-log entry needs some text")
        moment = (when or self.kernel.clock.now()).astimezone(ZoneInfo(self._cfg.timezone))
        name = self.daily_log(moment)
        _, before = self.append(name, f"- {moment:%H:%M} [{tag}] {line}\n", header=f"# {moment:%Y-%m-%d}\n\n")
        return name, before

    def append_memory(self, facts: Iterable[str], *, heading: str) -> int:
        """Append facts to MEMORY.md under ``## heading``, each at most once in the file; return how many."""
        current = self.read("MEMORY.md")
        existing = {line.removeprefix("- ").strip() for line in current.splitlines() if line.startswith("- ")}
        headings = [line[3:].strip() for line in current.splitlines() if line.startswith("## ")]
        new = []
        for fact in facts:
            text = " ".join(_one_line(fact).split())
            if text and text not in existing and text not in new:
                new.append(text)
        if new:
            title = _one_line(heading)
            lines = "".join(f"- {f}\n" for f in new)
            same_section = bool(headings) and headings[-1] == title and current.rstrip().endswith(
                tuple(f"- {line}" for line in existing) or ("\0",))
            self.append("MEMORY.md", lines if same_section else f"\n## {title}\n\n{lines}",
                        header=TEMPLATES["MEMORY.md"])
        return len(new)

    def add_learnings_entry(self, name: str, heading: str, lines: Sequence[tuple[str, str]]) -> tuple[str, int]:
        """Append ``## heading`` and ``- key: value`` lines to a learnings file; return (name, size before)."""
        body = "".join(f"- {key}: {' '.join(_one_line(value).split())}\n" for key, value in lines if value)
        _, before = self.append(name, f"\n## {_one_line(heading)}\n{body}", header=TEMPLATES.get(name))
        return name, before

    # -- the index -----------------------------------------------------------------------------

    def sync(self) -> SyncReport:
        """Re-index what changed on disk (see :mod:`.index`)."""
        return sync(self)

    def search(self, query: str, *, limit: int = 5, sync_first: bool | None = None) -> Any:
        """Workspace chunks matching ``query`` (hybrid search over kind ``workspace``)."""
        if self._cfg.auto_sync if sync_first is None else sync_first:
            self.sync()
        return self.kernel.service(MemoryService).search(query, kind="workspace", namespace=self.namespace,
                                                          limit=limit)

    def status(self) -> list[dict[str, Any]]:
        """Each known file: name, size, whether it exists, is indexed, and is up to date."""
        return file_states(self)


def _one_line(text: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"expected text, got {type(text).__name__}")
    return text.replace("\r", " ").replace("\n", " ").strip()


def _ends_with_newline(path: Path, size: int) -> bool:
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        return handle.read(1) == b"\n"

"""Settings of conversations and what feeds a prompt: the context window, conversations, the
workspace and the knowledge base."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from .values import check_range

__all__ = ["ADDENDUM_SHARES", "ContextConfig", "ConversationsConfig", "WorkspaceConfig", "KnowledgeBaseConfig"]

# the prompt addendum's sections, in the order they are filled, with their default shares of the budget
ADDENDUM_SHARES = {
    "system_files": 0.30, "working_summary": 0.15, "salient_facts": 0.10, "known_facts": 0.10, "relevant_facts": 0.15,
    "learnings": 0.20, "episodes": 0.10,
}


@dataclass
class ContextConfig:
    """Working window, compaction presets and the prompt addendum (seeds 000, 001, 004); docs/context.md."""

    working_keep: int = 20  # seed 001
    working_summarize_after: int = 40  # seed 001
    flush_at: float = 0.6  # seed 004: proactive flush at 60 % of the window
    compact_at: float = 0.7  # seed 004: compaction at 70 % of the window
    keep_last: int = 4  # seed 004: summary + the last 4 messages
    summary_tokens: int = 500  # seed 000
    split_ratio: float = 2 / 3  # seed 000: the older two-thirds are compacted, the recent third kept
    window_tokens: int = 200_000  # the model's context window (ours: seed 000's default token budget)
    max_tokens: int = 0  # seed 000's trigger: compact past max_tokens; 0 = compact_at x window_tokens
    preset: str = "openkoi"  # the ContextManager policy when none is named: openkoi | openmotoko | fleet
    message_overhead_tokens: int = 4  # ours: role and separators of one chat message
    keep_system: bool = True  # leading system messages (the agent's prompt) are never compacted
    max_facts: int = 20  # facts kept from one extraction (a model's list is cut to this)
    extract_batch_tokens: int = 8000  # ours: messages per model call when reading a long conversation for facts
    fact_max_chars: int = 300  # longer "facts" are refused (a fact is one sentence)
    # salience (seed 004): ln(1 + accesses) x exp(0.2 x score) x 0.5 ** (days since use / half-life)
    salience_threshold: float = 1.5  # ours: e.g. 4 accesses today (1.61), or 20 a half-life ago (1.52)
    salience_half_life_days: float = 7.0  # ours
    salient_facts: int = 5  # high-salience facts surfaced without a query, at most
    known_facts: int = 10  # the namespace's most salient other facts, always in the prompt (issue 21), at most
    relevant_facts: int = 5  # query-relevant facts (three-tier retrieval), at most
    category_min_results: int = 3  # fewer scoped facts than this: the flat fallback fills up (seed 004)
    max_query_categories: int = 3  # categories searched for one query, at most
    recent_episodes: int = 3  # seed 001: recent episodes (and other sessions' summaries), at most
    learnings_entries: int = 5  # newest entries of each learnings file (seed 004: auto-injected), at most
    # the addendum's budget (default: recall.budget_fraction x recall.task_token_budget, seed 000) is
    # filled in this order, each section first up to its share, then what is left in the same order
    # (a table may name only some sections; the others keep these defaults)
    addendum_shares: dict = field(default_factory=lambda: dict(ADDENDUM_SHARES))

    def __post_init__(self) -> None:
        if self.working_keep < 1 or self.working_summarize_after <= self.working_keep:
            raise ConfigError(
                "context.working_keep must be at least 1 and context.working_summarize_after larger than it "
                f"(seed 001: 20 and 40), got {self.working_keep} and {self.working_summarize_after}"
            )
        if self.summary_tokens < 1:
            raise ConfigError("context.summary_tokens must be at least 1")
        if not 0.0 < self.flush_at <= 1.0 or not 0.0 < self.compact_at <= 1.0:
            raise ConfigError(f"context.flush_at and context.compact_at are fractions of the window in (0, 1], "
                              f"got {self.flush_at} and {self.compact_at} (seed 004: 0.6 and 0.7)")
        if not 0.0 < self.split_ratio < 1.0:
            raise ConfigError(f"context.split_ratio must be between 0 and 1 (seed 000: 2/3), got {self.split_ratio}")
        if self.preset not in {"openkoi", "openmotoko", "fleet"}:
            raise ConfigError(f"context.preset {self.preset!r} is unknown; use openkoi, openmotoko or fleet")
        for name in ("keep_last", "window_tokens", "max_facts", "fact_max_chars", "extract_batch_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"context.{name} must be at least 1, got {getattr(self, name)}")
        for name in ("max_tokens", "message_overhead_tokens", "salient_facts", "known_facts", "relevant_facts",
                     "recent_episodes",
                     "learnings_entries", "category_min_results"):
            if getattr(self, name) < 0:
                raise ConfigError(f"context.{name} must not be negative, got {getattr(self, name)}")
        if self.max_query_categories < 1:
            raise ConfigError("context.max_query_categories must be at least 1")
        if self.salience_threshold < 0 or self.salience_half_life_days <= 0:
            raise ConfigError("context.salience_threshold must be >= 0 and context.salience_half_life_days > 0")
        shares = self.addendum_shares
        if not isinstance(shares, dict) or set(shares) - set(ADDENDUM_SHARES) or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in shares.values()
        ):
            raise ConfigError(f"context.addendum_shares takes non-negative shares for {', '.join(ADDENDUM_SHARES)}, "
                              f"got {shares!r}")
        self.addendum_shares = {k: float(shares.get(k, v)) for k, v in ADDENDUM_SHARES.items()}


@dataclass
class ConversationsConfig:
    """Sessions, messages and their transcripts (seeds 000 and 003); see docs/conversations.md."""

    # seed 000 keeps full transcripts as <data dir>/sessions/<session-id>.jsonl. "auto": on for
    # file stores, off for ":memory:" ones (which have no directory of their own) and PostgreSQL
    # ones (shared by machines that would each hold part of a transcript); "on" for a ":memory:"
    # store needs transcript_dir.
    transcripts: str = "auto"  # auto | on | off
    transcript_dir: str = ""  # "" = <store.data_dir>/sessions
    transcript_fsync: bool = False  # fsync each append (survives power loss, not just a killed process)
    embedding_max_chars: int = 8000  # seed 003: Text is cut to at most 8000 characters ...
    embedding_boundary_window: float = 0.25  # ... at a boundary within the final 25 % (seed: "within 75 %")

    def __post_init__(self) -> None:
        if self.transcripts not in {"auto", "on", "off"}:
            raise ConfigError(f"conversations.transcripts {self.transcripts!r} is unknown; use auto, on or off")
        if self.embedding_max_chars < 1:
            raise ConfigError("conversations.embedding_max_chars must be at least 1")
        check_range(self, "embedding_boundary_window", 0.0, 1.0)


@dataclass
class WorkspaceConfig:
    """Seed 004's workspace folder of Markdown files (docs/context.md, "Workspace files")."""

    # "auto": on for file stores (under their data dir), off for ":memory:" stores unless root is set
    enabled: str = "auto"  # auto | on | off
    root: str = ""  # "" = <store.data_dir>/workspaces; a namespace's workspace is <root>/<namespace slug>
    system_files: tuple[str, ...] = ("AGENTS.md", "SOUL.md", "USER.md")  # seed 004: loaded into the system prompt
    learnings_files: tuple[str, ...] = ("learnings/errors.md", "learnings/corrections.md")  # seed 004: auto-injected
    daily_dir: str = "memory"  # seed 004: memory/YYYY-MM-DD.md
    timezone: str = "UTC"  # the day a daily-log entry belongs to is read in this zone
    chunk_chars: int = 1000  # index chunk size (seed 003's 1000 characters, reused)
    auto_sync: bool = True  # build_context() and search() re-index files edited by hand first

    def __post_init__(self) -> None:
        if self.enabled not in {"auto", "on", "off"}:
            raise ConfigError(f"workspace.enabled {self.enabled!r} is unknown; use auto, on or off")
        if self.chunk_chars < 100:
            raise ConfigError(f"workspace.chunk_chars must be at least 100, got {self.chunk_chars}")
        for name in ("system_files", "learnings_files"):
            for item in getattr(self, name):
                if not isinstance(item, str) or not item.endswith(".md") or item.startswith(("/", "..")):
                    raise ConfigError(f"workspace.{name} must list relative .md paths, got {item!r}")
        try:
            from zoneinfo import ZoneInfo

            ZoneInfo(self.timezone)
        except Exception:
            raise ConfigError(f"workspace.timezone {self.timezone!r} is not a known time zone; use e.g. UTC") from None


@dataclass
class KnowledgeBaseConfig:
    """Seed 003's knowledge base."""

    chunk_size: int = 1000  # seed 003: RecursiveCharacterTextSplitter, 1000 characters ...
    chunk_overlap: int = 200  # ... with 200 characters of overlap
    batch_size: int = 1000  # seed 003: chunks inserted in batches of 1000 (rows per transaction)
    default_limit: int = 5  # seed 003: searchKnowledgeBase returns 5 results by default
    similarity_threshold: float = -1.0  # < 0: use the embedder's own recommendation (0.7 for sentence models)
    chunk_unit: str = "characters"  # characters | tokens (chunk_size and chunk_overlap counted in that unit)
    token_encoding: str = "cl100k_base"  # tiktoken encoding for chunk_unit = "tokens" (estimate when unavailable)
    keyword_strength: float = 0.4  # a keyword match below the threshold stays if it holds this share of the query (measured)
    # bounded work per file (docs/knowledge-base.md, "Limits: bounded work per file"): each is checked before parsing or as extraction goes
    max_file_bytes: int = 200 * 2**20  # files larger than this are refused
    max_pages: int = 5000  # PDFs (and iWork previews) with more pages, presentations with more slides, are refused
    max_characters: int = 10_000_000  # documents whose text grows past this are refused
    max_unzipped_bytes: int = 512 * 2**20  # OOXML/iWork zips declaring more than this are refused (zip bombs)
    max_zip_ratio: float = 200.0  # ... and so are members compressed more than this (above 1 MiB)
    max_zip_entries: int = 10_000
    max_part_bytes: int = 64 * 2**20  # one XML part of a zip (uncompressed): a 1M-cell worksheet is ~50 MiB
    max_xml_elements: int = 2_000_000  # XML elements parsed into a tree (~150 bytes of memory each)
    max_paragraphs: int = 200_000  # paragraphs of a Word/PowerPoint file, empty ones too (max_characters / 50)
    max_cells: int = 1_000_000  # cells of a spreadsheet, CSV or table (~max_characters / 10)
    max_pdf_objects: int = 1_000_000  # objects a PDF declares (pypdf reads its whole cross-reference table)
    max_pdf_page_bytes: int = 4 * 2**20  # one PDF page's content, decompressed (pypdf parses ~1 MB/s)
    max_seconds_per_file: float = 120.0  # reading one file, checked between pages, rows and paragraphs

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ConfigError(f"knowledge_base.chunk_size must be at least 1, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"knowledge_base.chunk_overlap must be at least 0 and smaller than chunk_size ({self.chunk_size}), "
                f"got {self.chunk_overlap}"
            )
        if self.chunk_unit not in {"characters", "tokens"}:
            raise ConfigError(f"knowledge_base.chunk_unit {self.chunk_unit!r} is unknown; use characters or tokens")
        if self.batch_size < 1 or self.default_limit < 1:
            raise ConfigError("knowledge_base.batch_size and knowledge_base.default_limit must be at least 1")
        if self.similarity_threshold > 1.0:
            raise ConfigError(
                f"knowledge_base.similarity_threshold is a cosine similarity (at most 1), got {self.similarity_threshold}"
            )
        check_range(self, "keyword_strength", 0.0, 10.0)
        for name in ("max_file_bytes", "max_pages", "max_characters", "max_unzipped_bytes", "max_zip_entries",
                     "max_part_bytes", "max_xml_elements", "max_paragraphs", "max_cells", "max_pdf_objects",
                     "max_pdf_page_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"knowledge_base.{name} must be a positive whole number, got {value!r}")
        if self.max_zip_ratio <= 1:
            raise ConfigError(f"knowledge_base.max_zip_ratio must be above 1, got {self.max_zip_ratio}")
        seconds = self.max_seconds_per_file
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
            raise ConfigError(f"knowledge_base.max_seconds_per_file must be a positive number of seconds, got {seconds!r}")

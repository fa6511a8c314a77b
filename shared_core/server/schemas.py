"""Request and response bodies of the REST API (pydantic models, so the OpenAPI document describes them).

Every field is bounded (lengths, ranges, list sizes, nesting) so that nothing a client sends can
reach the store as something it cannot store, read back or search with: a refusal is a 422 that
names the field and the limit. Nested values (metadata, filters) go through the core's own checks
(:mod:`shared_core.validation`, :func:`shared_core.index.filters.parse_filter`), which walk them
with a loop, never recursion, so a value nested thousands deep is refused, not a ``RecursionError``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .. import validation
from ..index.filters import parse_filter
from ..validation import LIMITS, check_storable

__all__ = [
    "AddOut", "DocumentContentOut", "DocumentOut", "FeedbackIn", "HealthOut", "IngestIn", "IngestOut", "InsightIn",
    "InsightOut", "KnowledgeHitOut", "KnowledgeSearchIn", "MemoryIn", "MemoryOut", "MemoryPatch", "HitOut",
    "NamespaceOut", "EraseOut", "RankedInsightOut", "SearchIn", "SearchOut", "TextDocumentIn", "UsageEventIn", "UsageEventOut",
    "UsagePatternOut", "UsageSummaryOut", "InsightSearchIn", "FavoriteIn", "WeightIn", "Text", "Name",
    "InsightHitOut", "MaintenanceOut", "MAX_JSON_DEPTH", "MAX_FILTER_DEPTH", "MAX_FILTER_CONDITIONS",
    "MAX_SEARCH_WINDOW", "check_json", "check_filter",
]

MAX_JSON_DEPTH = LIMITS.json_depth  # metadata, insight details/timeline: objects and lists inside each other
MAX_FILTER_DEPTH = LIMITS.filter_depth  # $and / $or / $not inside each other
MAX_FILTER_CONDITIONS = LIMITS.filter_conditions
MAX_SEARCH_WINDOW = LIMITS.results  # limit + offset of a search


def _unicode(value: str) -> str:
    """Lone surrogates (valid JSON escapes, invalid text) and NUL cannot be stored: refuse them here."""
    return check_storable(value, "text")


def check_json(value: Any, what: str = "metadata") -> Any:
    """The core's check of a JSON value (depth, size, finite numbers, storable strings and keys)."""
    validation.check_json(value, what)
    return value


def check_filter(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The core's check of a ``where`` filter: its grammar and its limits (nesting, conditions, values)."""
    if spec is not None:
        parse_filter(spec)
    return spec


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    return check_json(value, "metadata")


def _records(value: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return check_json(value, "the list")


Text = Annotated[str, AfterValidator(_unicode)]
Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_unicode)]
Kind = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_\-]{0,63}$", description="A short lowercase kind, e.g. 'fact'.")]
Tag = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_unicode)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Metadata = Annotated[dict[str, Any], AfterValidator(_metadata)]
Records = Annotated[list[dict[str, Any]], Field(max_length=1000), AfterValidator(_records)]
Where = Annotated[dict[str, Any], AfterValidator(check_filter)]
_Body = ConfigDict(extra="forbid")


# -- memories ---------------------------------------------------------------------------------------

class MemoryIn(BaseModel):
    """A memory to add. Ids are assigned by the server; a near-duplicate fact reinforces the one stored."""

    model_config = _Body
    text: Annotated[Text, Field(min_length=1, max_length=100_000)]
    kind: Kind = "fact"
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    category: Name | None = None
    source: Name = "api"
    metadata: Metadata = Field(default_factory=dict, description="JSON object kept with the memory (at most "
                               f"{MAX_JSON_DEPTH} levels deep).")
    importance: Unit | None = None
    confidence: Unit | None = None
    pinned: bool = False
    ttl_seconds: float | None = Field(None, gt=0, le=100 * 365 * 86400, description="Forget after this long.")
    session_id: Name | None = None
    dedup: bool = Field(True, description="Reinforce a stored fact that says the same instead of adding.")


class MemoryPatch(BaseModel):
    """Fields to change (seed 002's update: the score is kept, ``last_hit_at`` refreshed)."""

    model_config = _Body
    text: Annotated[Text, Field(min_length=1, max_length=100_000)] | None = None
    tags: list[Tag] | None = Field(None, max_length=100)
    category: Name | None = None
    metadata: Metadata | None = None
    importance: Unit | None = None
    pinned: bool | None = None


class MemoryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    text: str
    kind: str
    namespace: str
    tags: list[str]
    category: str | None
    source: str | None
    metadata: dict[str, Any]
    importance: float | None
    confidence: float | None
    pinned: bool
    score: float
    access_count: int
    created_at: datetime | None
    updated_at: datetime | None
    last_hit_at: datetime | None
    last_access_at: datetime | None
    expires_at: datetime | None
    superseded_by: str | None
    session_id: str | None
    archived_at: datetime | None = None


class AddOut(BaseModel):
    id: str
    event: Literal["created", "updated", "reinforced", "superseded"] = Field(
        description="created; reinforced (a near-duplicate fact was reinforced instead); superseded (it replaced "
        "an older version of the same fact).")
    memory: MemoryOut


class SearchIn(BaseModel):
    model_config = _Body
    query: Annotated[Text, Field(min_length=1, max_length=10_000)]
    limit: int = Field(10, ge=1, le=100)
    offset: int = Field(0, ge=0, le=MAX_SEARCH_WINDOW - 100, description="limit + offset: at most "
                        f"{MAX_SEARCH_WINDOW} (page through more with a narrower query or filter).")
    kind: list[Kind] | None = Field(None, max_length=50)
    tags: list[Tag] | None = Field(None, max_length=100, description="Any of these tags.")
    category: list[Name] | None = Field(None, max_length=100)
    where: Where | None = Field(None, description="A filter in the core's filter language (docs/search.md): at "
                                f"most {MAX_FILTER_CONDITIONS} conditions, {MAX_FILTER_DEPTH} levels of $and/$or/$not.")
    fusion: Literal["keyword_first", "weighted", "rrf", "keyword", "vector"] | None = None
    include_archive: bool = False
    track_access: bool = Field(True, description="Count this search as an access of what it returns (seed 003).")


class ScorePartsOut(BaseModel):
    bm25: float | None
    keyword: float
    similarity: float | None
    vector: float
    relevance: float
    feedback: float
    recency: float
    days_since_hit: float
    fusion: str


class HitOut(BaseModel):
    id: str
    score: float
    parts: ScorePartsOut
    memory: MemoryOut


class SearchOut(BaseModel):
    query: str
    namespace: str
    hits: list[HitOut]


class FeedbackIn(BaseModel):
    """Seed 002's feedback: reinforce (+3, the memory helped) or demote (-1, wrong or stale)."""

    model_config = _Body
    signal: Literal["reinforce", "demote"]
    weight: float | None = Field(None, gt=0, le=100, description="Instead of the configured +3 / -1.")


class NamespaceOut(BaseModel):
    namespace: str
    memories: int


class EraseOut(BaseModel):
    """What erasing a namespace did (``MemoryStore.erase_namespace``): ``status`` is ``erased``, or
    ``pending`` while another connection's read keeps old pages (``remaining`` says what and why)."""

    namespace: str
    status: str
    complete: bool
    memories: int
    deleted: dict[str, int]
    files: list[str]
    remaining: list[str]
    notes: list[str]


# -- knowledge base ------------------------------------------------------------------------------------

class KnowledgeSearchIn(BaseModel):
    model_config = _Body
    query: Annotated[Text, Field(min_length=1, max_length=10_000)]
    limit: int = Field(5, ge=1, le=100, description="Seed 003: 5 by default.")
    document_ids: list[Name] | None = Field(None, max_length=1000)


class KnowledgeHitOut(BaseModel):
    id: str
    document_id: str
    file_name: str
    chunk_index: int
    text: str
    score: float
    similarity: float | None
    keyword: float
    metadata: dict[str, Any]


class DocumentOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    namespace: str
    file_name: str
    content_type: str
    size_bytes: int
    total_chunks: int
    uploaded_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]


class DocumentContentOut(BaseModel):
    id: str
    file_name: str
    content: str


class TextDocumentIn(BaseModel):
    """Text to keep as a document (seed 003's memory.txt); the same name replaces the earlier text."""

    model_config = _Body
    name: Name
    text: Annotated[Text, Field(min_length=1)]
    metadata: Metadata = Field(default_factory=dict)


class IngestIn(BaseModel):
    """Files or folders on the server, inside its configured documents roots (server.documents_roots)."""

    model_config = _Body
    paths: list[Annotated[Text, Field(min_length=1, max_length=4096)]] = Field(min_length=1, max_length=100)
    recursive: bool = True
    include: list[Annotated[Text, Field(min_length=1, max_length=500)]] | None = Field(None, max_length=50)
    exclude: list[Annotated[Text, Field(min_length=1, max_length=500)]] | None = Field(None, max_length=50)
    force: bool = False


class IngestFailureOut(BaseModel):
    path: str
    reason: str
    message: str


class IngestOut(BaseModel):
    added: list[DocumentOut]
    updated: list[DocumentOut]
    unchanged: list[DocumentOut]
    failed: list[IngestFailureOut]
    chunks: int


# -- insights --------------------------------------------------------------------------------------------

class InsightIn(BaseModel):
    """Add or update an insight (seed 003): the same dedupe key updates the same insight."""

    model_config = _Body
    title: Annotated[Text, Field(min_length=1, max_length=1000)]
    description: Annotated[Text, Field(max_length=100_000)] = ""
    importance: Literal["critical", "high", "medium", "low"] = "medium"
    urgency: Literal["immediate", "urgent", "medium", "low"] = "medium"
    task_label: Name | None = None
    dedupe_key: Name | None = None
    bot_id: Name = "default"
    platform: Name | None = None
    channel: Name | None = None
    details: Records = Field(default_factory=list)
    timeline: Records = Field(default_factory=list)


class InsightOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    namespace: str
    bot_id: str
    dedupe_key: str
    title: str
    description: str
    importance: str
    urgency: str
    details: list[dict[str, Any]]
    timeline: list[dict[str, Any]]
    task_label: str | None
    platform: str | None
    channel: str | None
    favorite: bool
    custom_weight: float
    last_access_at: datetime | None
    created_at: datetime | None
    updated_at: datetime | None


class RankedInsightOut(BaseModel):
    insight: InsightOut
    rank: int
    score: float
    value: dict[str, Any]
    weights: dict[str, Any]


class InsightHitOut(BaseModel):
    insight: InsightOut
    score: float


class InsightSearchIn(BaseModel):
    model_config = _Body
    query: Annotated[Text, Field(min_length=1, max_length=10_000)]
    limit: int = Field(10, ge=1, le=100)


class FavoriteIn(BaseModel):
    model_config = _Body
    on: bool = True


class WeightIn(BaseModel):
    model_config = _Body
    multiplier: float = Field(gt=0, le=5.0, description="The user's customWeightMultiplier (seed 003, capped at 5).")


# -- usage ---------------------------------------------------------------------------------------------------

class UsageEventIn(BaseModel):
    model_config = _Body
    event_type: Name
    description: Annotated[Text, Field(max_length=10_000)] | None = None
    category: Name | None = None
    channel: Name | None = None
    skills: list[Name] = Field(default_factory=list, max_length=100)
    score: float | None = Field(None, ge=0, le=1)


class UsageEventOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    event_type: str
    timestamp: datetime
    day: str
    hour: int
    day_of_week: int
    channel: str | None
    description: str | None
    category: str | None
    skills: list[str]
    score: float | None


class UsagePatternOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    pattern_type: str
    description: str
    frequency: str | None
    trigger: dict[str, Any]
    confidence: float
    sample_count: int
    first_seen: datetime
    last_seen: datetime
    status: str


class UsageSummaryOut(BaseModel):
    namespace: str
    memories: int
    by_kind: dict[str, int]
    accesses: int
    accessed: int
    reinforced: int
    demoted: int
    most_accessed: list[MemoryOut]
    events: int
    events_by_type: dict[str, int]
    patterns: int


# -- server ----------------------------------------------------------------------------------------------------

class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    principal: str
    namespaces: list[str]


class MaintenanceOut(BaseModel):
    schedule: str
    timezone: str
    enabled: bool
    thread_alive: bool
    running: bool
    poll_seconds: float
    next_due: str | None
    last_check: str | None
    last_run: dict[str, Any] | None
    last_recorded_run: dict[str, Any] | None

"""The domains of a memory, one line each: the static registry the kernel builds services from.

Each :class:`~shared_core.kernel.Domain` names the domain (``store.<name>``), the service built
with the kernel on first use, the memory kinds it owns and its hooks (eraser, embedding texts,
closer, what runs when the memory opens). Adding a domain is one package, one line here and one
migration file (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from .archive import Archive
from .context.memory_manager import MemoryManager
from .conversations.service import Conversations
from .documents.knowledge_base import KnowledgeBase
from .episodes import Episodes
from .erasure import Erasure
from .insights import Insights
from .inspection.service import Inspector
from .kernel import Domain
from .kv import KeyValueStore
from .learnings import Learnings
from .lifecycle.forgetting import ForgettingEngine
from .lifecycle.links import LinkGraph
from .lifecycle.maintenance import Maintenance
from .lifecycle.pruning import Pruner
from .memories.facts import Facts
from .memories.service import MemoryService
from .procedures import Procedures
from .recall import Historian
from .skills import Skills
from .tasks import TaskMemory
from .usage import Usage
from .workspace import Workspaces

__all__ = ["DOMAINS"]

DOMAINS: tuple[Domain[Any], ...] = (
    Domain("memories", MemoryService, kinds=("note",)),
    Domain("facts", Facts, kinds=("fact",)),
    Domain("archive", Archive, eraser=Archive.erase),
    Domain("links", LinkGraph, eraser=LinkGraph.erase),
    Domain("episodes", Episodes, kinds=("episode",), eraser=Episodes.erase),
    Domain("procedures", Procedures, kinds=("procedure",), eraser=Procedures.erase),
    Domain("skills", Skills, kinds=("skill",), eraser=Skills.erase),
    Domain("usage", Usage, eraser=Usage.erase),
    Domain("kv", KeyValueStore, eraser=KeyValueStore.erase),
    Domain("learnings", Learnings, kinds=("learning",), eraser=Learnings.erase),
    Domain("tasks", TaskMemory, kinds=("task",), eraser=TaskMemory.erase, closer=TaskMemory.close_all),
    Domain("recall", Historian),
    Domain("insights", Insights, kinds=("insight",), eraser=Insights.erase),
    Domain("conversations", Conversations, kinds=("message", "summary"), eraser=Conversations.erase,
           embedding_texts={"message": Conversations.embedding_text}, on_open=Conversations.check_transcripts),
    Domain("forgetting", ForgettingEngine, eraser=ForgettingEngine.erase),
    Domain("documents", KnowledgeBase, kinds=("document",), eraser=KnowledgeBase.erase),
    Domain("workspaces", Workspaces, kinds=("workspace",), eraser=Workspaces.erase),
    Domain("memory_manager", MemoryManager, eraser=MemoryManager.erase),
    Domain("erasure", Erasure, closer=Erasure.stop_finisher),
    Domain("pruning", Pruner),
    Domain("maintenance", Maintenance),
    Domain("inspector", Inspector),
)

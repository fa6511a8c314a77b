"""Seed 004's workspace: Markdown files beside the database, loaded into prompts and searched.

Reached as ``store.memory_manager.workspace(namespace)``; see docs/context.md.
"""

from .files import (
    TEMPLATES,
    WORKSPACE_FILES,
    LearningsEntry,
    Workspace,
    WorkspaceFile,
    strip_comments,
)
from .index import SyncReport, chunk_markdown

__all__ = [
    "Workspace",
    "WorkspaceFile",
    "LearningsEntry",
    "SyncReport",
    "WORKSPACE_FILES",
    "TEMPLATES",
    "chunk_markdown",
    "strip_comments",
]

"""Seed 004's workspace: Markdown files beside the database, loaded into prompts and searched.

Reached as ``store.memory_manager.workspace(namespace)``; see docs/context.md.
"""

from .files import TEMPLATES, WORKSPACE_FILES, LearningsEntry, Workspace, WorkspaceFile
from .index import SyncReport
from .markdown import chunk_markdown, strip_comments
from .service import Workspaces

__all__ = [
    "Workspace",
    "Workspaces",
    "WorkspaceFile",
    "LearningsEntry",
    "SyncReport",
    "WORKSPACE_FILES",
    "TEMPLATES",
    "chunk_markdown",
    "strip_comments",
]

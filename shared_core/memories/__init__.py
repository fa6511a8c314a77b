"""Memories: the records of the searchable index, and the one place that writes them.

A memory is a row of ``memory_chunks`` (text, kind, namespace, tags, category, source,
metadata, feedback and access counters, validity) with its keyword entry and its vector.
Facts are memories of kind ``fact``; the other domains (learnings, messages, document
chunks, ...) keep structured rows of their own and index their text here with ``owner_id``
pointing back. Every write of row, keyword entry and vector happens in one transaction.

The package: :mod:`.records` (the dataclasses), :mod:`.checks` (argument checks and
filters), :mod:`.repository` (all SQL of ``memory_chunks``), :mod:`.service` (``store.add``,
``store.search`` and the rest), :mod:`.versioning` (the write rule of facts) and :mod:`.facts`
(``store.facts``). Only the records and checks are re-exported here: the services import
most of the library, which imports this package.
"""

from ..namespaces import check_namespace as check_namespace
from .checks import check_kind, expiry, metadata_json, optional_name, scope_for
from .records import COLUMNS as COLUMNS
from .records import (
    DEFAULT_NAMESPACE,
    KINDS,
    AddResult,
    Memory,
    NearFacts,
    NewMemory,
    Prepared,
    new_id,
    new_ids,
)
from .records import SELECT_COLUMNS as SELECT_COLUMNS

__all__ = ["Memory", "NewMemory", "AddResult", "NearFacts", "KINDS", "DEFAULT_NAMESPACE", "Prepared", "scope_for",
           "check_kind", "metadata_json", "optional_name", "expiry", "new_id", "new_ids"]

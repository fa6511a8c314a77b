"""The archive (seed 002): where pruned and compressed memories go instead of being deleted.

Archiving moves rows out of the live index (row, FTS entry and vector) into
``memory_archive``, which has its own FTS5 index: archived memories no longer slow or
clutter everyday search, stay keyword-searchable (``store.search(..., include_archive=True)``
or ``store.archive.search``), and can be restored (re-embedded on the way back).

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     old = store.add("The staging server was retired in 2023")
...     store.archive(old, reason="outdated")
...     [hit.id == old for hit in store.archive.search("staging server")]
1
[True]
"""

from .service import Archive

__all__ = ["Archive"]

"""Task memory (seed 000, layer 2): a task's iteration cycles and findings, flushed on completion.

Reached as ``store.tasks`` (:class:`TaskMemory`); see docs/learning.md.
"""

from .records import TASK_STATUSES, Cycle, Finding, TaskOutcome, TaskRecord
from .service import TaskMemory, TaskRecorder

__all__ = ["TaskMemory", "TaskRecorder", "TaskRecord", "TaskOutcome", "Cycle", "Finding", "TASK_STATUSES"]

"""An example domain, goals, added the way a new domain joins the library: this package (records,
repository, service), one line of the registry (:data:`GOALS`) and one migration file
(``0100_goals.sql``). tests/core/test_adding_a_domain.py opens a store with it; docs/architecture.md
walks through the same steps for a domain inside shared_core."""

from shared_core.kernel import Domain

from .records import Goal
from .service import Goals

__all__ = ["GOALS", "Goal", "Goals", "MIGRATION"]

#: the registry line: the domain's name (``store.goals``), its service, the memory kinds it owns, its eraser
GOALS = Domain("goals", Goals, kinds=("goal",), eraser=Goals.erase)

#: the migration file that creates the domain's table
MIGRATION = "0100_goals.sql"

"""``python -m shared_core.cli``."""

from . import main

main()

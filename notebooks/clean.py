"""Keep the committed notebooks free of outputs.

    python notebooks/clean.py            # strip outputs, execution counts and run metadata in place
    python notebooks/clean.py --check    # only report; exit 1 if a notebook is not clean (tests run this)

Outputs in git go stale the moment the code changes, bloat diffs with images and can leak
local paths; the test suite runs every notebook from a clean state instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent


def problems(nb: nbformat.NotebookNode) -> list[str]:
    """What keeps ``nb`` from being clean, one line per issue."""
    found = []
    for number, cell in enumerate(nb.cells, 1):
        if cell.cell_type == "code":
            if cell.get("outputs"):
                found.append(f"cell {number}: has outputs")
            if cell.get("execution_count") is not None:
                found.append(f"cell {number}: has an execution count")
        if "execution" in cell.get("metadata", {}):
            found.append(f"cell {number}: has execution timing metadata")
    if "widgets" in nb.metadata:
        found.append("notebook: has widget state")
    return found


def clean(nb: nbformat.NotebookNode) -> None:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.get("metadata", {}).pop("execution", None)
    nb.metadata.pop("widgets", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: every notebook here)")
    parser.add_argument("--check", action="store_true", help="report only; exit 1 if any notebook is not clean")
    args = parser.parse_args(argv)
    dirty = 0
    for path in args.paths or sorted(HERE.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        found = problems(nb)
        if not found:
            continue
        dirty += 1
        if args.check:
            print(f"{path}: " + "; ".join(found) + f" (run: python {Path(__file__).name} {path.name})")
        else:
            clean(nb)
            nbformat.write(nb, path)
            print(f"{path}: cleaned")
    return 1 if args.check and dirty else 0


if __name__ == "__main__":
    sys.exit(main())

"""The tree stays lint-clean (ruff, configured in pyproject.toml)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.backend_free


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    paths = [p for p in ("shared_core", "langchain_openkoi", "llama_index_openkoi", "tests", "bench") if (ROOT / p).exists()]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", *paths], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_files_tests_readme_names_exist():
    """tests/README.md lists the suites that span files (the door matrix, isolation): none goes missing."""
    named = re.findall(r"`((?:core|langchain|llama_index|server)/test_\w+\.py)`", (ROOT / "tests" / "README.md").read_text())
    assert len(named) >= 7
    assert [name for name in named if not (ROOT / "tests" / name).is_file()] == []

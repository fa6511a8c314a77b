"""The core and both adapters type-check (mypy, configured in pyproject.toml): the package ships
``py.typed``, so its annotations are a promise to every user's type checker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.backend_free  # the types are the same whatever the database


@pytest.mark.slow
def test_mypy_finds_nothing(tmp_path):
    cache = Path(os.environ.get("OPENKOI_MYPY_CACHE", tmp_path / "mypy_cache"))
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=ROOT,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "Success" in result.stdout and "source files" in result.stdout  # it checked something

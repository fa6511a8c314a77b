"""pyproject.toml builds without setuptools' deprecation warnings, and the wheel carries the package data."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
pytestmark = pytest.mark.backend_free


def test_the_license_is_an_spdx_string_and_the_build_backend_reads_one():
    # the table form ({ text = "MIT" }) stops building after 2027-02-18; setuptools reads the string from 77 on
    # the code is MIT; the static embedder's table is derived from an Apache-2.0 model (its NOTICE ships too)
    assert PYPROJECT["project"]["license"] == "MIT AND Apache-2.0"
    assert set(PYPROJECT["project"]["license-files"]) == {
        "shared_core/embed/data/NOTICE", "shared_core/embed/data/LICENSE-Apache-2.0"}
    (setuptools,) = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert int(re.fullmatch(r"setuptools>=(\d+).*", setuptools).group(1)) >= 77


@pytest.mark.slow
def test_the_wheel_carries_the_static_table_and_its_notice(tmp_path):
    """A wheel built from a copy of the sources holds the table, its directions, NOTICE and licence, and stays small."""
    root = Path(__file__).resolve().parents[1]
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(root / name, source / name)
    for package in ("shared_core", "langchain_openkoi", "llama_index_openkoi"):
        shutil.copytree(root / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in ("minilm-static-256.npz", "minilm-static-256.directions.npy", "NOTICE", "LICENSE-Apache-2.0"):
        assert f"shared_core/embed/data/{data}" in names
    assert wheel.stat().st_size < 12_000_000, wheel.stat().st_size


def test_a_built_wheel_carries_the_inspector_page(tmp_path):
    """The page is package data: a wheel (what pip installs from) holds every file the server serves."""
    import subprocess
    import zipfile

    from shared_core.server.routes.inspector import PAGE_FILES

    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(root), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path)], check=True, timeout=600, capture_output=True)
    (wheel,) = tmp_path.glob("openkoi_memory-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for file_name, _ in PAGE_FILES.values():
        assert f"shared_core/server/static/inspector/{file_name}" in names

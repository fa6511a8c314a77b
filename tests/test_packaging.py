"""pyproject.toml builds without setuptools' deprecation warnings."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_license_is_an_spdx_string_and_the_build_backend_reads_one():
    # the table form ({ text = "MIT" }) stops building after 2027-02-18; setuptools reads the string from 77 on
    assert PYPROJECT["project"]["license"] == "MIT"
    (setuptools,) = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert int(re.fullmatch(r"setuptools>=(\d+).*", setuptools).group(1)) >= 77


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

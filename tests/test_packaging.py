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

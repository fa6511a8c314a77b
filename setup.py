"""The one optional C extension, the near-duplicate check's scan (shared_core/index/_hamming.c).

Everything else about the package is in pyproject.toml. ``optional=True``: without a C
compiler the install still succeeds and shared_core uses numpy for that scan instead.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("shared_core.index._hamming", ["shared_core/index/_hamming.c"], optional=True)])

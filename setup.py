"""The one optional C extension, shared_core/_speedups.c: the hot loops of a single add (see its header).

Everything else about the package is in pyproject.toml. ``optional=True``: without a C
compiler the install still succeeds and shared_core runs the same loops in numpy or Python.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("shared_core._speedups", ["shared_core/_speedups.c"], optional=True)])

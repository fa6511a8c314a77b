"""Loaded by subprocesses of a PostgreSQL test session (tests/pgmode is on their PYTHONPATH).

Once ``shared_core.store`` is imported, ``MemoryStore.open`` paths map to the same schemas
as in the parent process (see harness.py).
"""

import os
import sys

if os.environ.get("OPENKOI_TEST_BACKEND") == "postgres" and os.environ.get("OPENKOI_TEST_PG_URL"):
    import importlib.abc
    import importlib.util

    class _AfterStoreImport(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):  # noqa: ANN001 - importlib's signature
            if name != "shared_core.store":
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            run = loader.exec_module

            def exec_module(module):  # noqa: ANN001
                run(module)
                sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
                sys.path.insert(0, os.path.dirname(__file__))
                from harness import Harness

                Harness(os.environ["OPENKOI_TEST_PG_URL"]).install()

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _AfterStoreImport())

"""The notebooks run top to bottom on a fresh kernel, and are committed without outputs.

Each runs in a temporary directory (its files and ``tempfile`` dirs land there), on the
default hashing embedder, with no network. Their own ``assert`` cells check what they show.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
# the notebooks as users run them, on the embedded default (the calls they make are tested on PostgreSQL
# by the rest of the suite)
pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("notebooks_clean", ROOT / "notebooks" / "clean.py")
clean = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(clean)

REQUIRES = {  # beyond nbclient, ipykernel and matplotlib
    "02_langchain_agent": ["langchain", "langgraph"],
    "03_llamaindex_rag": ["llama_index.core"],
}
PLOTS = {"04_lifecycle": 4, "05_evaluation": 2}  # notebooks that must draw at least this many figures


def test_there_are_notebooks():
    assert [p.stem for p in NOTEBOOKS][:5] == [
        "01_quickstart", "02_langchain_agent", "03_llamaindex_rag", "04_lifecycle", "05_evaluation"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    assert clean.problems(nbformat.read(path, as_version=4)) == []


def test_the_check_finds_outputs_and_clean_removes_them(tmp_path):
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    code = next(cell for cell in nb.cells if cell.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", text="hello")]
    code.execution_count = 3
    path = tmp_path / "dirty.ipynb"
    nbformat.write(nb, path)
    assert clean.main(["--check", str(path)]) == 1
    assert clean.main([str(path)]) == 0
    assert clean.problems(nbformat.read(path, as_version=4)) == []
    assert clean.main(["--check", str(path)]) == 0


def _outputs(nb, mime: str) -> list[str]:
    return [out["data"][mime] for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if mime in out.get("data", {})]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, monkeypatch):
    for module in ["nbclient", "ipykernel", "matplotlib", *REQUIRES.get(path.stem, [])]:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{path.name} needs {module}")
    from nbclient import NotebookClient

    # the kernel is a subprocess: it finds this checkout through PYTHONPATH, and keeps its
    # temporary directories and any default data directory inside tmp_path
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("OPENKOI_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend turns figures into PNGs
    # a cell that hangs: the kernel prints every thread's stack (to this test's captured stderr) before it is stopped
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-stacks.py").write_text(
        "import faulthandler, signal\nfaulthandler.register(signal.SIGUSR1, all_threads=True)\n")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))

    class Client(NotebookClient):
        async def _async_handle_timeout(self, timeout, cell=None):
            with contextlib.suppress(Exception):
                os.kill(self.km.provisioner.pid, signal.SIGUSR1)
                await asyncio.sleep(2)
            return await super()._async_handle_timeout(timeout, cell)

    nb = nbformat.read(path, as_version=4)
    Client(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()

    errors = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
              if out.output_type == "error"]
    assert errors == []
    assert len(_outputs(nb, "image/png")) >= PLOTS.get(path.stem, 0)
    if path.stem == "01_quickstart":
        tables = _outputs(nb, "text/html")
        assert len(tables) >= 5 and all(t.startswith("<table>") and t.endswith("</table>") for t in tables)

"""docs/server.md stays true: its Python examples run, its JSON snippets parse, its tool table is complete."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shared_core.tools import TOOL_SPECS

DOC = Path(__file__).resolve().parents[2] / "docs" / "server.md"
TEXT = DOC.read_text(encoding="utf-8")
PYTHON = [b for b in re.findall(r"```python\n(.*?)```", TEXT, flags=re.DOTALL) if "await " not in b]


def test_the_page_has_runnable_examples():
    assert PYTHON


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(PYTHON[index], f"{DOC.name}[python {index + 1}]", "exec"), {"__name__": "docs_example"})  # noqa: S102
    assert (tmp_path / "tokens.toml").stat().st_mode & 0o077 == 0


def test_config_snippets_are_json_and_every_tool_is_documented():
    snippets = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", TEXT, flags=re.DOTALL) if "mcpServers" in b]
    assert {s["mcpServers"]["openkoi-memory"].get("command", "url") for s in snippets} == {"openkoi-memory", "url"}
    for name in TOOL_SPECS:
        assert f"| `{name}` |" in TEXT, name


def test_the_package_surface():
    import shared_core.server as server

    assert sorted(server.__all__) == server.__all__
    for name in server.__all__:
        assert getattr(server, name) is not None

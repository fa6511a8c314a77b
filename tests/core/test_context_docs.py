"""docs/context.md's worked example runs and says what it shows."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "context.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_worked_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    example = [b for b in BLOCKS if "SystemMessage" not in b]  # the adapter sketch is not a program
    assert len(example) == 6
    namespace: dict = {"__name__": "docs_context_example"}
    for index, block in enumerate(example):
        code = block.replace("~/.local/share/openkoi/openkoi.db", str(tmp_path / "openkoi.db"))
        exec(compile(code, f"{DOC.name}[example {index + 1}]", "exec"), namespace)  # noqa: S102
    store, found = namespace["store"], namespace["found"]
    try:
        facts = {(m.text, m.category) for m in store.list(kind="fact", namespace="user:priya")}
        assert facts == {("The user's name is Priya.", "personal"), ("The user lives in Lisbon.", "location"),
                         ("The user prefers window seats.", "travel"),
                         ("The user's cat is called Whiskerino", "pets")}
        assert found.categories == ("pets", "personal") and found.hits[0].text == "The user's cat is called Whiskerino"
        chat = namespace["chat"]
        assert chat[1]["content"].startswith("[Compacted history]\nFacts:\n- The user's name is Priya.\n")
        assert len(store.memory_manager.compactions("trip-planning", namespace="user:priya")) >= 1
        printed = capsys.readouterr().out
        assert printed.startswith("## USER.md\n# User\n\nPriya, a nurse. Answers should be short.\n\n## Memory\n")
        assert "### Relevant facts\n- The user prefers window seats.\n" in printed
        assert "### Known facts\n- The user's cat is called Whiskerino\n### Relevant facts" in printed
        assert "superseded ['The user is allergic to peanuts.', 'The user is not allergic to peanuts.']\n" in printed
        assert printed.endswith("## Memory\n### Known facts\n- The user is vegetarian.\n- The user lives in Oslo.\n")
        assert "search_flights: error: TimeoutError: no answer after 30 s; context: LIS-HND, April" in printed
        workspace = store.memory_manager.workspace("user:priya")
        assert "- The user lives in Lisbon.\n" in workspace.read("MEMORY.md")
        assert "[memory_save] The user's cat is called Whiskerino" in workspace.read(workspace.daily_log())
    finally:
        store.close()

"""What the notebooks display renders as well-formed HTML tables, with user text escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

EVIL = "<script>alert('x')</script> & <b>bold</b>"
VOID = {"br", "hr", "img", "meta", "link", "input", "col"}


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:] or 'nothing'}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def well_formed(markup: str) -> _Checker:
    """Parse ``markup``; fail unless it is one balanced <table> without script elements."""
    checker = _Checker()
    checker.feed(markup)
    checker.close()
    assert checker.stack == [], f"unclosed {checker.stack}"
    assert markup.startswith("<table") and markup.endswith("</table>")
    assert not re.search(r"<(?![a-zA-Z/])", markup), "a bare '<' in the markup (escape it as &lt;)"
    assert "script" not in checker.tags and "b" not in checker.tags
    return checker


def _text(markup: str) -> str:
    return "".join(well_formed(markup).text)


@pytest.fixture
def evil_store(store):
    store.add(EVIL + " deploys happen on tuesdays", namespace=EVIL, tags=[EVIL], metadata={"k": EVIL})
    store.add("rollbacks need a reviewer", namespace=EVIL)
    return store


def test_search_results_and_hits(evil_store):
    hits = evil_store.search("deploys tuesdays " + EVIL, namespace=EVIL)
    assert "<script>alert" in _text(hits._repr_html_())  # shown as text, not markup
    assert "deploys happen on tuesdays" in _text(hits[0]._repr_html_())
    assert hits[0].explain() in _text(hits[0]._repr_html_())


def test_memory(evil_store):
    memory = evil_store.search("deploys", namespace=EVIL)[0].memory
    text = _text(memory._repr_html_())
    assert EVIL in text and "score" in text and "rowid" not in text
    assert "expires_at" not in text  # unset fields are left out


def test_store_stats(evil_store):
    text = _text(evil_store.stats()._repr_html_())
    assert EVIL in text and evil_store.embedder.name in text


def test_lifecycle_reports(evil_store, clock):
    learning = evil_store.learnings.add("Run the migrations first " + EVIL, "Heuristic", namespace=EVIL)
    clock.advance(weeks=50)
    decay = evil_store.learnings.apply_decay()
    assert decay.pruned_ids == (learning.id,)
    assert "pruned" in _text(decay._repr_html_())

    for i in range(3):
        evil_store.conversations.append("s1", "user", f"chatter {i}", namespace=EVIL, channel="c")
    clock.advance(days=10)
    forgetting = evil_store.forgetting.run(EVIL)
    assert forgetting.compressed == {"short": 3, "mid": 0}
    assert EVIL in _text(forgetting._repr_html_())

    maintenance = evil_store.maintain()
    assert "maintenance" in _text(maintenance._repr_html_())

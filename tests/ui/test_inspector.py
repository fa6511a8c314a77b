"""The inspector in a real headless Chromium: load, search, open a memory, edit it, see the change in a
search; fix things; a token for one namespace sees nothing of another. Each view is photographed."""

from __future__ import annotations

import re

import pytest

from .conftest import ready, shoot
from .seed import ALICE, BOB_SECRET

# the page is the same whatever the database: its routes run on both backends in
# tests/server/test_inspector_routes.py, the inspector's queries in tests/core/test_inspection*.py
pytestmark = pytest.mark.backend_free


def open_as(page, server, token: str, route: str = "/overview", ns: str = ALICE) -> None:
    page.goto(f"{server.base}/#token={token}&ns={ns}")
    ready(page, "overview")
    if route != "/overview":
        page.goto(f"{server.base}/#{route}{'&' if '?' in route else '?'}ns={ns}")
        ready(page, route.strip("/").split("/")[0].split("?")[0])


def test_the_page_loads_without_a_token_and_asks_for_one(page, server):
    page.goto(server.base + "/")
    ready(page, "token")
    assert "token" in page.inner_text("main").lower()
    page.fill("#token-input", server.admin_token)
    page.click("form.token button")
    ready(page, "overview")
    assert "inspector" in page.inner_text("#who")  or "default" in page.inner_text("#who")


def test_the_ui_url_carries_the_token_out_of_the_address_bar(page, server):
    page.goto(server.session_url)
    ready(page, "overview")
    assert "token=" not in page.url
    assert page.input_value("#namespace") == ALICE
    text = page.inner_text("main")
    assert "Overview of" in text and "superseded versions" in text
    assert page.locator(".stat").filter(has_text="documents").inner_text().startswith("1")
    beliefs = page.inner_text("#beliefs")  # what the agent believes about the user, at a glance
    assert "America/New_York" in beliefs and "allergic to peanuts" in beliefs and "Europe/Berlin" not in beliefs
    shoot(page, "overview")


def test_search_explains_each_hit(page, server):
    open_as(page, server, server.admin_token, "/search?q=what%20does%20alice%20drink")
    hits = page.locator("article.hit")
    assert hits.count() >= 1
    first = hits.first
    assert "oolong tea" in first.inner_text()
    # the explanation: four bars and the formula
    assert first.locator("svg.explain g.bar").count() == 4
    assert re.search(r"bm25 .*similarity .*feedback 3\.320 \(score \+6\)", first.locator(".formula").inner_text())
    shoot(page, "search")


def test_filters_narrow_the_search(page, server):
    open_as(page, server, server.admin_token, "/search?q=Alice&kind=note")
    texts = page.locator("article.hit .hit-text").all_inner_texts()
    assert texts == ["Alice is allergic to peanuts"]
    page.goto(f"{server.base}/#/search?q=Alice&tags=work&ns={ALICE}")
    ready(page, "search")
    assert page.locator("article.hit .hit-text").all_inner_texts() == ["Alice works at Northwind as a data engineer"]
    page.goto(f"{server.base}/#/search?q=Alice&until=2026-03-03&ns={ALICE}")  # only the first two days
    ready(page, "search")
    assert page.locator("article.hit .hit-text").all_inner_texts() == []  # Berlin is superseded, tea came on day 3
    page.goto(f"{server.base}/#/search?q=timezone&until=2026-03-03&ns={ALICE}")
    ready(page, "search")
    assert page.locator("article.hit").count() == 0


def test_a_memory_page_shows_why_and_where_from(page, server):
    open_as(page, server, server.admin_token, "/search?q=timezone")
    page.click("article.hit a.memory-link >> nth=0")
    ready(page, "memory")
    assert "America/New_York" in page.inner_text("#memory-text")
    history = page.inner_text("#history")
    assert "Europe/Berlin" in history and "same subject and category" in history
    assert "ses-alice-1" in page.inner_text("main")  # provenance: the session it was said in
    assert page.locator(".curve[data-measure=rank] svg path.curve").count() == 1
    shoot(page, "memory", full_page=True)
    page.click("text=ses-alice-1")
    ready(page, "sessions")
    assert "I moved to New York" in page.inner_text(".transcript")
    shoot(page, "session")


def test_a_memory_page_charts_access_and_feedback_by_day(page, server):
    open_as(page, server, server.admin_token, f"/memory/{server.ids.tea}")
    kept = server.store.inspector.memory(server.ids.tea, ALICE).activity
    assert [a.reinforcements for a in kept if a.reinforcements] == [1, 1]  # reinforced on two days
    chart = page.locator("#activity svg.activity")
    assert chart.locator("g.day").count() == len(kept)
    assert chart.locator("g.day rect.fill").count() == len([a for a in kept if a.accesses])
    assert chart.locator("path.reinforced").count() == 2 and chart.locator("path.demoted").count() == 0
    reinforced_days = [a.day for a in kept if a.reinforcements]
    assert chart.locator("g.day:has(path.reinforced)").evaluate_all(
        "els => els.map(e => e.dataset.day)") == reinforced_days
    legend = page.inner_text("#activity .legend")
    assert f"{sum(a.accesses for a in kept)} access(es)" in legend and "reinforced 2" in legend
    assert "size pruning archives" in page.inner_text("#fate")
    assert page.get_attribute("#fate", "data-decays") == "true"
    shoot(page, "memory-activity", element="#activity")
    page.click("#demote")  # a demotion lands on today's column at once
    page.wait_for_selector("#activity path.demoted")
    today = server.store.inspector.memory(server.ids.tea, ALICE).as_of.date().isoformat()
    assert page.locator(f"#activity g.day[data-day='{today}'] path.demoted").count() == 1
    assert "demoted 1" in page.inner_text("#activity .legend")


def test_a_document_chunk_says_it_never_decays(page, server):
    chunk = server.store.documents.get_chunks(server.ids.document, namespace=ALICE)[0]
    open_as(page, server, server.admin_token, f"/memory/{chunk.id}")
    assert page.get_attribute("#fate", "data-decays") == "false"
    assert page.text_content("#fate h3") == "It does not decay" and "never decays" in page.inner_text("#fate")
    assert "never size-pruned" in page.inner_text(".curve[data-measure=rank]")
    kept = server.store.inspector.memory(chunk.id, ALICE).activity  # searches found it: it has accesses
    assert page.locator("#activity svg.activity g.day").count() == len(kept) > 0


def test_edit_a_memory_and_find_the_change(page, server):
    open_as(page, server, server.admin_token, f"/memory/{server.ids.tea}")
    page.click("#edit")
    page.fill("#edit-text", "Alice prefers jasmine tea over coffee")
    page.click("#save")
    page.wait_for_selector("#memory-text:has-text('jasmine')")
    assert server.store.get(server.ids.tea, namespace=ALICE).text == "Alice prefers jasmine tea over coffee"
    page.goto(f"{server.base}/#/search?q=jasmine&ns={ALICE}")
    ready(page, "search")
    assert "Alice prefers jasmine tea over coffee" in page.locator("article.hit").first.inner_text()
    page.goto(f"{server.base}/#/search?q=oolong&ns={ALICE}")
    ready(page, "search")
    assert "oolong" not in page.inner_text("#results")


def test_fix_a_memory_pin_demote_archive_restore_delete(page, server):
    memory = server.store.add("Alice once mentioned a cat named Miso", namespace=ALICE)
    open_as(page, server, server.admin_token, f"/memory/{memory}")
    page.click("#pin")
    page.wait_for_selector("#pin:text('Unpin')")
    assert server.store.get(memory, namespace=ALICE).pinned
    page.click("#demote")
    page.wait_for_selector("text=-1 (reinforce")
    assert server.store.get(memory, namespace=ALICE).score == -1
    page.click("#archive")
    page.wait_for_selector("#restore")
    assert server.store.archive.get(memory, namespace=ALICE).archive_reason == "manual"
    page.click("#restore")
    page.wait_for_selector("#delete")
    page.click("#delete")
    page.wait_for_selector("#dialog:not([hidden]) #confirm")
    page.click("#cancel")
    assert server.store.get(memory, namespace=ALICE).text.startswith("Alice once")
    page.click("#delete")
    page.click("#confirm")
    ready(page, "search")
    assert server.store.get_many([memory], namespace=ALICE) == []


def test_documents_and_their_chunks(page, server):
    open_as(page, server, server.admin_token, "/documents")
    assert "alice-onboarding.md" in page.inner_text("table.list")
    page.click("table.list a >> nth=0")
    page.wait_for_selector(".chunks")
    assert "leads the data platform team" in page.inner_text(".chunks")
    shoot(page, "document")
    page.click(".chunks a >> nth=0")
    ready(page, "memory")
    assert "alice-onboarding.md" in page.inner_text("main")  # provenance: the document


def test_a_token_for_one_namespace_sees_nothing_of_another(page, server):
    open_as(page, server, server.alice_token)
    options = page.eval_on_selector_all("#namespaces option", "els => els.map(e => e.value)")
    assert options == [ALICE]
    page.goto(f"{server.base}/#/search?q=secret%20project%20Falcon&ns=user:bob")
    ready(page, "search")
    assert "403" in page.inner_text("#error")
    assert BOB_SECRET not in page.content()
    page.goto(f"{server.base}/#/overview?ns=user:bob")
    ready(page, "overview")
    assert "403" in page.inner_text("#error") and BOB_SECRET not in page.content()
    page.goto(f"{server.base}/#/search?q=secret%20project%20Falcon&ns={ALICE}")
    ready(page, "search")
    assert "Falcon" not in page.inner_text("#results")
    # nor one of its memories' pages (text, history, access chart), by its id under either namespace
    bob_memory = next(m.id for m in server.store.list(namespace="user:bob") if m.text == BOB_SECRET)
    for ns, status in (("user:bob", "403"), (ALICE, "404")):
        page.goto(f"{server.base}/#/memory/{bob_memory}?ns={ns}")
        ready(page, "memory")
        assert status in page.inner_text("#error") and BOB_SECRET not in page.content()
        assert page.locator("#activity").count() == 0
    # a restricted token is not told the file's size or what maintenance did in other namespaces
    page.goto(f"{server.base}/#/overview?ns={ALICE}")
    ready(page, "overview")
    assert "file size: for a token of every namespace" in page.inner_text("main")


def test_erase_a_namespace_needs_its_name_typed(page, server):
    server.store.add("Carol likes sailing", namespace="user:carol")
    open_as(page, server, server.admin_token, "/overview", ns="user:carol")
    page.click(".danger-zone summary")
    assert page.is_disabled("#erase-button")
    page.fill("#erase-confirm", "user:caro")
    assert page.is_disabled("#erase-button")
    page.fill("#erase-confirm", "user:carol")
    page.click("#erase-button")
    page.wait_for_selector("text=Erased user:carol")
    assert server.store.count(namespace="user:carol") == 0


def test_openkoi_memory_ui_prints_a_url_that_opens_the_page(page, tmp_path):
    """The command as a user runs it: a free port, a URL with a token made for the run, limited to -n."""
    import os
    import subprocess
    import sys

    from shared_core import MemoryStore

    db = tmp_path / "agent.db"
    with MemoryStore.open(db) as store:
        store.add("Alice prefers oolong tea", namespace=ALICE)
        store.add(BOB_SECRET, namespace="user:bob")
    env = {**os.environ, "OPENKOI_TOKENS": str(tmp_path / "no-tokens.toml")}
    process = subprocess.Popen(
        [sys.executable, "-m", "shared_core.cli", "--db", str(db), "ui", "-n", ALICE],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = process.stdout.readline().strip()  # blocks until the command printed it (or died)
        assert url.startswith("http://127.0.0.1:") and "/#token=okm_" in url, process.stderr.read()
        page.goto(url)
        ready(page, "overview")
        assert "oolong tea" in page.inner_text("#beliefs")
        assert page.eval_on_selector_all("#namespaces option", "els => els.map(e => e.value)") == [ALICE]
        base = url.split("/#")[0]
        page.goto(f"{base}/#/search?q=Falcon&ns=user:bob")
        ready(page, "search")
        assert "403" in page.inner_text("#error") and BOB_SECRET not in page.content()
        assert not (tmp_path / "no-tokens.toml").exists()  # the run's token is written nowhere
    finally:
        process.terminate()
        process.wait(timeout=60)
        process.stdout.close()
        process.stderr.close()


def test_the_docs_show_each_view_the_tests_photograph():
    """docs/images holds one small PNG per view these tests photograph (`make screenshots` remakes them)."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    shot = {node.args[1].value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "shoot"}
    docs = Path(__file__).resolve().parents[2] / "docs"
    images = {p.name for p in (docs / "images").glob("inspector-*.png")}
    assert images == {f"inspector-{name}.png" for name in shot}
    for name in images:
        assert (docs / "images" / name).stat().st_size < 200_000, name
        assert f"images/{name}" in (docs / "inspector.md").read_text(encoding="utf-8")


def test_switching_namespace_shows_that_namespaces_data(page, server):
    open_as(page, server, server.admin_token, "/search?q=coffee")
    assert "Bob drinks" not in page.inner_text("#results")
    page.fill("#namespace", "user:bob")
    page.dispatch_event("#namespace", "change")
    page.wait_for_selector("body[data-state=ready][data-view=search] #search-form")
    page.fill("#query", "coffee")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("article.hit:has-text('Bob drinks his coffee black')")
    assert "user%3Abob" in page.url or "user:bob" in page.url

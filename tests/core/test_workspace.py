"""Part 7: workspace files (seed 004): loaded into prompts, indexed by content hash, written by memory_save."""

from __future__ import annotations

import pytest

from shared_core import ConfigError, MemoryStore
from shared_core.workspace import TEMPLATES, chunk_markdown


@pytest.fixture
def space(file_store):
    return file_store.memory_manager.workspace("default")


def _chunks(store, namespace="default"):
    return store.list(kind="workspace", namespace=namespace)


def test_the_default_folder_is_under_the_data_dir_one_per_namespace(file_store, tmp_path):
    mm = file_store.memory_manager
    assert mm.workspace().path == (tmp_path / "workspaces" / "default").resolve()
    other = mm.workspace("user:priya")
    assert other.path.parent == (tmp_path / "workspaces").resolve() and other.path.name.startswith("user-priya-")
    assert mm.workspace("user:priya") is other
    explicit = mm.workspace("agent-7", path=tmp_path / "agent7")
    assert explicit.path == (tmp_path / "agent7").resolve()
    with pytest.raises(ValueError, match="already the workspace of namespace"):
        mm.workspace("someone-else", path=tmp_path / "agent7")


def test_memory_stores_have_no_workspace_unless_one_is_named(store, tmp_path, clock):
    assert store.memory_manager.workspace() is None  # never writes into the user's real data dir
    assert store.memory_manager.workspace(path=tmp_path / "ws").path == (tmp_path / "ws").resolve()
    with MemoryStore.open(":memory:", clock=clock, config={"workspace": {"root": str(tmp_path / "root")}}) as s:
        assert s.memory_manager.workspace("n").path == (tmp_path / "root" / "n").resolve()
    with MemoryStore.open(":memory:", clock=clock, config={"workspace": {"enabled": "on"}}) as s:
        with pytest.raises(ConfigError, match="workspace.root"):
            s.memory_manager.workspace()
    with MemoryStore.open(tmp_path / "off.db", clock=clock, config={"workspace": {"enabled": "off"}}) as s:
        assert s.memory_manager.workspace() is None


def test_init_writes_the_seed_files_from_templates_once(space):
    written = space.init()
    assert sorted(written) == sorted(TEMPLATES)
    assert (space.path / "memory").is_dir()
    (space.path / "SOUL.md").write_text("# Soul\n\nBe kind and brief.\n", encoding="utf-8")
    assert space.init() == [] and "Be kind" in space.read("SOUL.md")
    with pytest.raises(ValueError, match="inside the folder"):
        space.file("../escape.md")
    with pytest.raises(ValueError, match="relative"):
        space.file("/etc/passwd")


def test_system_files_are_loaded_without_comments_and_empty_templates_are_skipped(space):
    space.init()
    assert space.system_files() == []  # fresh templates say nothing
    (space.path / "SOUL.md").write_text("# Soul\n<!-- for people -->\n\nYou are calm.\n", encoding="utf-8")
    (space.path / "USER.md").write_text("# User\n\nPriya, in Lisbon. Prefers short answers.\n", encoding="utf-8")
    files = space.system_files()
    assert [f.name for f in files] == ["SOUL.md", "USER.md"]
    assert files[0].text == "# Soul\n\nYou are calm." and "for people" not in files[0].text
    (space.path / "HEARTBEAT.md").write_text("# Heartbeat\n\nCheck the backups daily.\n", encoding="utf-8")
    assert space.heartbeat() == "# Heartbeat\n\nCheck the backups daily."


def test_sync_indexes_edits_once_and_forgets_deleted_files(file_store, space):
    space.init()
    (space.path / "MEMORY.md").write_text("# Memory\n\n- The router password hint is in the blue folder.\n",
                                          encoding="utf-8")
    first = space.sync()
    assert "MEMORY.md" in first.indexed and not first.removed
    assert space.sync().indexed == []  # unchanged files are not re-read into the index
    hits = space.search("router blue folder")
    assert hits and hits[0].memory.metadata["path"] == "MEMORY.md" and hits[0].memory.kind == "workspace"
    before = len(_chunks(file_store))
    (space.path / "MEMORY.md").write_text("# Memory\n\n- The router hint moved to the red folder.\n", encoding="utf-8")
    edited = space.sync()
    assert edited.indexed == ["MEMORY.md"] and len(_chunks(file_store)) == before  # replaced, never duplicated
    assert not space.search("blue folder", sync_first=False) or all(
        "blue" not in h.text for h in space.search("blue folder", sync_first=False))
    assert "red folder" in space.search("router red folder")[0].text
    (space.path / "MEMORY.md").unlink()
    gone = space.sync()
    assert gone.removed == ["MEMORY.md"]
    assert not [m for m in _chunks(file_store) if m.owner_id == "MEMORY.md"]
    states = {s["file"]: s for s in space.status()}
    assert "MEMORY.md" not in states and states["SOUL.md"]["current"]


def test_chunks_follow_headings_and_size():
    text = "# A\n\nfirst para\n\n<!-- hidden -->\n\n## B\n\n" + ("word " * 300) + "\n\nlast"
    chunks = chunk_markdown(text, size=500)
    assert chunks[0] == ("# A\n\nfirst para", "A")
    assert all(len(c) <= 500 for c, _ in chunks) and all(h == "B" for _, h in chunks[1:])
    assert "hidden" not in "".join(c for c, _ in chunks) and chunks[-1][0].endswith("last")


def test_memory_save_writes_the_daily_log_and_the_database(file_store, space, clock):
    clock.set("2026-03-02T09:30:00Z")
    saved = file_store.memory_manager.memory_save("The user's cat is called Whiskerino", category="pets",
                                                  session_id="s1")
    assert saved.event == "created" and saved.daily_log == "memory/2026-03-02.md"
    memory = file_store.get(saved.memory.id)
    assert memory.source == "memory_save" and memory.category == "pets" and memory.session_id == "s1"
    log = space.read("memory/2026-03-02.md")
    assert log == "# 2026-03-02\n\n- 09:30 [memory_save] The user's cat is called Whiskerino\n"
    hits = file_store.memory_manager.search("Whiskerino")
    assert {h.memory.kind for h in hits} == {"fact", "workspace"}  # database and workspace together
    clock.set("2026-03-02T10:00:00Z")
    file_store.memory_manager.memory_save("The user's dog is called Rex")
    assert space.read("memory/2026-03-02.md").count("\n- ") == 2
    assert len([m for m in _chunks(file_store) if m.owner_id == "memory/2026-03-02.md"]) == 1


def test_memory_save_is_all_or_nothing(file_store, space, monkeypatch):
    file_store.memory_manager.memory_save("The user lives in Lisbon")
    name = space.daily_log()
    before = space.read(name)

    monkeypatch.setattr(type(space), "log", lambda self, *a, **k: (_append_then_fail(self, name)))
    with pytest.raises(RuntimeError):
        file_store.memory_manager.memory_save("The user speaks Dutch")
    assert space.read(name) == before  # the line was cut back
    assert not file_store.search("Dutch", kind="fact")  # and the fact rolled back
    monkeypatch.undo()
    with pytest.raises(ValueError, match="empty"):
        file_store.memory_manager.memory_save("   ")


def _append_then_fail(space, name):
    space.append(name, "- 00:00 [memory_save] half written\n")
    raise RuntimeError("disk full after the write")


def test_memory_save_without_a_workspace_goes_to_the_database(store):
    saved = store.memory_manager.memory_save("The user plays the cello")
    assert saved.daily_log is None and store.get(saved.memory.id).category == "hobbies"


def test_tool_errors_and_corrections_are_recorded_and_auto_injected(file_store, space, clock):
    mm = file_store.memory_manager
    learning_id = mm.record_error("search_flights", TimeoutError("no answer in 30 s"), context="LIS on 14 March")
    again = mm.record_error("search_flights", TimeoutError("no answer in 30 s"), context="LIS on 14 March")
    assert again == learning_id  # the same failure reinforces its learning
    learning = file_store.learnings.get(learning_id)
    assert learning.type.value == "AntiPattern" and learning.category == "tool:search_flights"
    assert "TimeoutError: no answer in 30 s" in learning.content
    errors = space.learnings("learnings/errors.md")
    assert len(errors) == 2 and errors[0].heading == "2026-01-01 00:00 UTC · search_flights"
    assert errors[0].render() == "- 2026-01-01 00:00 UTC · search_flights: error: TimeoutError: no answer in 30 s; " \
                                 "context: LIS on 14 March"
    old = file_store.add("The user's name is Priya", category="personal")
    fixed = mm.record_correction("The user's name is Priyanka", wrong="Priya", supersedes=old)
    assert fixed.event == "superseded" and fixed.supersedes == old and fixed.correction
    assert file_store.get(old).superseded_by == fixed.id
    assert file_store.get(fixed.id).source == "correction"
    corrections = space.learnings("learnings/corrections.md")
    assert corrections[0].lines == ("- correction: The user's name is Priyanka", "- instead of: Priya")
    addendum = mm.build_context(None, "flights", 2000)
    text = addendum.render()
    assert "#### Tool errors to avoid (learnings/errors.md)" in text and "no answer in 30 s" in text
    assert "#### Corrections from the user (learnings/corrections.md)" in text and "Priyanka" in text
    with pytest.raises(ValueError, match="tool"):
        mm.record_error(" ", "x")
    with pytest.raises(ValueError, match="corrected"):
        mm.record_correction("")


def test_corrections_found_by_compaction_go_to_the_corrections_file(file_store, space):
    manager = file_store.memory_manager.context_manager("fleet", keep_last=1)
    manager.compact([{"role": "user", "content": "Actually, my sister's name is Ilse."},
                     {"role": "assistant", "content": "Sorry, noted."}], session_id="c", force=True)
    entry = space.learnings("learnings/corrections.md")[0]
    assert entry.lines == ("- correction: The user's sister's name is Ilse.",)


def test_erasing_a_namespace_removes_its_workspace_files_and_rows(file_store, tmp_path):
    mm = file_store.memory_manager
    mine = mm.workspace("user:priya")
    mine.init()
    mm.memory_save("The user lives in Lisbon", namespace="user:priya")
    (mine.path / "notes.txt").write_text("not ours", encoding="utf-8")
    theirs = mm.workspace("user:ana")
    theirs.init()
    file_store.erase_namespace("user:priya")
    assert not list(mine.path.rglob("*.md")) and (mine.path / "notes.txt").exists()
    assert file_store.db.scalar("SELECT count(*) FROM workspace_files WHERE namespace = 'user:priya'") == 0
    assert file_store.db.scalar("SELECT count(*) FROM workspaces WHERE namespace = 'user:priya'") == 0
    assert _chunks(file_store, "user:priya") == []
    assert (theirs.path / "MEMORY.md").exists()


def test_the_one_time_import_is_separate_from_live_workspace_files(file_store, space):
    from shared_core.portability import import_markdown

    space.init()
    (space.path / "MEMORY.md").write_text("# Memory\n\n## Pets\n\n- The cat is called Miso\n", encoding="utf-8")
    space.sync()
    report = import_markdown(file_store, [space.path / "MEMORY.md"])
    assert report.created == 1
    fact = file_store.list(kind="fact")[0]
    assert fact.text == "The cat is called Miso" and fact.source == "migration" and fact.category == "Pets"
    assert len([m for m in _chunks(file_store) if m.owner_id == "MEMORY.md"]) == 1  # still one live file chunk


def test_a_same_size_edit_is_seen_and_a_touch_is_not_a_change(file_store, space):
    import os

    path = space.file("USER.md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# User\n\nLikes tea.\n", encoding="utf-8")
    assert space.sync().indexed == ["USER.md"]
    stamp = path.stat().st_mtime_ns
    path.write_text("# User\n\nLikes rum.\n", encoding="utf-8")  # same size
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    assert space.sync().indexed == ["USER.md"]
    assert "rum" in space.search("rum", sync_first=False)[0].text
    os.utime(path, ns=(stamp + 5 * 10**9, stamp + 5 * 10**9))  # touched only
    touched = space.sync()
    assert touched.indexed == [] and "USER.md" in touched.unchanged
    assert space.sync().unchanged == ["USER.md"]

"""Procedural memory (seed 001): named procedures, ordered steps, triggers, usage."""

from __future__ import annotations

import math

import pytest

from shared_core import HashingEmbedder, MemoryStore, NotFoundError
from shared_core.ranking import procedure_score


def test_add_get_and_render(store):
    proc = store.procedures.add("deploy to production", ["run the tests", "build the image", "fly deploy"],
                                triggers=["deploy", "release to production"], description="The usual release.")
    again = store.procedures.get("deploy to production")
    assert again == proc and store.procedures.get(proc.id) == proc
    assert proc.steps == ("run the tests", "build the image", "fly deploy") and proc.usage_count == 0
    assert proc.render() == ("Procedure: deploy to production\nThe usual release.\nWhen: deploy; release to production\n"
                             "1. run the tests\n2. build the image\n3. fly deploy")
    memory = store.get(proc.id)
    assert memory.kind == "procedure" and memory.owner_id == proc.id and memory.tags == ["deploy", "release to production"]


def test_match_by_trigger_through_the_core_search(clock):
    # the hashing embedder: only the procedure sharing words matches (the static one also finds
    # "rotate credentials" a little like a release, cosine 0.31)
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        _match_by_trigger(store)


def _match_by_trigger(store):
    deploy = store.procedures.add("deploy to production", ["test", "build", "ship"], triggers=["deploy", "release"])
    store.procedures.add("rotate credentials", ["create key", "update secrets", "revoke old key"],
                         triggers=["leaked key", "credential rotation"])
    matches = store.procedures.match("we need to release the new version")
    assert [m.procedure.id for m in matches] == [deploy.id]
    assert store.procedures.match("a leaked key in the logs")[0].procedure.name == "rotate credentials"
    assert store.procedures.match("bake a cake") == []


def test_usage_surfaces_the_most_used(store, clock):
    a = store.procedures.add("deploy the api", ["build", "ship"], triggers=["deploy api"])
    b = store.procedures.add("deploy the web app", ["build", "ship"], triggers=["deploy web"])
    for _ in range(5):
        clock.advance(minutes=1)
        store.procedures.record_use(b.name)
    used = store.procedures.get(b.id)
    assert used.usage_count == 5 and used.last_used == clock.now()
    assert [p.name for p in store.procedures.list()] == ["deploy the web app", "deploy the api"]
    matches = {m.procedure.id: m for m in store.procedures.match("deploy")}
    assert matches[b.id].score == pytest.approx(procedure_score(matches[b.id].relevance, 5, 0.1))
    assert matches[a.id].score == matches[a.id].relevance
    assert procedure_score(1.0, 5, 0.1) == pytest.approx(1 + 0.1 * math.log(6))


def test_same_name_replaces_steps_and_keeps_usage(store):
    first = store.procedures.add("backup", ["dump"], triggers=["backup"])
    store.procedures.record_use("backup")
    second = store.procedures.add("backup", ["dump", "upload", "verify"], triggers=["nightly backup"])
    assert second.id == first.id and second.usage_count == 1 and second.steps == ("dump", "upload", "verify")
    assert len(store.procedures.list()) == 1 and store.count(kind="procedure") == 1
    assert "3. verify" in store.get(first.id).text


def test_delete_namespaces_and_erase(store):
    store.procedures.add("onboard", ["create account"], triggers=["new hire"], namespace="team:a")
    assert store.procedures.list(namespace="team:b") == []
    with pytest.raises(NotFoundError):
        store.procedures.get("onboard")
    store.procedures.delete("onboard", namespace="team:a")
    assert store.procedures.list(namespace="team:a") == [] and store.count(namespace="team:a") == 0
    store.procedures.add("offboard", ["revoke access"], namespace="team:a")
    store.erase_namespace("team:a")
    assert store.db.scalar("SELECT count(*) FROM procedural_memory") == 0


def test_bad_input(store):
    with pytest.raises(ValueError, match="at least one step"):
        store.procedures.add("empty", [])
    with pytest.raises(TypeError, match="list of strings"):
        store.procedures.add("bad", "just one string")
    with pytest.raises(ValueError, match="non-empty"):
        store.procedures.add(" ", ["x"])
    with pytest.raises(ValueError, match="task description"):
        store.procedures.match("")

"""Token-budgeted recall (seed 000): priorities, caps, the budget, the half-budget rule, feedback."""

from __future__ import annotations

import math

import pytest

from shared_core.tokens import count_tokens

ANTI = [
    "Never deploy the payments service on a Friday afternoon.",
    "Do not skip the database migration dry run before a deploy.",
    "Avoid deploying while the error budget is exhausted.",
    "Don't deploy without checking the canary dashboard first.",
    "Never hotfix the deploy pipeline config directly in production.",
    "Do not deploy two services that share a schema at once.",
    "Avoid deploying with feature flags left in an unknown state.",
]
HEURISTICS = [
    "Deploy behind a feature flag and enable it for staff first.",
    "Tag the deploy commit so rollbacks are one command.",
    "Announce the deploy window in the team channel beforehand.",
    "Warm the caches right after a deploy of the API.",
    "Prefer blue-green deploys over in-place restarts for the API.",
    "Keep deploy scripts idempotent so reruns are safe.",
    "Check the deploy metrics fifteen minutes after release.",
]


def _fill(store, namespace="default"):
    for text in ANTI:
        store.learnings.add(text, "AntiPattern", category="deploy", namespace=namespace)
    for i, text in enumerate(HEURISTICS):
        store.learnings.add(text, "Preference" if i == 4 else "Heuristic", category="deploy", namespace=namespace)
    for name, score in [("canary", 0.9), ("rollback", 0.8), ("smoke-tests", 0.7), ("changelog", 0.6)]:
        store.skills.record(name, "deploy", score, namespace=namespace)
    for service in ["billing", "search", "auth", "mailer"]:
        with store.tasks.start(f"Deploy the {service} service to production", category="deploy",
                               namespace=namespace) as task:
            task.cycle(0.9, "accept")
            task.complete()


def test_priorities_and_their_caps(store):
    _fill(store)
    result = store.recall("Deploy the API service to production", category="deploy")
    assert (len(result.anti_patterns), len(result.skills), len(result.learnings), len(result.similar_tasks)) == (
        5, 3, 5, 3)
    assert {i.learning.content for i in result.anti_patterns} <= set(ANTI)
    assert [i.skill.name for i in result.skills] == ["canary", "rollback", "smoke-tests"]
    assert {i.learning.type.value for i in result.learnings} <= {"Heuristic", "Preference"}
    assert all(i.text.startswith("- Task: Deploy the") for i in result.similar_tasks)
    prompt = result.prompt
    order = [prompt.index(h) for h in ("### Avoid", "### Recommended skills", "### Heuristics", "### Similar past")]
    assert order == sorted(order)
    assert result.token_budget == 20_000 and result.tokens_used == sum(i.tokens for i in result.items)
    assert count_tokens(prompt) <= result.tokens_used


def _cost(*lines, title=True):
    return sum(count_tokens(line + "\n") for line in lines) + (count_tokens("## Recalled from memory\n") if title else 0)


def test_a_small_budget_fills_the_highest_priority_first(store):
    _fill(store)
    full = store.recall("Deploy the API service to production", category="deploy")
    first, second = full.anti_patterns[0].text, full.anti_patterns[1].text
    budget = _cost("### Avoid (anti-patterns from past tasks)", first, second)
    small = store.recall("Deploy the API service to production", category="deploy", token_budget=budget)
    assert [i.text for i in small.items] == [first, second]
    assert small.tokens_used == budget and count_tokens(small.prompt) <= budget
    assert small.similar_tasks_skipped


def test_an_item_that_does_not_fit_ends_its_priority_but_not_the_next(store):
    store.learnings.add("Never " + "really " * 60 + "skip the smoke tests after a deploy.", "AntiPattern",
                        category="deploy")
    store.skills.record("canary", "deploy", 0.9)
    budget = _cost("### Recommended skills", "- canary (avg score 0.90 over 1 deploy task)")
    result = store.recall("deploy", category="deploy", token_budget=budget)
    assert result.anti_patterns == [] and [i.skill.name for i in result.skills] == ["canary"]


def test_similar_tasks_need_more_than_half_the_budget_left(store):
    store.learnings.add("Never deploy the payments service on a Friday afternoon.", "AntiPattern", category="deploy")
    with store.tasks.start("Deploy the billing service", category="deploy") as task:
        task.cycle(0.9, "accept")
        task.complete()
    probe = store.recall("deploy the payments service", category="deploy", token_budget=10_000)
    used = probe.tokens_used - sum(i.tokens for i in probe.similar_tasks)
    assert probe.similar_tasks and used > 0
    exactly_half = store.recall("deploy the payments service", category="deploy", token_budget=used * 2)
    assert exactly_half.similar_tasks == [] and exactly_half.similar_tasks_skipped
    more_than_half = store.recall("deploy the payments service", category="deploy", token_budget=used * 2 + 1)
    assert not more_than_half.similar_tasks_skipped


def test_default_budget_is_a_tenth_of_the_task_budget(store):
    assert store.recall("anything").token_budget == 20_000
    assert store.recall("anything", task_token_budget=50_000).token_budget == 5_000
    assert store.recall("anything", token_budget=0).items == []


def test_recall_alone_reinforces_nothing_and_mark_useful_does(store, clock):
    _fill(store)
    result = store.recall("Deploy the API service to production", category="deploy")
    assert all(store.learnings.get(i.id).reinforced == 0 for i in result.anti_patterns)
    clock.advance(days=1)
    useful = result.anti_patterns[0]
    assert store.recall.mark_useful(useful) == 1
    learning = store.learnings.get(useful.id)
    assert learning.reinforced == 1 and learning.last_used == clock.now()
    assert learning.confidence == pytest.approx(0.8 * math.exp(-0.05 / 7) + 0.1)  # a day decayed, then + 0.1
    task_hit = result.similar_tasks[0]
    assert store.recall.mark_useful([task_hit.id, "no-such-id"]) == 1
    assert store.get(task_hit.id).score == 3  # seed 002's reinforce for non-learnings
    assert all(i.id is None for i in result.skills)  # known only from their scores: nothing to reinforce
    assert store.recall.mark_useful(result) == len(set(result.ids)) == 13


def test_recall_tracks_access_of_what_it_returns(store):
    learning = store.learnings.add("Never deploy the payments service on a Friday afternoon.", "AntiPattern")
    store.recall("deploy payments on friday")
    assert store.get(learning.id).access_count == 1


def test_empty_database(store):
    result = store.recall("Write the quarterly report")
    assert not result and result.prompt == "" and result.tokens_used == 0


def test_namespaces_do_not_leak(store):
    _fill(store, namespace="team:a")
    assert not store.recall("Deploy the API service", category="deploy", namespace="team:b")
    assert store.recall("Deploy the API service", category="deploy", namespace="team:a")


def test_expired_and_pruned_learnings_are_not_recalled(store, clock):
    store.learnings.add("Never deploy the payments service on a Friday afternoon.", "AntiPattern", ttl=60)
    old = store.learnings.add("Do not skip the database migration dry run before a deploy.", "AntiPattern")
    clock.advance(weeks=45)  # the first expired; the second decayed below 0.1 (not yet pruned by maintenance)
    store.db.execute("UPDATE learnings SET last_used = NULL")
    assert store.learnings.get(old.id).confidence < 0.1
    assert store.recall("deploy payments on friday with a migration").anti_patterns == []


def test_bad_arguments(store):
    with pytest.raises(ValueError, match="description"):
        store.recall("  ")
    with pytest.raises(ValueError, match="token_budget"):
        store.recall("x", token_budget=-5)


def test_recall_works_on_a_read_only_store(tmp_path, clock):
    from shared_core import MemoryStore

    path = tmp_path / "ro.db"
    with MemoryStore.open(path, clock=clock) as writer:
        learning = writer.learnings.add("Never deploy the payments service on a Friday afternoon.", "AntiPattern")
    with MemoryStore.open(path, clock=clock, read_only=True) as reader:
        result = reader.recall("deploy payments on friday")
        assert result.ids == [learning.id]
        assert reader.tasks.active == []  # no recovery attempted on a read-only file

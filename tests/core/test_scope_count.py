"""A scope's count is its namespaces' rows less the superseded and the expired ones, each counted
from an index (a million rows' live count read every row: 0.5-1.5 s in ``store.count()`` and in the
first keyword-gated question of a process); it equals the rows a listing returns, in every case."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared_core.index.scope import Scope


@pytest.fixture
def mixed(store, clock):
    """Facts and notes in two namespaces and a third under the same prefix; some replaced by newer
    versions, some expired, some both."""
    for ns in ("team/a", "team/b", "solo"):
        for i in range(6):
            kind = "fact" if i % 2 else "note"
            old = store.add(f"{ns} memory {i} about the harbour", namespace=ns, kind=kind, dedup=False,
                            ttl=timedelta(hours=1) if i % 3 == 0 else None)
            if i in (1, 3):  # replaced: superseded (and, for 3, expired as well: ttl above)
                store.add(f"{ns} memory {i} about the harbour, revised", namespace=ns, kind=kind,
                          supersedes=old.id, dedup=False)
    clock.advance(hours=2)  # the ttl rows are expired now
    return store


SCOPES = [
    {}, {"namespace": "team/a"}, {"namespace": ["team/a", "solo"]}, {"namespace_prefix": "team/"},
    {"namespace": "team/b", "kind": "fact"}, {"namespace_prefix": "", "kind": ["note", "fact"]},
    {"namespace": "nobody"},
]


@pytest.mark.parametrize("include_superseded", [False, True])
@pytest.mark.parametrize("include_expired", [False, True])
@pytest.mark.parametrize("scope", SCOPES, ids=[str(s) for s in SCOPES])
def test_a_count_is_what_a_listing_returns(mixed, scope, include_expired, include_superseded):
    flags = {"include_expired": include_expired, "include_superseded": include_superseded}
    listed = mixed.list(limit=1000, **scope, **flags)
    assert mixed.count(**scope, **flags) == len(listed)


def test_the_fixture_holds_every_case(mixed):
    everything = mixed.list(namespace_prefix="", limit=1000, include_expired=True, include_superseded=True)
    now = mixed.clock.now()
    expired = {m.id for m in everything if m.expires_at is not None and m.expires_at <= now}
    superseded = {m.id for m in everything if m.valid_to is not None}
    assert expired - superseded and superseded - expired and expired & superseded


def test_a_scope_of_namespaces_and_kinds_is_counted_from_its_parts():
    live = Scope(namespaces=("a",), kinds=("fact",), live_at="2024-01-01T00:00:00.000000Z")
    assert [sign for sign, _, _ in live.count_terms()] == [1, -1, -1, 1]
    assert [sign for sign, _, _ in Scope(namespaces=("a",)).count_terms()] == [1, -1]
    for other in (Scope(ids=("x",)), Scope(created_from="2024-01-01T00:00:00.000000Z"),
                  Scope(namespaces=("a",), current_only=False)):
        assert [sign for sign, _, _ in other.count_terms()] == [1]

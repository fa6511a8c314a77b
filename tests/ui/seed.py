"""The memory the inspector's browser tests (and the doc screenshots, `make screenshots`) look at."""

from __future__ import annotations

from dataclasses import dataclass

from shared_core import ManualClock, MemoryStore

ALICE = "user:alice"
BOB = "user:bob"
BOB_SECRET = "Bob's secret project is called Falcon"


@dataclass(frozen=True)
class Seeded:
    """The ids the tests open."""

    tea: str
    timezone_old: str
    timezone_new: str
    allergy: str
    document: str
    session: str


def seed(store: MemoryStore, clock: ManualClock) -> Seeded:
    """Two users' memories over two weeks: facts (one superseded), a pinned note, feedback, links
    from searches, a document, a session with messages, and a maintenance run."""
    old = store.add("Alice's timezone is Europe/Berlin", namespace=ALICE, category="profile", source="chat")
    clock.advance(days=2)
    tea = store.add("Alice prefers oolong tea over coffee", namespace=ALICE, tags=["drinks"], category="preference",
                    source="chat")
    clock.advance(days=1)
    store.add("Alice works at Northwind as a data engineer", namespace=ALICE, tags=["work"], category="work",
              source="onboarding form")
    allergy = store.add("Alice is allergic to peanuts", kind="note", namespace=ALICE, tags=["health"],
                        importance=0.9, pinned=True, source="user")
    document = store.documents.ingest_text(
        "# Alice's onboarding\n\nAlice joined Northwind in March. She leads the data platform team.\n\n"
        "## Preferences\n\nMeetings after 10am her time. Tea, never coffee, in the afternoon.",
        name="alice-onboarding.md", namespace=ALICE)
    clock.advance(days=4)
    session = store.conversations.create_session("ses-alice-1", namespace=ALICE, channel="slack")
    store.conversations.append(session.id, "user", "I moved to New York last week, so my timezone changed.",
                               namespace=ALICE)
    store.conversations.append(session.id, "assistant", "Noted: your timezone is now America/New_York.",
                               namespace=ALICE)
    new = store.add("Alice's timezone is America/New_York", namespace=ALICE, category="profile", source="chat",
                    session_id=session.id)
    clock.advance(days=3)
    for _ in range(3):  # found together: linked
        store.search("Alice tea coffee timezone", namespace=ALICE, limit=3)
    store.reinforce(tea, namespace=ALICE)
    clock.advance(days=1)  # asked again the next day: accesses and feedback on two days of its chart
    store.search("what does Alice drink", namespace=ALICE, limit=2)
    store.reinforce(tea, namespace=ALICE)
    store.add(BOB_SECRET, namespace=BOB, tags=["work"])
    store.add("Bob drinks his coffee black", namespace=BOB)
    clock.advance(days=1)
    store.maintain()
    return Seeded(tea=tea, timezone_old=old, timezone_new=new, allergy=allergy, document=document.id,
                  session=session.id)

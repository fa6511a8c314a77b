"""Keyword search in every language: CJK without spaces, accents, ß and case as users type them.

The same tests run on both backends (``OPENKOI_TEST_BACKEND=postgres``); the search form
(``shared_core/index/textform.py``) and its PostgreSQL twin (migration 45) are compared directly.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shared_core.db.migrations as migrations
from shared_core import MemoryStore
from shared_core.index import textform
from shared_core.index.sanitize import search_terms
from shared_core.index.textform import phrase_tokens, search_form

MIGRATION = Path(migrations.__file__).parent / "migrations" / "0045_search_form.sql"
SEARCH_DOC = Path(__file__).resolve().parents[2] / "docs" / "search.md"

# language -> memories; each query below names the one memory it must find, and only that one
MEMORIES = {
    "ja": {"tower": "東京タワーに行った", "matcha": "京都で抹茶を飲んだ", "osaka": "明日は大阪で会議があります"},
    "zh": {"cat": "我的猫很可爱", "duck": "北京烤鸭很好吃", "trip": "下周去上海出差"},
    "ko": {"seoul": "서울에서 커피를 마셨다", "busan": "부산 바다가 아름답다", "meeting": "내일 회의가 있습니다"},
    "de": {"street": "Die Straße nach München ist gesperrt", "food": "Wir essen Käsespätzle",
           "match": "Das Fußballspiel war großartig"},
    "fr": {"cafe": "Un café au lait, s'il vous plaît", "hotel": "L'hôtel est près de la gare",
           "heart": "Mon cœur est à Paris"},
    "ru": {"moscow": "Я живу в Москве", "alyona": "Встреча с Алёной в пятницу",
           "conference": "КОНФЕРЕНЦИЯ ПО МАШИННОМУ ОБУЧЕНИЮ"},
    "ar": {"library": "ذهبت إلى المكتبة أمس", "coffee": "القهوة العربية لذيذة", "meeting": "اجتماع العمل يوم الأحد"},
}
QUERIES = [
    ("ja", "東京", "tower"),                  # a word inside a run without spaces
    ("ja", "タワー", "tower"),
    ("ja", "ﾀﾜｰ", "tower"),                   # half-width katakana
    ("ja", "抹茶", "matcha"),
    ("ja", "京都", "matcha"),                 # not the tower's 東京: pairs, not single characters
    ("ja", "会議", "osaka"),
    ("zh", "猫", "cat"),                      # one character is a word
    ("zh", "北京", "duck"),
    ("zh", "烤鸭", "duck"),
    ("zh", "上海", "trip"),
    ("ko", "서울", "seoul"),                  # a stem without its particle (서울에서: in Seoul)
    ("ko", "커피", "seoul"),
    ("ko", "바다", "busan"),
    ("ko", "회의", "meeting"),
    ("de", "strasse", "street"),
    ("de", "STRASSE", "street"),
    ("de", "munchen", "street"),
    ("de", "München", "street"),
    ("de", "kasespatzle", "food"),
    ("de", "fussballspiel", "match"),
    ("de", "GROSSARTIG", "match"),
    ("fr", "cafe", "cafe"),
    ("fr", "CAFÉ", "cafe"),
    ("fr", "hotel", "hotel"),                 # after the elided article l'
    ("fr", "pres", "hotel"),
    ("fr", "coeur", "heart"),
    ("ru", "москве", "moscow"),
    ("ru", "МОСКВЕ", "moscow"),
    ("ru", "аленой", "alyona"),               # ё typed as е (the same case: words are not reduced to stems)
    ("ru", "Пятницу", "alyona"),
    ("ru", "конференция", "conference"),
    ("ar", "مكتبة", "library"),               # without the article, teh marbuta typed as heh or not
    ("ar", "المكتبة", "library"),
    ("ar", "مكتبه", "library"),
    ("ar", "قَهْوَة", "coffee"),               # with harakat
    ("ar", "قهوة", "coffee"),
    ("ar", "اجتماع", "meeting"),
]


@pytest.fixture
def languages(store):
    """A store holding every language's memories: (store, {(language, key): id})."""
    ids = {(lang, key): store.add(text) for lang, memories in MEMORIES.items() for key, text in memories.items()}
    return store, ids


@pytest.mark.parametrize(("language", "query", "key"), QUERIES)
def test_a_word_finds_its_memory_and_nothing_else(languages, language, query, key):
    store, ids = languages
    assert store.search(query, fusion="keyword", limit=50).ids == [ids[(language, key)]]


@pytest.mark.parametrize(("stored", "query"), [("東京タワー", "東京"), ("Straße", "strasse"), ("café", "cafe")])
def test_the_default_search_finds_what_found_nothing_before(store, stored, query):
    wanted = store.add(f"{stored} is on the list")
    store.add("A note about something else entirely")
    hits = store.search(query)
    assert hits.ids[0] == wanted and hits[0].parts.bm25 > 0


def test_words_that_differ_stay_apart(store):
    tower = store.add("東京タワーに行った")
    store.add("京都に行った")
    store.add("Die Strasse")
    store.add("le cafe")
    assert store.search("東京", fusion="keyword").ids == [tower]  # 京 alone is not 東京
    assert store.search("東京駅", fusion="keyword").ids == [tower]  # shares the pair 東京
    assert store.search("京タ", fusion="keyword").ids == [tower]
    assert store.search("ストラッセ", fusion="keyword").ids == []


def test_bm25_still_ranks_the_better_match_first(store):
    both = store.add("東京タワーと東京駅")
    one = store.add("東京の夜景")
    store.add("大阪城")
    hits = store.search("東京タワー", fusion="keyword")
    assert hits.ids == [both, one] and hits[0].parts.bm25 > 2 * hits[1].parts.bm25 > 0
    store.add_many([f"東京の話 {i}" for i in range(20)])
    rare = store.add("東京の天ぷら屋")
    hits = store.search("天ぷら 東京", fusion="keyword", limit=30)
    assert hits.ids[0] == rare and hits[0].parts.bm25 > 3 * hits[1].parts.bm25  # the rare pairs weigh most


def test_tags_and_source_are_searched_in_the_same_form(store):
    tagged = store.add("a meeting note", tags=["Café", "東京出張"], source="Zürich office")
    assert store.search("cafe", fusion="keyword").ids == [tagged]
    assert store.search("出張", fusion="keyword").ids == [tagged]
    assert store.search("zurich", fusion="keyword").ids == [tagged]


def test_updates_and_deletes_keep_the_index_in_step(store, backend):
    mid = store.add("東京タワーに行った")
    store.update(mid, text="Die Straße nach Köln")
    assert store.search("東京", fusion="keyword").ids == []
    assert store.search("koln strasse", fusion="keyword").ids == [mid]
    store.delete(mid)
    assert store.search("koln strasse", fusion="keyword").ids == []
    if backend == "sqlite":  # FTS5 compares its index with what the view gives for every row
        store.db.execute("INSERT INTO memory_fts(memory_fts) VALUES ('integrity-check')")


def test_the_archive_searches_the_same_way(store):
    keep = store.add("大阪で会議")
    old = store.add("東京タワーに行った, das Café an der Straße")
    store.archive(old, reason="manual")
    assert store.search("東京", fusion="keyword").ids == []
    assert store.archive.search("東京").ids == [old]
    assert store.archive.search("strasse cafe").ids == [old]
    assert set(store.search("東京 会議", include_archive=True).ids) == {keep, old}
    (restored,) = store.archive.restore(old)
    assert store.search("タワー", fusion="keyword").ids == [restored.id]


def test_term_statistics_count_the_search_form(store):
    """The knowledge base keeps a keyword hit by the idf-weighted share of the query's tokens it
    holds: a CJK sentence counts as its pairs, not as one word only the whole sentence would hold."""
    assert search_terms("東京タワーはどこですか")[:4] == ["東京", "京タ", "タワ", "ワー"]
    mid = store.add("東京タワーに行った")
    keyword = store.kernel.keyword
    assert keyword.document_count("東京", 10) == 1 and keyword.document_count("京都", 10) == 0
    assert keyword.rows_containing("東京タワー", [store.get(mid).rowid]) == {store.get(mid).rowid}
    assert keyword.document_count("strasse", 10) == 0
    store.add("Die Straße")
    assert keyword.document_count("Strasse", 10) == 1


def test_the_docs_example_runs_as_written():
    section = SEARCH_DOC.read_text(encoding="utf-8").split("## Every language", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)
    exec(compile(example, "search.md[Every language]", "exec"), {"__name__": "docs_every_language"})  # noqa: S102


# -- an existing memory ----------------------------------------------------------------------------


@pytest.fixture
def new_memory(request, backend, tmp_path):
    """Where a memory that does not exist yet can be created: a file, or a new PostgreSQL schema."""
    if backend == "sqlite":
        yield str(tmp_path / "older.db")
        return
    import psycopg

    server = request.getfixturevalue("pg_server")
    schema = f"lang_{uuid.uuid4().hex[:12]}"
    yield f"{server}{'&' if '?' in server else '?'}schema={schema}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_an_existing_memory_searches_the_new_way_once_opened(new_memory, monkeypatch):
    everything = migrations.available_migrations()
    monkeypatch.setattr(migrations, "available_migrations", lambda: [m for m in everything if m.version < 45])
    with MemoryStore.open(new_memory, config={}) as older:  # the schema before migration 45
        assert older.db.schema_version() == 44
        ids = [older.add(t) for t in ("東京タワーに行った", "Die Straße ist lang", "Я живу в МОСКВЕ")]
        older.archive(ids[2], reason="manual")
        assert older.search("東京", fusion="keyword").ids == []  # the old index: one token per run
    monkeypatch.setattr(migrations, "available_migrations", lambda: everything)
    with MemoryStore.open(new_memory, config={}) as store:
        assert store.db.schema_version() == migrations.latest_version()
        assert store.search("東京", fusion="keyword").ids == [ids[0]]
        assert store.search("strasse", fusion="keyword").ids == [ids[1]]
        assert store.archive.search("москве").ids == [ids[2]]
        new = store.add("東京駅で待ち合わせ")
        assert set(store.search("東京", fusion="keyword").ids) == {ids[0], new}


# -- the search form -------------------------------------------------------------------------------


def test_the_search_form_of_each_script():
    assert search_form("Die Straße, das Café!") == "die strasse  das cafe "
    assert search_form("ПРИВЕТ, Алёна") == "привет  алена"
    assert search_form("東京タワー") == "東京 京タ タワ ワー 東 京 タ ワ ー"
    assert search_form("iPhone用の2024年") == "iphone 用の 用 の 2024 年"
    assert search_form("ＡＢＣ ｶﾀｶﾅ") == "abc カタ タカ カナ カ タ カ ナ"
    assert search_form("والكتاب مَرْحَبًا إلى") == "كتاب مرحبا الي"  # الي keeps its letters: too short
    assert search_form("الالكتاب") == "كتاب"  # so that folding twice is folding once
    assert search_form("हिन्दी") == "हिन्दी"  # its vowel signs are part of the word
    assert search_form("great🤩 ❤️ Cœur Łódź") == "great    coeur lodz"
    assert search_form(None) == "" and search_form(12) == "12"
    assert search_form("\x1fぁ") == "\x1f ぁ"  # only these spaces part words: Python's and PostgreSQL's differ


def test_query_words_become_the_tokens_the_index_holds():
    assert search_terms("Straße nach 東京タワー 猫 a x") == ["strasse", "nach", "東京", "京タ", "タワ", "ワー", "猫"]
    assert phrase_tokens("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert search_terms("cafe CAFÉ Café") == ["cafe"]
    assert len(search_terms("あ" * 500)) == 1 and len(search_terms("".join(chr(0x4E00 + i) for i in range(200)))) == 64


@given(st.text())
def test_the_search_form_is_stable(text):
    """Folding twice changes nothing: a query token folded again is still what the index holds."""
    for token in search_form(text).split():
        assert phrase_tokens(token) == ([token] if len(token) > 1 or re.fullmatch(textform.CJK, token) else [])


def test_the_migration_spells_the_same_character_classes():
    sql = MIGRATION.read_text(encoding="utf-8")
    for name in ("CJK", "MARKS", "ASCII_PUNCTUATION", "PUNCTUATION", "ARTICLE", "SPACE"):
        assert getattr(textform, name) in sql, f"migration 45 and textform.{name} differ"


@pytest.mark.postgres_only
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
def test_postgresql_folds_every_text_as_python_does(store, text):
    assert store.db.scalar("SELECT openkoi_search_form(?)", (text,)) == search_form(text)


@pytest.mark.postgres_only
def test_postgresql_folds_each_script_as_python_does(store):
    texts = [t for memories in MEMORIES.values() for t in memories.values()] + [q for _, q, _ in QUERIES]
    texts += ["ΣΊΣΥΦΟΣ İstanbul", "שָׁלוֹם", "「東京」・京都、大阪！", "Þór Guðmundsson ﬁne ½", "ﷺ ﻻ", "a\tb\nc"]
    found = store.db.query("SELECT openkoi_search_form(t) FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS u(t, i) "
                           "ORDER BY i", (texts,))
    assert [r[0] for r in found] == [search_form(t) for t in texts]

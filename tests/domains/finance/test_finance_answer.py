from __future__ import annotations

import pytest
from verifiers.domains.finance import answer_json_schema, find_answer, read_answer
from verifiers.domains.finance._answer import AnswerError


def test_fenced_block_after_prose() -> None:
    text = 'I think {"answer": 1} was wrong.\n```json\n{"answer": 24.41, "scale": "percent"}\n```\nDone.'
    assert find_answer(text)["scale"] == "percent"


def test_bare_object_after_prose_takes_the_last() -> None:
    text = 'First try {"answer": 1}. Final: {"answer": 2.50, "formula": "a+b", "operands": {"a": {"value": "1"}}}'
    answer = read_answer(find_answer(text))
    assert answer.value == 2.5 and answer.decimals == 2 and answer.formula == "a+b"


def test_missing_or_broken_answers() -> None:
    with pytest.raises(AnswerError, match="no JSON object"):
        find_answer("The answer is 42.")
    with pytest.raises(AnswerError, match="not a number"):
        read_answer({"answer": "about forty"})
    with pytest.raises(AnswerError, match="scale"):
        read_answer({"answer": 1, "scale": "gazillion"})
    with pytest.raises(AnswerError, match="operands"):
        read_answer({"answer": 1, "operands": [1, 2]})


def test_printed_answers_carry_their_scale() -> None:
    assert read_answer({"answer": "24.4%"}).scale == "percent"
    assert read_answer({"answer": "$1.2 billion"}).scale == "billion"
    assert read_answer({"answer": "yes"}).boolean is True
    with pytest.raises(AnswerError, match="percentage"):
        read_answer({"answer": "24%", "scale": "million"})


def test_many_braces_do_not_blow_up() -> None:
    text = "{" * 100_000 + '{"answer": 3}'
    assert find_answer(text)["answer"] == 3


def test_schema_documents_the_shape() -> None:
    schema = answer_json_schema()
    assert set(schema["properties"]) >= {"answer", "scale", "formula", "program", "operands"}
    assert schema["required"] == ["answer"]

"""Answers beyond float range must never be 'correct' or 'consistent' (a reward hack)."""

from __future__ import annotations

from typing import Any

import pytest

import verifiers

DOC = {
    "table": [["", "2019", "2018"], ["Total sales", "$1,496.5", "$1,202.9"]],
    "scale": "million",
}
OPERANDS = '"operands": {"s19": "1,496.5", "s18": "$1,202.9"}'


def _item(answer: str, reference: Any) -> dict[str, Any]:
    return {
        "id": "x",
        "completion": '{"answer": ' + answer + ', "formula": "s19 - s18", ' + OPERANDS + "}",
        "task": {"verifier": "finance.formula", "spec": {"document": DOC}, "reference": reference},
    }


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("1e300", {"answer": 0.0, "decimals": 2}),  # used to round to 0 and "match"
        ("1e400", {"answer": 0.001, "decimals": 2}),  # a finite Decimal that floats make inf
        ("123456789012345678901234567890", {"answer": 0, "decimals": 2}),
        ("1e400", None),  # unlabelled: any formula "reproduced" an infinite answer
    ],
)
def test_out_of_range_answers_score_zero(answer: str, reference: Any) -> None:
    [result] = verifiers.score([_item(answer, reference)])
    assert result.status == "fail", result
    assert result.reward == 0.0


def test_the_honest_answer_still_passes() -> None:
    [result] = verifiers.score([_item("293.6", {"answer": 293.6, "decimals": 1})])
    assert result.status == "pass", result.feedback


def _unlabelled(formula: str, answer: float, operands: dict[str, Any]) -> dict[str, Any]:
    completion = {"answer": answer, "formula": formula, "operands": operands}
    import json

    return {
        "id": "u",
        "prompt": "By how much did total sales change from 2018 to 2019?",
        "completion": json.dumps(completion),
        "task": {"verifier": "finance.formula", "spec": {"document": DOC}},
    }


def test_a_cited_operand_the_formula_throws_away_is_not_consistent() -> None:
    cited = {"s": {"value": "1,496.5", "cite": {"row": "Total sales", "column": "2019"}}}
    [cheat] = verifiers.score([_unlabelled("s*0 + 24 + 41/100", 24.41, cited)])
    assert cheat.status == "fail" and cheat.components["consistency"] == 0.0
    assert "do not affect" in cheat.feedback
    both = {
        "a": {"value": "1,496.5", "cite": {"row": "Total sales", "column": "2019"}},
        "b": {"value": "1,202.9", "cite": {"row": "Total sales", "column": "2018"}},
    }
    [cancel] = verifiers.score([_unlabelled("a - a + b", 1202.9, both)])
    assert cancel.components["consistency"] == 0.0
    [honest] = verifiers.score([_unlabelled("a - b", 293.6, both)])
    assert honest.status == "pass", honest.feedback

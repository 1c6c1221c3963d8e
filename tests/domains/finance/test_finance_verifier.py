"""finance.formula end to end through the engine, over inline, CSV and HTML documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from finance_helpers import GROWTH, TABLE, item

import verifiers
from verifiers import Result

REF = {"answer": 24.41, "scale": "percent"}


def score_one(trajectory: dict[str, Any], **kw: Any) -> Result:
    return verifiers.score([trajectory], **kw)[0]


def with_(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(base))
    out.update(changes)
    return out


def test_correct_answer_passes_every_check() -> None:
    result = score_one(item(GROWTH, reference=REF))
    assert result.status == "pass" and result.reward == 1.0
    assert result.components == {"grounding": 1.0, "consistency": 1.0, "correct": 1.0}
    assert result.verifier.startswith("finance.formula@")


def test_chat_completion_and_fraction_answer() -> None:
    answer = with_(GROWTH, answer=0.2441, scale="", formula="(rev_2019 - rev_2018) / rev_2018")
    traj = item(answer, reference=REF)
    traj["completion"] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": json.dumps(answer)},
    ]
    result = score_one(traj)
    assert result.status == "pass", result.feedback


def test_wrong_operand_is_a_grounding_fault() -> None:
    answer = with_(GROWTH)
    answer["operands"]["rev_2019"]["value"] = "1,596.5"
    answer["answer"] = 32.72
    result = score_one(item(answer))
    assert result.components["grounding"] == 0.5
    assert result.components["consistency"] == 1.0
    assert result.reward == 0.5  # no reference: grounding x consistency
    assert "rev_2019" in result.feedback and "'$1,496.5'" in result.feedback


def test_wrong_row_names_the_closest() -> None:
    answer = with_(GROWTH)
    answer["operands"]["rev_2019"]["cite"]["row"] = "Total sale revenue"
    result = score_one(item(answer))
    assert result.components["grounding"] == 0.5
    assert "closest: 'Total sales'" in result.feedback


def _uncited_difference(scale: str, first: str, second: str) -> dict[str, Any]:
    """1,496.5 - 1,003.2 = 493.3 in ``scale``, both operands uncited."""
    return {
        "answer": 493.3,
        "scale": scale,
        "formula": f"{first} - {second}",
        "operands": {first: {"value": "1,496.5"}, second: {"value": "1,003.2"}},
    }


def test_uncited_operand_may_be_anywhere_and_parenthesised() -> None:
    answer = _uncited_difference("million", "sales", "cost")
    result = score_one(item(answer, reference={"answer": 493.3, "scale": "million"}))
    assert result.status == "pass", result.feedback
    strict = score_one(item(answer, spec={"grounding_sign": "exact"}))
    assert strict.components["grounding"] == 0.5


def test_inconsistent_answer() -> None:
    result = score_one(item(with_(GROWTH, answer=30.0), reference=REF))
    assert result.components["consistency"] == 0.0 and result.components["correct"] == 0.0
    assert "formula gives 24.4077" in result.feedback


def test_percent_fraction_confusion_is_reported_and_configurable() -> None:
    answer = with_(GROWTH, answer=0.2441, formula="(rev_2019 - rev_2018) / rev_2018")
    result = score_one(item(answer, reference=REF))
    assert result.status == "fail" and result.components["correct"] == 0.0
    assert result.details["percent_fraction_confusion"] == "/100"
    assert "percent/fraction" in result.feedback
    lenient = score_one(item(answer, reference=REF, spec={"percent_fraction_credit": 0.5}))
    assert lenient.reward == 0.5


def test_scale_confusion_and_sign() -> None:
    answer = _uncited_difference("thousand", "a", "b")
    result = score_one(item(answer, reference={"answer": 493.3, "scale": "million"}))
    assert result.components == {"grounding": 1.0, "consistency": 1.0, "correct": 0.0}
    assert "factor of 1,000" in result.feedback
    flipped = score_one(
        item(
            answer | {"scale": "million", "answer": -493.3},
            reference={"answer": 493.3, "scale": "million"},
        )
    )
    assert flipped.components["consistency"] == 0.0 and "wrong sign" in flipped.feedback


def test_tolerances() -> None:
    near = with_(GROWTH, answer=24.6, formula=None)
    near.pop("formula")
    ok = score_one(item(near, reference=REF, spec={"require_formula": False}))
    assert ok.components["correct"] == 1.0  # within 1% relative
    assert "consistency" not in ok.components
    strict = score_one(
        item(near, reference={**REF, "decimals": 2}, spec={"require_formula": False})
    )
    assert strict.components["correct"] == 0.0
    finqa = score_one(item(near, reference=REF, spec={"mode": "finqa", "require_formula": False}))
    assert finqa.components["correct"] == 0.0
    zero = score_one(
        item(
            {"answer": 0.001, "formula": "a - a", "operands": {"a": {"value": "44.1"}}}, reference=0
        )
    )
    assert zero.components["correct"] == 0.0


def test_weights_and_missing_formula() -> None:
    answer = with_(GROWTH)
    answer.pop("formula")
    result = score_one(
        item(answer, reference=REF, spec={"weights": {"correct": 1, "consistency": 1}})
    )
    assert result.components["consistency"] == 0.0 and result.reward == 0.5
    assert "no formula" in result.feedback


def test_hostile_formula_fails_fast_with_feedback() -> None:
    answer = with_(GROWTH, formula="__import__('os').system('touch /tmp/finance-pwned')")
    result = score_one(item(answer, reference=REF))
    assert result.status == "fail" and result.reward == 0.0
    assert result.feedback.startswith("formula rejected: name '__import__' not allowed")
    assert not Path("/tmp/finance-pwned").exists()
    bomb = score_one(item(with_(GROWTH, formula="9**9**9"), reference=REF))
    assert bomb.status == "fail" and "exponent" in bomb.feedback
    constants = score_one(item(with_(GROWTH, formula="97 / 4 + 4 / 25"), reference=REF))
    assert constants.components["consistency"] == 0.0 and "only constants" in constants.feedback
    huge = score_one(item(with_(GROWTH, formula="1+" * 500_000 + "1"), reference=REF))
    assert huge.status == "fail" and "characters long" in huge.feedback


def test_finqa_program_answer() -> None:
    answer = {
        "answer": 24.41,
        "scale": "percent",
        "program": "subtract(1496.5, 1202.9), divide(#0, 1202.9), multiply(#1, const_100)",
    }
    result = score_one(item(answer, reference=REF))
    assert result.components == {"grounding": 1.0, "consistency": 1.0, "correct": 1.0}
    table_op = {"answer": 1268.5, "scale": "million", "program": "table_average(Total sales, none)"}
    result = score_one(item(table_op, reference={"answer": 1269.03, "scale": "million"}))
    assert result.status == "pass", result.feedback
    made_up = {"answer": 1, "program": "subtract(1234.5, 1233.5)"}
    assert score_one(item(made_up)).components["grounding"] == 0.0


def test_no_answer_is_a_model_failure() -> None:
    result = score_one(item("I could not find the figures.", reference=REF))
    assert result.status == "fail" and result.reward == 0.0
    assert "no JSON object" in result.feedback


@pytest.mark.parametrize(
    ("spec", "reference", "message"),
    [
        ({"document": {"nonsense": 1}}, REF, "document has none of"),
        ({"document": {"table": "not rows"}}, REF, "must be a list"),
        ({"document": {"pdf": "missing.pdf"}}, REF, "not found"),
        ({"document": {"table": TABLE}}, {"answer": "n/a"}, "not a number"),
        ({"document": {"table": TABLE}, "weights": {"style": 1}}, REF, "unknown components"),
    ],
)
def test_unjudgeable_inputs_are_errors(
    spec: dict[str, Any], reference: Any, message: str, tmp_path: Path
) -> None:
    traj = item(GROWTH, reference=reference, document=spec["document"])
    traj["task"]["spec"].update({k: v for k, v in spec.items() if k != "document"})
    result = score_one(traj, base_dir=tmp_path)
    assert result.status == "error" and result.reward is None
    assert result.error is not None and result.error.kind == "bad_input"
    assert message in result.error.message


def test_csv_and_html_documents(tmp_path: Path) -> None:
    csv_text = "\n".join(",".join(json.dumps(c) for c in row) for row in TABLE)
    (tmp_path / "t.csv").write_text(csv_text)
    html = (
        "<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in TABLE[1]) + "</tr></thead><tbody>"
    )
    html += "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in TABLE[2:])
    html += "</tbody></table>"
    (tmp_path / "t.html").write_text(html)
    for document in ({"csv": "t.csv"}, {"csv": csv_text}, {"html": "t.html"}, {"html": html}):
        result = score_one(item(GROWTH, reference=REF, document=document), base_dir=tmp_path)
        assert result.components == {"grounding": 1.0, "consistency": 1.0, "correct": 1.0}, (
            document,
            result,
        )


def test_text_paragraph_citation() -> None:
    document = {
        "table": TABLE,
        "text": ["Headcount was 1,250 at year end.", "Backlog reached $3.2 billion."],
    }
    answer = {
        "answer": 3.2,
        "scale": "billion",
        "formula": "b",
        "operands": {"b": {"value": "$3.2 billion", "cite": {"paragraph": 1}}},
    }
    assert score_one(item(answer, document=document)).components["grounding"] == 1.0
    wrong = {**answer, "operands": {"b": {"value": "$3.2 billion", "cite": {"paragraph": 0}}}}
    assert score_one(item(wrong, document=document)).components["grounding"] == 0.0


def test_nil_cells_only_match_zero() -> None:
    tiny = {"answer": 0.16, "formula": "x", "operands": {"x": {"value": "0.16"}}}
    assert score_one(item(tiny)).components["grounding"] == 0.0
    nil = {
        "answer": 0,
        "formula": "x",
        "operands": {"x": {"value": "0", "cite": {"row": "Cost of sales", "column": "2017"}}},
    }
    assert score_one(item(nil)).components["grounding"] == 1.0


def test_scale_words_against_a_declared_scale() -> None:
    document = {"table": [["", "2019"], ["Backlog", "1,500"]], "scale": "thousand"}
    quoted = {
        "answer": 3.0,
        "scale": "million",
        "formula": "b * 2",
        "operands": {"b": {"value": "1.50 million"}},
    }
    result = score_one(
        item(quoted, document=document, reference={"answer": 3000, "scale": "thousand"})
    )
    assert result.components == {"grounding": 1.0, "consistency": 1.0, "correct": 1.0}, (
        result.feedback
    )
    vague = {**quoted, "operands": {"b": {"value": "2 million"}}}
    assert score_one(item(vague, document=document)).components["grounding"] == 0.0

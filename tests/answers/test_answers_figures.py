"""One number grammar (issue 20): ``answer.numeric``'s parser and finance's figure parser.

Both live in ``verifiers.answers._numbers`` and share the scale words, currency signs and
minus signs. ``datasets/answers/figures.jsonl`` pins what each reads: rows with ``value`` are
read the same by both; rows with ``answer``/``figure`` name the few deliberate differences
(a table cell is one figure; an answer is prose that may carry units and fractions).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from verifiers.domains.finance import parse_number as finance_parse

from verifiers.answers._numbers import SCALE_FACTORS, find_numbers, parse_figure, parse_number

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parents[2] / "datasets" / "answers" / "figures.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
    if line
]


def _expected(row: dict[str, Any], side: str) -> dict[str, Any] | None:
    if side in row:
        return row[side]  # type: ignore[no-any-return]
    if row.get("value") is None:
        return None
    return {"value": row["value"], "scale": row["scale"], "percent": row["percent"]}


@pytest.mark.parametrize("row", ROWS, ids=[r["text"] or "empty" for r in ROWS])
def test_both_parsers_read_the_row(row: dict[str, Any]) -> None:
    want_answer, want_figure = _expected(row, "answer"), _expected(row, "figure")
    got = parse_number(row["text"])
    if want_answer is None:
        assert got is None, got
    else:
        assert got is not None
        assert (got.value, got.scale, got.percent) == pytest.approx(
            (want_answer["value"], want_answer["scale"], want_answer["percent"])
        )
    figure = parse_figure(row["text"])
    assert figure == finance_parse(row["text"])  # finance imports the same parser
    if want_figure is None:
        assert figure is None, figure
    else:
        assert figure is not None
        scale = SCALE_FACTORS[figure.scale]
        assert (figure.value, scale, figure.percent) == pytest.approx(
            (want_figure["value"], want_figure["scale"], want_figure["percent"])
        )


def test_free_text_reads_scale_letters_only_attached() -> None:
    found = find_numbers("The rod is 5 m long, costs $45m, weighs 3 mm and sold 12k units")
    assert [(n.value, n.scale) for n in found] == [(5, 1), (45, 1e6), (3, 1), (12, 1e3)]


@pytest.mark.parametrize(
    ("unit", "repeat"),
    [("1k", 50_000), ("$", 100_000), ("US$ ", 25_000), ("12 thousands ", 10_000), ("(", 100_000)],
    ids=["scale-letters", "dollars", "currency-codes", "scale-words", "parens"],
)
def test_the_scanner_stays_linear(unit: str, repeat: int) -> None:
    text = unit * repeat + "5"
    started = time.perf_counter()
    find_numbers(text)
    parse_number(text)
    assert time.perf_counter() - started < 5.0  # a quadratic scan at this size: minutes

"""Host comparison rules (issue 11, mechanisms 5 and 10): exact ints, typed values, sets are not
lists, integer tokens in ``io`` float mode, and values no comparison may crash on.

Each case is a wrong answer that an earlier rule let pass (or a value that crashed the host and
turned a fail into an abstain); the corpus ``datasets/code/compare_rules.jsonl`` holds them as
data so new ones are one line each.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from verifiers.domains.code import values_equal
from verifiers.domains.code._compare import compare_output, printable, short_diff, short_repr
from verifiers.domains.code._judge_codec import decode

CORPUS = Path(__file__).resolve().parents[3] / "datasets" / "code" / "compare_rules.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(x) for x in CORPUS.read_text().splitlines() if x.strip()]
VALUES = [r for r in ROWS if r["kind"] == "value"]
TOKENS = [r for r in ROWS if r["kind"] == "io_float"]


@pytest.mark.parametrize("row", VALUES, ids=[r["id"] for r in VALUES])
def test_value_rule(row: dict[str, Any]) -> None:
    actual = decode(row["actual"])
    expected = decode(row["expected"])
    tol = {"rel_tol": row.get("rel_tol", 1e-9), "abs_tol": row.get("abs_tol", 1e-12)}
    got = values_equal(actual, expected, **tol, int_tolerance=row.get("int_tolerance", False))
    assert got is row["equal"], row["why"]


def _text(value: Any) -> str:
    """A row's output: a string, or ``{"repeat", "times", "tail"}`` for a long one."""
    if isinstance(value, str):
        return value
    return str(value["repeat"]) * int(value["times"]) + str(value.get("tail", ""))


@pytest.mark.parametrize("row", TOKENS, ids=[r["id"] for r in TOKENS])
def test_io_float_rule(row: dict[str, Any]) -> None:
    actual, expected = _text(row["actual"]), _text(row["expected"])
    started = time.monotonic()
    got = compare_output(actual, expected, "float", rel_tol=1e-6, abs_tol=1e-9)
    took = time.monotonic() - started
    assert got is row["equal"], row["why"]
    assert took < row.get("max_seconds", 5.0), (took, row["why"])


def test_corpus_covers_each_rule() -> None:
    assert len(VALUES) >= 20 and len(TOKENS) >= 8
    assert any(r["equal"] for r in VALUES) and any(not r["equal"] for r in VALUES)


def test_huge_values_never_raise() -> None:
    huge = 10**5000
    assert values_equal({huge: 1}, {"1": 1}, rel_tol=1e-9, abs_tol=0) is False
    assert values_equal({huge: 1}, {huge: 1}, rel_tol=1e-9, abs_tol=0) is True
    assert values_equal({huge, "a"}, {"a", huge}, rel_tol=1e-9, abs_tol=0) is True
    assert "too large" in short_repr({huge, "a"}) or "digits" in short_repr({huge, "a"})
    assert compare_output("1" * 6000, "1" * 6000 + "0", "float", rel_tol=1e-6, abs_tol=0) is False


def test_surrogates_are_made_writable() -> None:
    lone = "bad \ud800 text"
    assert printable(lone).encode("utf-8") == b"bad \\ud800 text"
    printable(short_diff(lone, "good")).encode("utf-8")
    short_repr(lone).encode("utf-8")
    assert printable("ok \u00e9") == "ok \u00e9"

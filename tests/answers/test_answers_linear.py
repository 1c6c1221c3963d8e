"""Inline answer paths are linear in their input (issue 12, slowdowns).

``answer.exact``, ``answer.numeric`` and ``format.regex`` run inline in the engine's event loop
with no deadline, so no input may make them superlinear: ``"\\\\boxed x " * 300000`` used to
block the loop for 39 s. Each row of ``datasets/answers/slow.jsonl`` builds a hostile
completion (``prefix + unit * repeat + suffix``, 0.2-2.7 MB) and must get its verdict within
a budget that a quadratic scan at that size misses by an order of magnitude or more, on a
loaded machine too (the linear paths take well under 2 s here).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import verifiers

REPO = Path(__file__).resolve().parents[2]
ROWS = [
    json.loads(line)
    for line in (REPO / "datasets" / "answers" / "slow.jsonl").read_text("utf-8").splitlines()
]
BUDGET_S = 15.0


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_hostile_input_is_judged_in_linear_time(row: dict[str, Any]) -> None:
    text = row["prefix"] + row["unit"] * row["repeat"] + row["suffix"]
    item = {"id": row["id"], "completion": text, "task": row["verifier_task"]}
    started = time.perf_counter()
    [result] = verifiers.score([item])
    elapsed = time.perf_counter() - started
    assert elapsed < BUDGET_S, f"{row['id']}: {elapsed:.1f}s for {len(text)} characters"
    assert result.status == row["expect"]["status"], result
    assert result.reward == row["expect"]["reward"], result


def test_rows_cover_every_inline_verifier() -> None:
    verifiers_used = {row["verifier_task"]["verifier"] for row in ROWS}
    assert verifiers_used == {"answer.exact", "answer.numeric", "format.regex"}
    assert len(ROWS) >= 15

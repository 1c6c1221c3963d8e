"""Composed tasks (``task.checks``) over the answer verifiers: ``datasets/answers/compose.jsonl``.

What the model's output caused is a ``fail`` under a required gate, an ungated check and
``combine: "min"``/``"all"``; only the task's own problems abstain. Each line runs through
``verifiers.score`` (the engine's real composition path).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import verifiers

REPO = Path(__file__).resolve().parents[2]
LINES = [
    json.loads(line)
    for line in (REPO / "datasets" / "answers" / "compose.jsonl").read_text("utf-8").splitlines()
]


def test_composed_lines_get_their_verdicts() -> None:
    results = verifiers.score(LINES, base_dir=REPO, workers=1)
    for line, result in zip(LINES, results, strict=True):
        expect = line["metadata"]["expect"]
        where = f"{line['id']}: {result!r}"
        assert result.status == expect["status"], where
        if expect["reward"] is None:
            assert result.reward is None, where
        else:
            assert result.reward == pytest.approx(expect["reward"]), where
        if "error_kind" in expect:
            assert result.error is not None and result.error.kind == expect["error_kind"], where


def test_corpus_has_attacks_and_controls() -> None:
    statuses = [line["metadata"]["expect"]["status"] for line in LINES]
    assert statuses.count("fail") >= 10 and statuses.count("pass") >= 3
    combines = {line["task"]["combine"] for line in LINES}
    assert combines == {"mean", "min", "all"}

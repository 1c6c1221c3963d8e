"""Regression corpora: every line of datasets/answers/*.jsonl through its verifier.

Each line is a full trajectory whose ``metadata.expect`` holds the verdict it must get
(``status``, ``reward``, optionally ``feedback_contains`` and ``error_kind``). Lines run two
ways: directly through the verifier class (as the engine's error boundary would, with
``VerifierError`` -> ``error``), and end to end through ``verifiers.score`` with real worker
processes.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import verifiers
from verifiers import Result, Trajectory, VerifierContext, VerifierError, get_verifier

REPO = Path(__file__).resolve().parents[2]
CORPORA = ("exact", "numeric", "math", "regex", "attacks")


def _lines(name: str) -> list[dict[str, Any]]:
    path = REPO / "datasets" / "answers" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


ALL = [(name, line) for name in CORPORA for line in _lines(name)]


def _direct(line: dict[str, Any]) -> Result:
    trajectory = Trajectory.model_validate(line)
    verifier = get_verifier(trajectory.task.verifier or "")()
    ctx = VerifierContext(deadline=time.monotonic() + 60, base_dir=REPO)
    try:
        spec = verifier.Spec.model_validate(trajectory.task.spec or {})
        return asyncio.run(verifier.verify(trajectory, spec, ctx))
    except ValidationError as exc:  # the engine reports an invalid spec as bad_input
        return Result.errored("bad_input", str(exc))
    except VerifierError as exc:
        return Result.errored(exc.kind, str(exc))  # type: ignore[arg-type]


def _assert_verdict(result: Result, expect: dict[str, Any], where: str) -> None:
    assert result.status == expect["status"], f"{where}: {result!r}"
    if expect["reward"] is None:
        assert result.reward is None, where
    else:
        assert result.reward == pytest.approx(expect["reward"]), f"{where}: {result!r}"
    if "feedback_contains" in expect:
        assert expect["feedback_contains"] in result.feedback, f"{where}: {result.feedback!r}"
    if "error_kind" in expect:
        assert result.error is not None and result.error.kind == expect["error_kind"], where


def test_corpora_are_large_and_ids_unique() -> None:
    for name in CORPORA:
        lines = _lines(name)
        assert len(lines) >= 40, name
        ids = [line["id"] for line in lines]
        assert len(ids) == len(set(ids)), name
        statuses = {line["metadata"]["expect"]["status"] for line in lines}
        assert {"pass", "fail"} <= statuses, name


@pytest.mark.parametrize(
    ("corpus", "line"), ALL, ids=[f"{name}:{line['id']}" for name, line in ALL]
)
def test_line_direct(corpus: str, line: dict[str, Any]) -> None:
    result = _direct(line)
    _assert_verdict(result, line["metadata"]["expect"], f"{corpus}:{line['id']}")


@pytest.mark.parametrize("corpus", CORPORA)
def test_corpus_through_engine(corpus: str) -> None:
    lines = _lines(corpus)
    results = verifiers.score(lines, base_dir=REPO, timeout_s=60, workers=2)
    assert [r.id for r in results] == [line["id"] for line in lines]
    for line, result in zip(lines, results, strict=True):
        _assert_verdict(result, line["metadata"]["expect"], f"{corpus}:{line['id']} (engine)")

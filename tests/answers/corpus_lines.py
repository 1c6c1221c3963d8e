"""The one loader and checker every answer corpus test uses (datasets/answers/*.jsonl).

Each corpus line is a full trajectory whose ``metadata.expect`` holds the verdict it must get
(``status``, ``reward``, optionally ``feedback_contains`` and ``error_kind``). A line runs two
ways: directly through its verifier class (as the engine's error boundary would, with
``VerifierError`` -> ``error``), and end to end through ``verifiers.score`` with real worker
processes (one engine run per corpus, so a corpus costs one pool start).
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
CORPUS_DIR = REPO / "datasets" / "answers"


def lines(name: str) -> list[dict[str, Any]]:
    """The lines of ``datasets/answers/<name>.jsonl``."""
    path = CORPUS_DIR / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def params(*names: str) -> list[Any]:
    """``pytest.param(corpus, line, id="corpus:id")`` for every line of the named corpora."""
    return [
        pytest.param(name, line, id=f"{name}:{line['id']}")
        for name in names
        for line in lines(name)
    ]


def direct(line: dict[str, Any]) -> Result:
    """One line through its verifier class, errors turned into results as the engine does."""
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


def check(result: Result, expect: dict[str, Any], where: str) -> None:
    """Assert ``result`` has the verdict ``expect`` describes."""
    assert result.status == expect["status"], f"{where}: {result!r}"
    if expect["reward"] is None:
        assert result.reward is None, where
    else:
        assert result.reward == pytest.approx(expect["reward"]), f"{where}: {result!r}"
    if "feedback_contains" in expect:
        assert expect["feedback_contains"] in result.feedback, f"{where}: {result.feedback!r}"
    if "error_kind" in expect:
        assert result.error is not None and result.error.kind == expect["error_kind"], where


def through_engine(name: str) -> None:
    """Every line of a corpus in one ``verifiers.score`` run, each with its verdict."""
    corpus = lines(name)
    results = verifiers.score(corpus, base_dir=REPO, timeout_s=60, workers=2)
    assert [r.id for r in results] == [line["id"] for line in corpus]
    for line, result in zip(corpus, results, strict=True):
        check(result, line["metadata"]["expect"], f"{name}:{line['id']} (engine)")

"""The reward-hacking regression corpus (datasets/code/adversarial.jsonl).

Every attempt must score exactly 0 with status ``fail`` through the real local (bubblewrap)
backend and the real Docker sandbox (never ``error``: an abstain is a hack too). Controls
(``metadata.expect == "pass"``, honest solutions of the corpus's own specs) must score 1, so a 0
is the defence working, not a broken spec.

The attacks are scored once per backend, ``ATTACK_CONCURRENCY`` at a time (most of their time is
waiting: a stopped judge, a sleep past the deadline, a fork bomb hitting its limit), and the
per-row tests read those results. Controls run one at a time: a pass must not depend on how
loaded the machine is, and their verdicts are the ones a concurrent fork bomb could slow.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from code_helpers import Backend, score_with

from verifiers.types import Result

CORPUS = Path(__file__).resolve().parents[3] / "datasets" / "code" / "adversarial.jsonl"
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()
]
ENTRIES = [e for e in ROWS if e["metadata"].get("expect", "fail") == "fail"]
CONTROLS = [e for e in ROWS if e["metadata"].get("expect") == "pass"]

HONEST = {
    "assert": "def add(a, b):\n    return a + b\n",
    "call": "def add(a, b):\n    return a + b\n",
    "pytest": "def add(a, b):\n    return a + b\n",
    "io": "a, b = map(int, input().split())\nprint(a + b)\n",
}


ATTACK_CONCURRENCY = 3
"""Attacks scored at once per backend (the Docker pool and the local backend keep 4 runners)."""


def _kind(entry: dict[str, Any]) -> str:
    return str(entry["task"]["spec"]["tests"]["kind"])


def test_corpus_is_large_and_distinct() -> None:
    ids = [e["id"] for e in ROWS]
    assert len(ids) >= 100 and len(CONTROLS) >= 15
    assert len(set(ids)) == len(ids)
    attempts = {(e["completion"], json.dumps(e["task"], sort_keys=True)) for e in ROWS}
    assert len(attempts) == len(ROWS)
    assert {_kind(e) for e in ENTRIES} == {"assert", "call", "io", "pytest"}
    assert all(e["metadata"]["attack"] and e["metadata"]["defence"] for e in ROWS)
    families = {e["metadata"].get("family") for e in ROWS}
    assert {
        "pytest-collection",
        "star-import",
        "collection-error",
        "proxy",
        "exceptions",
        "comparison",
        "error-to-fail",
    } <= families


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("local", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ],
)
def real_backend(request: pytest.FixtureRequest) -> Any:
    b = Backend(str(request.param))
    yield b
    b.close()


@pytest.fixture(scope="module")
def attack_results(real_backend: Backend) -> dict[str, Result]:
    """Every attack of the corpus scored on the backend, a few at a time (see the docstring)."""

    async def run() -> dict[str, Result]:
        gate = asyncio.Semaphore(ATTACK_CONCURRENCY)

        async def one(entry: dict[str, Any]) -> tuple[str, Result]:
            async with gate:
                return entry["id"], await score_with(real_backend.provider, entry)

        return dict(await asyncio.gather(*(one(e) for e in ENTRIES)))

    return dict(real_backend.run(run()))


@pytest.mark.parametrize("kind", sorted(HONEST))
def test_controls_pass(real_backend: Backend, kind: str) -> None:
    entry = next(e for e in ENTRIES if _kind(e) == kind)
    honest = {**entry, "id": f"control-{kind}", "completion": f"```python\n{HONEST[kind]}```\n"}
    res = real_backend.score(honest)
    assert (res.status, res.reward) == ("pass", 1.0), res.feedback


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_attack_scores_zero(attack_results: dict[str, Result], entry: dict[str, Any]) -> None:
    res = attack_results[entry["id"]]
    assert res.status == "fail", (entry["metadata"]["attack"], res.status, res.error)
    assert res.reward == 0.0, (entry["metadata"]["attack"], res.feedback)
    assert res.components["tests_passed"] == 0.0
    # Writable as UTF-8 JSON: no lone surrogate of the candidate's leaks into the result.
    res.model_dump_json().encode("utf-8")
    json.dumps(res.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("entry", CONTROLS, ids=[e["id"] for e in CONTROLS])
def test_corpus_control_passes(real_backend: Backend, entry: dict[str, Any]) -> None:
    res = real_backend.score(entry)
    assert (res.status, res.reward) == ("pass", 1.0), (entry["id"], res.feedback, res.error)

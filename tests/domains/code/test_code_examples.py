"""datasets/examples/code.jsonl: every example scores as its metadata says, on every backend,
and through the public engine facade (the README quickstart path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from code_helpers import Backend

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "examples" / "code.jsonl"
ITEMS: list[dict[str, Any]] = [
    json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()
]


def test_examples_cover_every_outcome() -> None:
    notes = " ".join(i["metadata"]["note"] for i in ITEMS)
    rewards = {i["metadata"]["expect"]["reward"] for i in ITEMS}
    assert 1.0 in rewards and 0.0 in rewards and any(0 < r < 1 for r in rewards)
    assert "hack" in notes
    assert {i["task"]["spec"]["tests"]["kind"] for i in ITEMS} == {"assert", "call", "io", "pytest"}


@pytest.mark.parametrize("item", ITEMS, ids=[i["id"] for i in ITEMS])
def test_example_scores_as_documented(backend: Backend, item: dict[str, Any]) -> None:
    res = backend.score(item)
    expect = item["metadata"]["expect"]
    assert res.status == expect["status"], res.feedback
    assert res.reward == pytest.approx(expect["reward"])


@pytest.mark.bwrap
def test_examples_through_the_engine_facade() -> None:
    import verifiers

    results = verifiers.score(ITEMS, sandbox="local", cache=False)
    assert [r.id for r in results] == [i["id"] for i in ITEMS]
    assert [r.status for r in results] == [i["metadata"]["expect"]["status"] for i in ITEMS]
    assert all(r.verifier == "code.tests@1" for r in results)

"""Per-job resource accounting (issue 13 item 5): every sandboxed result says what it used.

Real jobs on the local backend under bubblewrap through the real ``code.tests`` and
``mesh.constraints`` verifiers; the engine stamps ``details["resources"]`` from the jobs that
went through ``ctx.sandbox``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import verifiers

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.bwrap


def _first(path: str) -> dict[str, Any]:
    line = (REPO / path).read_text(encoding="utf-8").splitlines()[0]
    return dict(json.loads(line))


def _code(body: str, timeout_s: float = 10, memory_mb: int | None = None) -> dict[str, Any]:
    item = copy.deepcopy(_first("datasets/examples/code.jsonl"))
    item["completion"] = f"```python\n{body}\n```"
    item["task"]["spec"]["timeout_s"] = timeout_s
    if memory_mb is not None:
        item["task"]["spec"]["memory_mb"] = memory_mb
    return item


def _score(items: list[dict[str, Any]]) -> list[verifiers.Result]:
    return verifiers.score(items, sandbox="local", retries=0, base_dir=REPO / "datasets")


def test_a_sandboxed_result_carries_its_resources() -> None:
    passing = _first("datasets/examples/code.jsonl")
    [result] = _score([passing])
    assert result.status == "pass"
    used = result.details["resources"]
    assert set(used) == {"jobs", "wall_s", "cpu_s", "peak_memory_mb", "limit_hit", "runtimes"}
    assert used["jobs"] >= 1 and used["runtimes"] == ["python"]
    assert used["wall_s"] > 0 and used["cpu_s"] > 0 and used["peak_memory_mb"] > 1
    assert used["limit_hit"] == []


def _script(body: str, **script: Any) -> dict[str, Any]:
    item = copy.deepcopy(_first("datasets/mesh/scripts.jsonl"))
    item["completion"] = f"```python\n{body}\n```"
    item["task"]["spec"]["script"] = script
    return item


def test_limits_hit_are_named() -> None:
    # Sleeping, not spinning: a spinning job on a loaded machine may rightly be found starved
    # (an abstain, see test_starvation.py); a sleeping one always runs into its timeout.
    nap = "import time\ntime.sleep(60)"
    shout = "import sys\nsys.stdout.write('x' * (8 << 20))"
    timed, loud = _score([_script(nap, timeout_s=1), _script(shout, timeout_s=5)])
    assert timed.status == "fail" and timed.details["resources"]["limit_hit"] == ["timeout"]
    assert timed.details["resources"]["wall_s"] >= 1.0  # killed at its limit, not before
    assert timed.details["resources"]["cpu_s"] > 0
    assert loud.status == "fail" and loud.details["resources"]["limit_hit"] == ["output"]


def test_items_without_sandbox_jobs_carry_no_resources() -> None:
    [result] = verifiers.score(
        [{"completion": "4", "task": {"verifier": "answer.numeric", "reference": 4}}]
    )
    assert "resources" not in result.details

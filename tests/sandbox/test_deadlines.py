"""An engine timeout only ever means the verifier or the machine failed (issue mechanism 11).

A code test's ``timeout_s`` is what the sample is promised. With an engine per-item deadline
below it, a model that slept just under its per-test limit used to be cut off by the engine:
``error/timeout`` (an abstain) instead of its certain 0. The engine now makes the item's
deadline cover the verifier's declared budget, and warns once that it did.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from sandbox_helpers import score_rows

SPEC = {
    "language": "python",
    "timeout_s": 6,
    "test_timeout_s": 3,
    "memory_mb": 256,
    "tests": {
        "kind": "assert",
        "entry_point": "add",
        "code": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    },
}


def _row(name: str, body: str) -> dict[str, Any]:
    return {
        "id": name,
        "completion": f"```python\nimport time\n\ndef add(a, b):\n{body}```\n",
        "task": {"verifier": "code.tests", "spec": SPEC},
    }


ROWS = [
    _row("slow-wrong", "    time.sleep(2.5)\n    return None\n"),  # just under the test limit
    _row("too-slow", "    time.sleep(30)\n    return a + b\n"),  # past it: the model's fail
    _row("slow-right", "    time.sleep(2)\n    return a + b\n"),  # slow but within: a pass
]


def test_a_slow_model_is_judged_not_cut_off(
    new_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="verifiers.engine"):
        results = score_rows(new_provider(pool_size=1), ROWS, timeout_s=1.0)
    verdicts = {r.id: (r.status, r.reward) for r in results}
    assert verdicts == {
        "slow-wrong": ("fail", 0.0),
        "too-slow": ("fail", 0.0),
        "slow-right": ("pass", 1.0),
    }, [(r.id, r.status, r.error) for r in results]
    warnings = [r.getMessage() for r in caplog.records if "code.tests" in r.getMessage()]
    assert len(warnings) == 1 and "above the per-item timeout of 1s" in warnings[0]

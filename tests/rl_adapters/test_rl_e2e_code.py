"""End to end with the real code verifier (``code.tests``) in the local sandbox."""

from __future__ import annotations

import json

import httpx
import pytest
from rl_helpers import LiveServer
from verifiers.rl_adapters.server import ServerSettings
from verifiers.rl_adapters.trl import TRLRewards
from verifiers.rl_adapters.verl import compute_score_batch

from verifiers import EngineSettings

TESTS = "def check(f):\n    assert f(1, 2) == 3\n    assert f(2, 2) == 4\n"
TASK = {
    "verifier": "code.tests",
    "spec": {"tests": {"kind": "assert", "entry_point": "add", "code": TESTS}},
}
CALL_TASK = {
    "verifier": "code.tests",
    "spec": {
        "tests": {
            "kind": "call",
            "entry_point": "add",
            "cases": [{"args": [1, 2], "expected": 3}, {"args": [2, 2], "expected": 4}],
        }
    },
}
COMPLETIONS = [
    "```python\ndef add(a, b):\n    return a + b\n```",
    "```python\ndef add(a, b):\n    return a * b\n```",  # call kind: 2*2 == 4 passes, 1*2 fails
    "```python\ndef add(a, b) return\n```",  # syntax error
    "```python\nimport os\nos._exit(0)\n```",  # the exit-before-tests shortcut
]


@pytest.mark.bwrap
def test_trl_rewards_with_code_tests() -> None:
    settings = EngineSettings(sandbox="local", concurrency=4, timeout_s=60)
    with TRLRewards(components=["tests_passed"], asynchronous=False, settings=settings) as rewards:
        logged: dict[str, object] = {}
        tasks = [json.dumps(TASK), json.dumps(CALL_TASK), json.dumps(TASK), json.dumps(TASK)]
        main, tests_passed = (
            f(
                prompts=None,
                completions=COMPLETIONS,
                task=tasks,
                log_metric=logged.__setitem__,
                log_extra=logged.__setitem__,
            )
            for f in rewards.funcs
        )
    assert main == [1.0, 0.5, 0.0, 0.0]
    assert tests_passed == [1.0, 0.5, 0.0, 0.0]
    assert logged["verifiers_status"] == ["pass", "fail", "fail", "fail"]
    assert logged["verifiers/status/error"] == 0.0


@pytest.mark.bwrap
def test_verl_batch_with_code_tests() -> None:
    out = compute_score_batch(
        ["code"] * 4,
        COMPLETIONS,
        [None] * 4,
        [{"task": TASK}] * 4,
        sandbox="local",
        timeout_s=60,
        components=["tests_passed"],
        invalid_score=-1.0,
    )
    assert [o["score"] for o in out] == [1.0, 0.0, 0.0, 0.0]
    assert all(o["verifiers_valid"] == 1.0 for o in out)
    assert out[0]["tests_passed"] == 1.0


@pytest.mark.bwrap
def test_server_with_code_tests_and_sandbox_metrics() -> None:
    settings = ServerSettings(engine=EngineSettings(sandbox="local", concurrency=4, timeout_s=60))
    with LiveServer(settings) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        body = {
            "trajectories": [
                {"id": str(i), "completion": c, "task": TASK} for i, c in enumerate(COMPLETIONS)
            ]
        }
        results = client.post("/v1/score", json=body).json()["results"]
        assert [r["reward"] for r in results] == [1.0, 0.0, 0.0, 0.0]
        assert results[0]["components"] == {"tests_passed": 1.0}
        metrics = client.get("/metrics").text
    warm = [line for line in metrics.splitlines() if line.startswith("verifiers_sandbox_workers{")]
    assert len(warm) == 3
    assert sum(float(line.rsplit(" ", 1)[1]) for line in warm) >= 1  # the pool kept warm workers
    runtime = [
        line
        for line in metrics.splitlines()
        if line.startswith("verifiers_sandbox_runtime_workers{")
    ]
    assert any('runtime="python"' in line and 'state="waiting"' in line for line in runtime)

"""The public names of the adapters, and that importing them stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

EXPECTED = {
    "verifiers.rl_adapters": [
        "MachineConcurrency",
        "MachineSlots",
        "Scorer",
        "TaskDefaults",
        "default_lock_dir",
        "make_item",
        "result_reward",
    ],
    "verifiers.rl_adapters.trl": ["TRLRewards"],
    "verifiers.rl_adapters.deepspeed": ["DeepSpeedReward"],
    "verifiers.rl_adapters.verl": [
        "compute_score",
        "compute_score_async",
        "compute_score_batch",
        "score_dict",
    ],
    "verifiers.rl_adapters.verl_manager": [
        "MANAGER_KWARGS",
        "RAY_KWARGS",
        "VerifiersRewardManager",
    ],
    "verifiers.rl_adapters.openrlhf": [
        "DEFAULT_EOS_TOKENS",
        "OpenRLHFRequest",
        "OpenRLHFResponse",
        "OpenRLHFScoring",
        "make_reward_func",
        "reward_func",
    ],
    "verifiers.rl_adapters.server": [
        "BodyLimit",
        "RequestMetrics",
        "ScoreRequest",
        "ScoreResponse",
        "ServerSettings",
        "create_app",
        "main",
        "write_openapi",
    ],
}


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_all_is_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(EXPECTED[module])
    for name in mod.__all__:
        assert hasattr(mod, name)


def test_adapters_import_without_torch_or_fastapi() -> None:
    code = (
        "import sys, verifiers.rl_adapters, verifiers.rl_adapters.trl, verifiers.rl_adapters.verl,"
        " verifiers.rl_adapters.deepspeed, verifiers.rl_adapters.openrlhf;"
        "heavy = [m for m in ('torch', 'trl', 'fastapi', 'uvicorn', 'deepspeed', 'transformers')"
        " if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_serve_cli_delegates_to_server_main(tmp_path: object) -> None:
    from pathlib import Path

    out = Path(str(tmp_path)) / "openapi.json"
    proc = subprocess.run(
        [sys.executable, "-m", "verifiers.cli", "serve", "--write-openapi", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "/v1/score" in out.read_text()
    bad = subprocess.run(
        [sys.executable, "-m", "verifiers.cli", "serve", "--spec", "{nope"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "invalid setting" in bad.stderr

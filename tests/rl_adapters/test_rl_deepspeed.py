"""DeepSpeed adapter: a real 2-process gloo group initialised by deepspeed.init_distributed."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent

CHILD = textwrap.dedent(
    """
    import json, math, sys
    import deepspeed, torch
    import rl_helpers
    from verifiers import EngineSettings
    from verifiers.rl_adapters.deepspeed import DeepSpeedReward

    deepspeed.init_distributed(dist_backend="gloo", verbose=False)
    rank = torch.distributed.get_rank()
    settings = EngineSettings(sandbox="none", workers=1)

    def enc(pair):
        rewards, valid = pair
        return {"rewards": ["nan" if math.isnan(x) else x for x in rewards.tolist()],
                "valid": valid.tolist(), "device": str(rewards.device), "dtype": str(rewards.dtype)}

    out = {}
    def local_call(fn):
        if rank == 0:
            return enc(fn(["p"] * 3, ["a 1", "b", "c 1"], references=["1", "1", "1"]))
        return enc(fn(["p"] * 2, ["x 2", "y"], tasks=[
            {"verifier": "rltest.contains", "reference": "2"}, "{broken json"]))
    with DeepSpeedReward(verifier="rltest.contains", settings=settings) as fn:
        # the default for local inputs: each rank its own samples, position for position
        out["default"] = local_call(fn)
    with DeepSpeedReward(verifier="rltest.contains", settings=settings, gather=True) as fn:
        # local inputs, unequal counts per rank; one unscorable sample on rank 1
        if rank == 0:
            out["local"] = enc(fn(["p"] * 3, ["a 1", "b", "c 1"], references=["1", "1", "1"]))
        else:
            out["local"] = enc(fn(["p"] * 2, ["x 2", "y"], tasks=[
                {"verifier": "rltest.contains", "reference": "2"}, "{broken json"]))
    with DeepSpeedReward(verifier="rltest.contains", settings=settings, gather=False) as fn:
        out["own"] = enc(fn(None, ["a 1", "b"] if rank == 0 else ["c"], references=["1"] * (2 if rank == 0 else 1)))
    with DeepSpeedReward(verifier="rltest.contains", settings=settings, inputs="replicated") as fn:
        out["replicated"] = enc(fn(None, ["1", "2", "1", "1", "2"], references=["1"] * 5))
        out["replicated_scored_here"] = len(fn.last_results)
    with DeepSpeedReward(verifier="rltest.contains", settings=settings, inputs="replicated",
                         gather=False, fill=-1.0) as fn:
        out["replicated_own"] = enc(fn(None, ["1", "2", "1"], tasks=[None, None, "{bad"], references=["1"] * 3))
    torch.distributed.barrier()
    print("RESULT " + json.dumps(out), flush=True)
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.rl
def test_two_rank_gloo_gather(tmp_path: Path) -> None:
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": "2",
            "LOCAL_WORLD_SIZE": "2",
            "VERIFIERS_LOCK_DIR": str(tmp_path),
            "DS_ACCELERATOR": "cpu",
        }
        # Files, not pipes: a rank blocked on a full pipe that nobody reads while the other
        # rank is awaited would stall the collective both are in.
        with (
            (tmp_path / f"rank{rank}.out").open("w") as out_file,
            (tmp_path / f"rank{rank}.err").open("w") as err_file,
        ):  # the child keeps its own copies of the descriptors
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", CHILD], env=env, stdout=out_file, stderr=err_file
                )
            )
    try:
        for proc in procs:
            proc.wait(timeout=300)
    finally:
        for proc in procs:  # a rank stuck in the rendezvous must not outlive the test
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    outs: list[dict[str, Any]] = []
    for rank, proc in enumerate(procs):
        err = (tmp_path / f"rank{rank}.err").read_text()
        assert proc.returncode == 0, err[-3000:]
        out = (tmp_path / f"rank{rank}.out").read_text()
        line = next(x for x in out.splitlines() if x.startswith("RESULT "))
        outs.append(json.loads(line[len("RESULT ") :]))
    nan = "nan"
    assert outs[0]["default"]["rewards"] == [1.0, 0.0, 1.0]
    assert outs[1]["default"]["rewards"] == [1.0, nan]  # rank 1's own, not rank 0's
    assert outs[1]["default"]["valid"] == [True, False]
    for rank, out in enumerate(outs):
        assert out["local"]["rewards"] == [1.0, 0.0, 1.0, 1.0, nan]
        assert out["local"]["valid"] == [True, True, True, True, False]
        assert out["local"]["device"] == "cpu" and out["local"]["dtype"] == "torch.float32"
        assert out["own"]["rewards"] == ([1.0, 0.0] if rank == 0 else [0.0])
        assert out["replicated"]["rewards"] == [1.0, 0.0, 1.0, 1.0, 0.0]
        assert out["replicated"]["valid"] == [True] * 5
        assert out["replicated_scored_here"] == (3 if rank == 0 else 2)
    assert outs[0]["replicated_own"] == {
        "rewards": [1.0, 0.0],
        "valid": [True, True],
        "device": "cpu",
        "dtype": "torch.float32",
    }
    assert outs[1]["replicated_own"]["rewards"] == [-1.0]
    assert outs[1]["replicated_own"]["valid"] == [False]


@pytest.mark.rl
def test_single_process_without_a_group() -> None:
    import rl_helpers  # noqa: F401
    import torch
    from verifiers.rl_adapters.deepspeed import DeepSpeedReward

    from verifiers import EngineSettings

    with DeepSpeedReward(verifier="rltest.contains", settings=EngineSettings(sandbox="none")) as fn:
        rewards, valid = fn(["p", "p"], ["has 3", "no"], references=["3", None])
        assert rewards.dtype == torch.float32 and valid.dtype == torch.bool
        assert rewards[0].item() == 1.0 and math.isnan(rewards[1].item())  # skipped: no reference
        assert valid.tolist() == [True, False]
        assert fn.last_results[1].status == "skipped"
        with pytest.raises(ValueError, match="references"):
            fn(None, ["a", "b"], references=["1"])

"""Benchmark: game.godot on a warm runner pool vs a cold sandbox and engine per check.

``--checks`` small physics scenes (a ball dropped onto a floor from a varying height, 120
frames, an ``at_rest`` probe) are verified through ``game.godot``

* **warm**: one provider whose runner (a bubblewrap runner or a container) stays up: per
  check one engine process (Godot is a separate binary, so every check starts the engine;
  ``--fixed-fps`` makes the frames themselves fast);
* **cold**: a fresh provider per check: the runner (container or bubblewrap) and the engine
  start for every check, which is what a peer that launches the engine in a fresh container
  per sample pays.

The engine's own start (about 0.1 s of CPU) is paid by both: a warm Godot server that loads
scenes on request would remove it, but then one engine process would host many models'
scripts in turn, which the isolation stack forbids (nothing survives a job). Prints one JSON
line: ``speedup`` is cold wall time over warm wall time (the gate's ratio); the
``*_job_cpu_p50_s`` are the CPU seconds of a check's sandbox job (the jail and the engine:
the sandbox's own accounting), which move far less with the load of a shared machine than
wall time does. Usage::

    python benchmarks/godot.py [--checks 20] [--backend local|docker]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from verifiers.domains.godot import GodotScene, GodotSpec
from verifiers.sandbox import SandboxSettings, open_provider

from verifiers.context import VerifierContext
from verifiers.types import Trajectory

CORPUS = Path(__file__).resolve().parents[1] / "datasets" / "godot" / "corpus.jsonl"
_START = "0, 0, 1, 0, 3, 0 )"


def _scene() -> str:
    """The corpus's honest ball scene (``ball-comes-to-rest``), its start height a ``{h}``."""
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["id"] == "ball-comes-to-rest":
            text = str(item["completion"])
            assert _START in text, "the corpus's ball scene changed: update benchmarks/godot.py"
            return text.replace(_START, "0, 0, 1, 0, {h}, 0 )")
    raise SystemExit(f"no ball-comes-to-rest line in {CORPUS}")


SCENE = _scene()

SPEC = GodotSpec.model_validate(
    {
        "frames": 120,
        "probes": [{"kind": "at_rest", "node": "Ball", "min": [-1, 0.9, -1], "max": [1, 1.1, 1]}],
    }
)


async def _check(provider: Any, i: int, spec: GodotSpec = SPEC) -> tuple[str, float, float, float]:
    """Status, the check's wall time, the engine process's own wall time, and the job's CPU
    seconds (the sandbox's accounting: engine, jail)."""
    traj = Trajectory(
        completion=SCENE.format(h=1.5 + (i % 5) * 0.2), task={"verifier": "game.godot"}
    )
    ctx = VerifierContext(deadline=time.monotonic() + 300, base_dir=Path("."), sandboxes=provider)
    started = time.perf_counter()
    result = await GodotScene().verify(traj, spec, ctx)
    engine = float(result.details.get("engine", {}).get("seconds") or 0.0)
    job_cpu = float((ctx.resources() or {}).get("cpu_s") or 0.0)
    return result.status, time.perf_counter() - started, engine, job_cpu


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    args = parser.parse_args(argv)
    provider = open_provider(args.backend, SandboxSettings(pool_size=1))
    try:
        await _check(provider, -1)  # start the runner (not timed)
        # Where a warm check's time goes: the same check with 1 frame instead of 120 (engine
        # start, scene load, harness and host work without the frames).
        one = SPEC.model_copy(update={"frames": 1})
        short = [await _check(provider, i, one) for i in range(args.checks)]
        started = time.perf_counter()
        warm = [await _check(provider, i) for i in range(args.checks)]
        warm_s = time.perf_counter() - started
    finally:
        await provider.close()
    started = time.perf_counter()
    cold = []
    for i in range(args.checks):
        fresh = open_provider(args.backend, SandboxSettings(pool_size=1))
        try:
            cold.append(await _check(fresh, i))
        finally:
            await fresh.close()
    cold_s = time.perf_counter() - started
    out = {
        "benchmark": "godot",
        "backend": args.backend,
        "checks": args.checks,
        "warm_checks_per_s": round(args.checks / warm_s, 3),
        "cold_checks_per_s": round(args.checks / cold_s, 3),
        "speedup": round(cold_s / warm_s, 2),
        "warm_all_pass": all(s[0] == "pass" for s in warm),
        "cold_all_pass": all(s[0] == "pass" for s in cold),
        "warm_check_p50_s": round(statistics.median(s[1] for s in warm), 3),
        "warm_engine_p50_s": round(statistics.median(s[2] for s in warm), 3),
        "one_frame_check_p50_s": round(statistics.median(s[1] for s in short), 3),
        "one_frame_engine_p50_s": round(statistics.median(s[2] for s in short), 3),
        "warm_job_cpu_p50_s": round(statistics.median(s[3] for s in warm), 4),
        "cold_job_cpu_p50_s": round(statistics.median(s[3] for s in cold), 4),
        "one_frame_job_cpu_p50_s": round(statistics.median(s[3] for s in short), 4),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    asyncio.run(main())

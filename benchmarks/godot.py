"""Benchmark: game.godot on a warm runner pool vs a cold sandbox and engine per check.

``--checks`` small physics scenes (a ball dropped onto a floor from a varying height, 120
frames, an ``at_rest`` probe) are verified through ``game.godot``

* **warm**: one provider whose runner (a bubblewrap runner or a container) stays up: per
  check one engine process (Godot is a separate binary, so every check starts the engine;
  ``--fixed-fps`` makes the frames themselves fast);
* **cold**: a fresh provider per check: the runner (container or bubblewrap) and the engine
  start for every check, which is what a peer that launches the engine in a fresh container
  per sample pays.

* **fork**: the fork server (``domains/godot/_forkbatch.py``): one sandbox job starts the
  engine once and forks one jailed child per check, which runs the same harness; the checks
  go through it as one batch, each read back and scored like a warm check.

The engine's own start (about 0.1 s of CPU) is paid per check by warm and cold, once per
batch by fork. warm and fork run in ``--rounds`` interleaved rounds (order alternating), so
the load of a shared machine moves both alike. Prints one JSON line: ``speedup`` is cold wall
time over warm wall time (the verifier's path today), ``fork_speedup`` cold over fork (the
gate's ratio for a warm fork-server worker: >= 5); ``*_job_cpu_p50_s`` are the CPU seconds
of a check's sandbox job (the jail and the engine: the sandbox's own accounting),
``fork_child_cpu_p50_s`` a forked child's own (wait4), ``fork_batch_cpu_s`` the whole
batch job's (driver, server start and every child), which move far less with the load than
wall time does. Usage::

    python benchmarks/godot.py [--checks 20] [--rounds 2] [--backend local|docker]
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
from verifiers.domains.godot._checks import evaluate
from verifiers.domains.godot._fresh import run_fresh
from verifiers.domains.godot._verifier import project_of
from verifiers.sandbox import SandboxSettings, open_provider

from verifiers.context import VerifierContext
from verifiers.types import Trajectory

CORPUS = Path(__file__).resolve().parents[1] / "datasets" / "godot" / "corpus.jsonl"
_START = "0, 0, 1, 0, 3, 0 )"
CONCURRENCY = 8
"""The engine's default ``concurrency`` (``VERIFIERS_CONCURRENCY``)."""


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


def _trajectory(i: int) -> Trajectory:
    return Trajectory(
        completion=SCENE.format(h=1.5 + (i % 5) * 0.2), task={"verifier": "game.godot"}
    )


async def _check(
    provider: Any, i: int, spec: GodotSpec = SPEC, *, fresh: bool = True
) -> tuple[str, float, float, float]:
    """Status, the check's wall time, the engine process's own wall time (the child's, for
    the fork server), and the CPU seconds of its sandbox job (fresh; 0 for a forked child,
    whose job is the batch's) or of its child (fork)."""
    traj = _trajectory(i)
    ctx = VerifierContext(deadline=time.monotonic() + 300, base_dir=Path("."), sandboxes=provider)
    started = time.perf_counter()
    if fresh:  # one engine per check: the fork server's fallback
        files = project_of(traj, spec)
        assert isinstance(files, dict)
        result = evaluate(await run_fresh(files, spec, ctx), spec)
    else:  # the verifier's own path: the fork server
        result = await GodotScene().verify(traj, spec, ctx)
    engine = result.details.get("engine", {})
    cpu = float((ctx.resources() or {}).get("cpu_s") or engine.get("cpu_s") or 0.0)
    return result.status, time.perf_counter() - started, float(engine.get("seconds") or 0), cpu


async def _group(provider: Any, count: int) -> tuple[list[tuple[str, float, float, float]], float]:
    """``count`` checks through the verifier's path as the engine calls it: at most
    ``CONCURRENCY`` at once (its default), so checks that arrive together share a fork
    server. Each check's result, and the wall time of all."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> tuple[str, float, float, float]:
        async with gate:
            return await _check(provider, i, fresh=False)

    started = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(count)))
    return list(results), time.perf_counter() - started


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    args = parser.parse_args(argv)
    provider = open_provider(args.backend, SandboxSettings(pool_size=1))
    try:
        await _check(provider, -1)  # start the runner (not timed)
        # Where a fresh engine's time goes: the same check with 1 frame instead of 120
        # (engine start, scene load, harness and host work without the frames).
        one = SPEC.model_copy(update={"frames": 1})
        short = [await _check(provider, i, one) for i in range(args.checks)]
        await _group(provider, 1)  # the same runner, warmed for a fork-server job too
        warm: list[tuple[str, float, float, float]] = []
        fork: list[tuple[str, float, float, float]] = []
        warm_s = fork_s = 0.0
        for r in range(args.rounds):
            for phase in ("warm", "fork") if r % 2 == 0 else ("fork", "warm"):
                started = time.perf_counter()
                if phase == "warm":
                    warm += [await _check(provider, i) for i in range(args.checks)]
                    warm_s += time.perf_counter() - started
                else:
                    results, wall = await _group(provider, args.checks)
                    fork += results
                    fork_s += wall
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
    done = args.checks * args.rounds
    out = {
        "benchmark": "godot",
        "backend": args.backend,
        "checks": args.checks,
        "rounds": args.rounds,
        "warm_checks_per_s": round(done / warm_s, 3),
        "fork_checks_per_s": round(done / fork_s, 3),
        "cold_checks_per_s": round(args.checks / cold_s, 3),
        "speedup": round((cold_s / args.checks) / (warm_s / done), 2),
        "fork_speedup": round((cold_s / args.checks) / (fork_s / done), 2),
        "warm_all_pass": all(s[0] == "pass" for s in warm),
        "fork_all_pass": all(s[0] == "pass" for s in fork),
        "cold_all_pass": all(s[0] == "pass" for s in cold),
        "warm_check_p50_s": round(statistics.median(s[1] for s in warm), 3),
        "warm_engine_p50_s": round(statistics.median(s[2] for s in warm), 3),
        "one_frame_check_p50_s": round(statistics.median(s[1] for s in short), 3),
        "one_frame_engine_p50_s": round(statistics.median(s[2] for s in short), 3),
        "warm_job_cpu_p50_s": round(statistics.median(s[3] for s in warm), 4),
        "cold_job_cpu_p50_s": round(statistics.median(s[3] for s in cold), 4),
        "one_frame_job_cpu_p50_s": round(statistics.median(s[3] for s in short), 4),
        "fork_check_p50_s": round(statistics.median(s[1] for s in fork), 3),
        "fork_child_p50_s": round(statistics.median(s[2] for s in fork), 3),
        "fork_child_cpu_p50_s": round(statistics.median(s[3] for s in fork), 4),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    asyncio.run(main())

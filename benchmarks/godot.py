"""Benchmark: game.godot's own path (the fork server) vs a cold sandbox and engine per check.

``--checks`` small physics scenes (a ball dropped onto a floor from a varying height, 120
frames, an ``at_rest`` probe) are verified through ``game.godot``:

* **fork**: the verifier's own path (``GodotScene.verify``), ``--concurrency`` checks at
  once as the engine calls it (default: all ``--checks``, one trainer group scored at
  once): checks that arrive together run as forked, jailed children of one warm engine
  (``domains/godot/_forkqueue.py``), each read back and scored like a fresh engine's;
* **warm**: one engine process per check (``_fresh.run_fresh``, the fork server's
  fallback) on one provider whose runner (bubblewrap or a container) stays up;
* **cold**: a fresh provider per check: the runner and the engine start for every check,
  which is what a peer that launches the engine in a fresh container per sample pays.

The engine's own start (about 0.1 s of CPU) is paid per check by warm and cold, once per
batch by fork. All three run in ``--rounds`` interleaved rounds (order alternating), so the
load of a shared machine moves them alike. Prints one JSON line: ``fork_speedup`` is
cold time per check over fork time per check (the gate: >= 5), ``speedup`` cold over warm;
``*_job_cpu_p50_s`` are the CPU seconds of a check's sandbox job (the sandbox's own
accounting), ``fork_job_cpu_per_check_s`` a fork-server batch job's over its checks (the
server's start, the children and the driver: the fork path's CPU per check, to compare
with ``cold_job_cpu_p50_s``), ``fork_child_cpu_p50_s`` a forked child's own (wait4), and
``fork_profile_p50_s`` where a forked check's time goes on the driver's clock (its batch's
server start and size, preparing its project, its child, collecting); ``fork_forked``
counts the checks a forked child ran (the rest ran fresh). Usage::

    python benchmarks/godot.py [--checks 20] [--rounds 2] [--backend local|docker]
        [--concurrency N]
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
PROFILES: list[dict[str, float]] = []
"""The fork server's profile of each forked check (``details.engine.profile``)."""


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
    wall = time.perf_counter() - started
    PROFILES.append(dict(engine.get("profile") or {}))
    return result.status, wall, float(engine.get("seconds") or 0), cpu


async def _group(
    provider: Any, count: int, concurrency: int
) -> tuple[list[tuple[str, float, float, float]], float]:
    """``count`` checks through the verifier's path as the engine calls it: at most
    ``concurrency`` at once, so checks that arrive together share a fork server. Each
    check's result, and the wall time of all."""
    gate = asyncio.Semaphore(concurrency)

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
    parser.add_argument(
        "--concurrency",
        type=int,
        default=0,
        help="checks verified at once on the verifier's path (the engine's `concurrency`); "
        "default: --checks, one trainer group scored at once",
    )
    args = parser.parse_args(argv)
    concurrency = args.concurrency or args.checks
    provider = open_provider(args.backend, SandboxSettings(pool_size=1))
    try:
        await _check(provider, -1)  # start the runner (not timed)
        # Where a fresh engine's time goes: the same check with 1 frame instead of 120
        # (engine start, scene load, harness and host work without the frames).
        one = SPEC.model_copy(update={"frames": 1})
        short = [await _check(provider, i, one) for i in range(args.checks)]
        await _group(provider, 1, 1)  # the same runner, warmed for a fork-server job too
        warm: list[tuple[str, float, float, float]] = []
        fork: list[tuple[str, float, float, float]] = []
        cold: list[tuple[str, float, float, float]] = []
        warm_s = fork_s = cold_s = 0.0
        for r in range(args.rounds):
            for phase in ("warm", "fork", "cold") if r % 2 == 0 else ("cold", "fork", "warm"):
                started = time.perf_counter()
                if phase == "warm":
                    warm += [await _check(provider, i) for i in range(args.checks)]
                    warm_s += time.perf_counter() - started
                elif phase == "fork":
                    results, wall = await _group(provider, args.checks, concurrency)
                    fork += results
                    fork_s += wall
                else:
                    for i in range(args.checks):
                        fresh = open_provider(args.backend, SandboxSettings(pool_size=1))
                        try:
                            cold.append(await _check(fresh, i))
                        finally:
                            await fresh.close()
                    cold_s += time.perf_counter() - started
    finally:
        await provider.close()
    done = args.checks * args.rounds
    out = {
        "benchmark": "godot",
        "backend": args.backend,
        "checks": args.checks,
        "rounds": args.rounds,
        "concurrency": concurrency,
        "warm_checks_per_s": round(done / warm_s, 3),
        "fork_checks_per_s": round(done / fork_s, 3),
        "cold_checks_per_s": round(done / cold_s, 3),
        "speedup": round(cold_s / warm_s, 2),
        "fork_speedup": round(cold_s / fork_s, 2),
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
        "fork_profile_p50_s": {
            k: round(statistics.median(p[k] for p in PROFILES if k in p), 4)
            for k in ("server_start_s", "prepare_s", "child_s", "collect_s", "batch")
            if any(k in p for p in PROFILES)
        },
        "fork_job_cpu_per_check_s": round(
            statistics.median(p["batch_cpu_s"] / p["batch"] for p in PROFILES if p), 4
        )
        if any(PROFILES)
        else None,
        "fork_forked": sum(1 for p in PROFILES if p),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    asyncio.run(main())

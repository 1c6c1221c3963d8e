"""Benchmark: render.blender's warm workers vs a cold Blender process per scene (same run).

40 small scenes (64x64, Cycles CPU, 8 samples) are verified

* **warm**: through ``render.blender`` on the shared sandbox stack (``ctx.sandbox("blender")``:
  warm runners whose zygote preloaded bpy and warmed Cycles; per job one untrusted script
  session and one fresh judge session, each a fork of the zygote; full checks and host-side
  PNG decoding), ``--workers`` jobs in parallel on ``--workers`` runners;
* **cold**: the way peers run Blender: one fresh ``python -c`` per scene that imports bpy,
  runs the script, renders with the same settings, writes the PNG and exits (no sandbox, no
  checks), with the same parallelism.

Besides throughput, each mode reports the CPU seconds it spent per scene (``cpu_per_scene``):
on a shared machine the throughput ratio moves with the load (a cold Blender suffers from
contention far more than a fork does), while CPU per scene does not. Warm: ``host`` (this
process: verifier, PNG decoding, checks), ``jobs`` (the sandbox jobs' own CPU, from
``details.resources``) and, on Docker, ``containers`` (everything in the runners' cgroups:
jobs, runners, zygote forks). Cold: the Blender processes (``RUSAGE_CHILDREN``).

Prints one JSON line; the table in docs/benchmarks/render.md comes from it. Usage::

    python benchmarks/render.py [--scenes 40] [--workers 2] [--backend local|docker]
        [--python ~/.cache/verifiers/bpy-venv/bin/python]  # the cold peer's interpreter
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from verifiers.domains.render import BlenderRender, RenderSpec
from verifiers.sandbox import SandboxSettings, open_provider

from verifiers.context import VerifierContext
from verifiers.types import Trajectory

SPEC = {"resolution": [64, 64], "samples": 8, "timeout_s": 60, "expect": {"min_objects": 2}}

COLD_RENDER = """
import bpy
s = bpy.context.scene
s.render.engine = "CYCLES"; s.cycles.device = "CPU"; s.cycles.samples = 8
s.cycles.use_denoising = False; s.cycles.use_adaptive_sampling = False
s.render.resolution_x = 64; s.render.resolution_y = 64; s.render.resolution_percentage = 100
s.render.threads_mode = "FIXED"; s.render.threads = 1
s.render.image_settings.file_format = "PNG"; s.render.filepath = {path!r}
bpy.ops.render.render(write_still=True)
"""


def make_scene(seed: int) -> str:
    """A small random scene: floor, 1-6 primitives, a light, a camera aimed at the origin."""
    rng = random.Random(seed)
    lines = ["import bpy", "import mathutils", "bpy.ops.mesh.primitive_plane_add(size=12)"]
    kinds = ["cube", "uv_sphere", "cylinder", "cone", "torus", "ico_sphere"]
    for i in range(rng.randint(1, 6)):
        kind = rng.choice(kinds)
        x, y = rng.uniform(-3, 3), rng.uniform(-3, 3)
        lines.append(f"bpy.ops.mesh.primitive_{kind}_add(location=({x:.2f}, {y:.2f}, 1.0))")
        lines.append(f'bpy.context.active_object.name = "Part{i}"')
    light = rng.choice(["SUN", "POINT", "AREA"])
    energy = {"SUN": 3.0, "POINT": 1500.0, "AREA": 800.0}[light]
    lines += [
        f'bpy.ops.object.light_add(type="{light}", location=(2, -2, 6))',
        f"bpy.context.active_object.data.energy = {energy}",
        "bpy.ops.object.camera_add(location=(9, -9, 7))",
        "cam = bpy.context.active_object",
        "cam.rotation_euler = (mathutils.Vector((0, 0, 0.5)) - cam.location)"
        '.to_track_quat("-Z", "Y").to_euler()',
        "bpy.context.scene.camera = cam",
    ]
    return "\n".join(lines) + "\n"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def summary(latencies: list[float], total: float) -> dict[str, float]:
    return {
        "total_s": round(total, 3),
        "scenes_per_s": round(len(latencies) / total, 3),
        "p50_s": round(statistics.median(latencies), 4),
        "p95_s": round(pct(latencies, 0.95), 4),
    }


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _container_cpu(provider: Any) -> float | None:
    """CPU seconds of the provider's containers so far (cgroup v1 or v2 accounting), or None."""
    ids = getattr(provider, "container_ids", None)
    if ids is None:
        return None
    total = 0.0
    for cid in ids():
        v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage")
        v2 = Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cpu.stat")
        try:
            if v1.is_file():
                total += int(v1.read_text()) / 1e9
            elif v2.is_file():
                stat = dict(line.split() for line in v2.read_text().splitlines())
                total += int(stat["usage_usec"]) / 1e6
            else:
                return None
        except (OSError, ValueError, KeyError):
            return None
    return total


async def run_warm(scenes: list[str], backend: str, workers: int) -> dict[str, Any]:
    verifier = BlenderRender()
    provider = open_provider(backend, SandboxSettings(pool_size=workers))  # type: ignore[arg-type]
    spec = RenderSpec.model_validate(SPEC)
    sem = asyncio.Semaphore(workers)
    job_cpu: list[float] = []

    async def one(script: str) -> tuple[float, str]:
        async with sem:
            traj = Trajectory(
                completion=f"```python\n{script}```", task={"verifier": "render.blender"}
            )
            ctx = VerifierContext(
                deadline=time.monotonic() + 300, base_dir=Path("."), sandboxes=provider
            )
            started = time.perf_counter()
            result = await verifier.verify(traj, spec, ctx)
            job_cpu.append(float((ctx.resources() or {}).get("cpu_s", 0.0)))
            return time.perf_counter() - started, result.status

    started = time.perf_counter()
    # Start the runners (zygote: import bpy, warm-up render) before the clock for the scenes.
    await asyncio.gather(*(one(scenes[0]) for _ in range(workers)))
    startup = time.perf_counter() - started
    job_cpu.clear()
    host_before, containers_before = _self_cpu(), _container_cpu(provider)
    started = time.perf_counter()
    done = await asyncio.gather(*(one(s) for s in scenes))
    total = time.perf_counter() - started
    host_cpu, containers_after = _self_cpu() - host_before, _container_cpu(provider)
    await verifier.close()
    await provider.close()
    statuses = [status for _, status in done]
    cpu = {"host": host_cpu / len(scenes), "jobs": sum(job_cpu) / len(scenes)}
    if containers_before is not None and containers_after is not None:
        cpu["containers"] = (containers_after - containers_before) / len(scenes)
    return {
        **summary([lat for lat, _ in done], total),
        "startup_s": round(startup, 3),
        "passed": statuses.count("pass"),
        "cpu_per_scene": {k: round(v, 4) for k, v in cpu.items()},
    }


async def run_cold(scenes: list[str], python: Path, workers: int) -> dict[str, Any]:
    sem = asyncio.Semaphore(workers)
    tmp = Path(tempfile.mkdtemp(prefix="render-bench-"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}

    async def one(i: int, script: str) -> tuple[float, bool]:
        async with sem:
            png = tmp / f"{i}.png"
            code = "import bpy\nbpy.ops.wm.read_factory_settings(use_empty=True)\n" + script
            code += COLD_RENDER.format(path=str(png))
            started = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                str(python),
                "-c",
                code,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                env=env,
            )
            await proc.wait()
            return time.perf_counter() - started, proc.returncode == 0 and png.is_file()

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = await asyncio.gather(*(one(i, s) for i, s in enumerate(scenes)))
    total = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        **summary([lat for lat, _ in done], total),
        "ok": sum(ok for _, ok in done),
        "cpu_per_scene": round(cpu / len(scenes), 4),
    }


def _warm_cpu(warm: dict[str, Any]) -> float:
    """All CPU a warm scene cost: the host's plus the containers' (docker) or the jobs'."""
    cpu = warm["cpu_per_scene"]
    return float(cpu["host"]) + float(cpu.get("containers", cpu["jobs"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", choices=["local", "docker"], default="local")
    parser.add_argument(
        "--python",
        type=Path,
        default=Path("~/.cache/verifiers/bpy-venv/bin/python").expanduser(),
        help="interpreter with bpy for the cold peer",
    )
    args = parser.parse_args(argv)
    scenes = [make_scene(seed) for seed in range(args.scenes)]
    warm = asyncio.run(run_warm(scenes, args.backend, args.workers))
    cold = asyncio.run(run_cold(scenes, args.python, args.workers))
    record = {
        "benchmark": "render",
        "scenes": args.scenes,
        "workers": args.workers,
        "backend": args.backend,
        "cpus": os.cpu_count(),
        "warm": warm,
        "cold": cold,
        "speedup": round(warm["scenes_per_s"] / cold["scenes_per_s"], 2),
        "cpu_ratio": round(cold["cpu_per_scene"] / max(1e-9, _warm_cpu(warm)), 2),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(record), flush=True)
    return 0 if warm["passed"] == args.scenes and cold["ok"] == args.scenes else 1


if __name__ == "__main__":
    sys.exit(main())

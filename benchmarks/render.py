"""Benchmark: render.blender's warm workers vs a cold Blender process per scene (same run).

40 small scenes (64x64, Cycles CPU, 8 samples) are verified

* **warm**: through ``render.blender`` on the shared sandbox stack (``ctx.sandbox("blender")``:
  warm runners whose zygote preloaded bpy and warmed Cycles; per job one untrusted script
  session and one fresh judge session, each a fork of the zygote; full checks and host-side
  PNG decoding), ``--workers`` jobs in parallel on ``--workers`` runners, with ``--in-flight``
  scenes queued over them (default 2 x workers, as the engine's concurrency 8 over pool_size
  4), so a runner never waits on the host's bookkeeping between a scene's two sessions;
* **cold**: the way peers run Blender: one fresh ``python -c`` per scene that imports bpy,
  runs the script, renders with the same settings, writes the PNG and exits (no sandbox, no
  checks), with the same parallelism.

Besides throughput, each mode reports the CPU seconds it spent per scene (``cpu_per_scene``):
on a shared machine the throughput ratio moves with the load (a cold Blender suffers from
contention far more than a fork does), while CPU per scene does not. Warm: ``host`` (this
process: verifier, PNG decoding, checks), ``jobs`` (the sandbox jobs' own CPU, from
``details.resources``) and, on Docker, ``containers`` (everything in the runners' cgroups:
jobs, runners, zygote forks) or, locally, ``runner`` and ``zygote`` (from ``/proc``): the
ratio is all-in on both backends. Cold: the Blender processes (``RUSAGE_CHILDREN``).

``--ab N`` alternates N rounds of the old path (every file read back in a round trip of its
own, and with ``--old-images DIR`` that folder's ``blender/`` runtime, e.g. main's preload) and
this tree, and prints the medians of each side: ``cpu_cut`` (all-in CPU per scene) and
``throughput_gain``.

Prints one JSON line; the table in docs/benchmarks/render.md comes from it. Usage::

    python benchmarks/render.py [--scenes 40] [--workers 2] [--backend local|docker]
        [--python ~/.cache/verifiers/bpy-venv/bin/python]  # the cold peer's interpreter
        [--cpu-pinning on|off]  # the warm runners' SandboxSettings.cpu_pinning
    python benchmarks/render.py --phases 12 [--backend local|docker]
    python benchmarks/render.py --ab 3 [--scenes 30] [--backend local|docker]
        [--old-images DIR]  # interleaved old/new path

``--split N`` runs N warm scenes on each backend, one after the other (local, docker, local,
docker), and prints per scene, by role, CPU seconds split into user and system time and the
page faults: ``jobs`` (the job cgroups' accounts: local, the runners' cgroups, whose children
are the jobs; docker, the containers' cgroups less their long-lived processes), ``sandbox``
(the runners, zygotes and launchers that live through the run, from ``/proc``) and ``host``
(this process). Faults count the same however loaded the machine is; CPU does not quite
(cache and SMT contention), so the backends alternate.

``--phases N`` profiles a warm scene instead (one runner, N scenes one after the other, the
first two not counted): it runs the verifier's own two sessions with a copy of
``_worker.py`` that records, at each step, the job's CPU seconds (``getrusage``) and its
monotonic clock, and prints the medians per step: ``to_entry`` (the fork, the runner's job
setup and loading the worker, from the job's start), the model's ``script``, ``pack`` and
``save_blend`` (script session); ``open_blend``, ``inspect``, ``settings``, ``render``,
``save_png``, ``report`` (judge session); ``after_last`` (the job's exit: its total CPU from
the runner minus the last mark); plus the host's and the runner's CPU per scene (local
backend: from ``/proc``) and the saved scene's size. CPU is what the load does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import marshal
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from verifiers.domains.render import RUNTIME, BlenderRender, RenderSpec
from verifiers.sandbox import Sandbox, SandboxSettings, open_provider
from verifiers.sandbox._client import RunnerSandbox

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


class _NoPrefetch:
    """``--ab``'s old side: ``Sandbox.prefetch`` ignored, so every file the verifier reads
    back costs a round trip of its own, as before prefetch existed."""

    def __enter__(self) -> None:
        self.saved = RunnerSandbox.prefetch
        RunnerSandbox.prefetch = Sandbox.prefetch  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        RunnerSandbox.prefetch = self.saved  # type: ignore[method-assign]


def _provider(backend: str, workers: int, images: Path | None = None, pinning: bool = True) -> Any:
    """``workers`` warm runners; ``images``: a folder whose ``blender/`` definition is used
    instead of this tree's (``--ab --old-images``: main's preload, built); ``pinning``:
    ``SandboxSettings.cpu_pinning`` (``--cpu-pinning off``, the A/B of session 20)."""
    settings = SandboxSettings(
        pool_size=workers, image_dirs=(images,) if images else (), cpu_pinning=pinning
    )
    return open_provider(backend, settings)  # type: ignore[arg-type]


async def run_warm(
    scenes: list[str],
    backend: str,
    workers: int,
    in_flight: int,
    images: Path | None = None,
    pinning: bool = True,
) -> dict[str, Any]:
    verifier = BlenderRender()
    provider = _provider(backend, workers, images, pinning)
    spec = RenderSpec.model_validate(SPEC)
    sem = asyncio.Semaphore(in_flight)
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
    tree_before = _tree_cpu()
    started = time.perf_counter()
    done = await asyncio.gather(*(one(s) for s in scenes))
    total = time.perf_counter() - started
    host_cpu, containers_after = _self_cpu() - host_before, _container_cpu(provider)
    sandbox_cpu = _roles_cpu(tree_before, _tree_cpu())
    await verifier.close()
    await provider.close()
    statuses = [status for _, status in done]
    cpu = {"host": host_cpu / len(scenes), "jobs": sum(job_cpu) / len(scenes)}
    if containers_before is not None and containers_after is not None:
        cpu["containers"] = (containers_after - containers_before) / len(scenes)
    elif sandbox_cpu:  # local: the runners and zygotes under this process, from /proc
        for role in ("runner", "zygote"):
            cpu[role] = sandbox_cpu.get(role, 0.0) / len(scenes)
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
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        **summary([lat for lat, _ in done], total),
        "ok": sum(ok for _, ok in done),
        "cpu_per_scene": round(cpu / len(scenes), 4),
    }


_MARKS = """
import resource as _resource
_MARKS = []
def _mark(name):
    usage = _resource.getrusage(_resource.RUSAGE_SELF)
    _MARKS.append([name, time.monotonic(), usage.ru_utime + usage.ru_stime])
def _dump_marks():
    with open("marks.json", "w") as fh:
        json.dump(_MARKS, fh)
"""
_PROBES = [  # (a line of _worker.py, the mark that goes before it)
    ("    path = os.path.abspath(SCRIPT_NAME)\n", '_mark("entry")'),
    ('    report["script_s"] = ', '_mark("script")'),
    ("    saved, save_error = error is None", '_mark("pack")'),
    ("    report.update(ok=error is None, error=error,", '_mark("save_blend")'),
    ("    import numpy as np\n\n    bpy = _import_bpy()", '_mark("entry")'),
    ("        scene_info = _inspect(np)\n", '_mark("open_blend")'),
    ('    if job.get("mesh_export")', '_mark("inspect")'),
    ("    bpy.ops.render.render(write_still=False)\n    result", '_mark("settings")'),
    ('    result = bpy.data.images.get("Render Result")', '_mark("render")'),
    ('    info: dict[str, Any] = {"ok": True', '_mark("save_png")'),
]


def _instrumented_worker(source: str) -> str:
    """``_worker.py`` with a CPU/clock mark before each step (``--phases``)."""
    source = source.replace("SCRIPT_NAME = ", _MARKS + "\nSCRIPT_NAME = ", 1)
    for anchor, mark in _PROBES:
        if anchor not in source:
            raise SystemExit(f"--phases: _worker.py changed, no {anchor.strip()!r} to mark")
        indent = anchor[: len(anchor) - len(anchor.lstrip())]
        source = source.replace(anchor, f"{indent}{mark}\n{anchor}", 1)
    for end in (
        "        json.dump(report, fh)\n",
        "        json.dump(_clean(report), fh, allow_nan=False)\n",
    ):
        if end not in source:
            raise SystemExit(f"--phases: _worker.py changed, no {end.strip()!r} to mark")
        source = source.replace(end, end + '    _mark("report")\n    _dump_marks()\n', 1)
    return source


def _tree_cpu() -> dict[str, float]:
    """CPU seconds of this process's Python descendants by role (local backend: the runner
    under bubblewrap, and its zygote one level below), keyed ``role:pid``."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    pending = [(os.getpid(), 0)]
    while pending:
        pid, depth = pending.pop()
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        pending += [(int(kid), depth + 1) for kid in kids]
        comm, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
        if depth >= 3 and comm.startswith("python"):
            utime, stime = rest.split()[11:13]
            role = "zygote" if depth == 4 else "runner" if depth == 3 else "other"
            out[f"{role}:{pid}"] = (int(utime) + int(stime)) / tick
    return out


def _roles_cpu(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds by role between two :func:`_tree_cpu` snapshots (processes in both)."""
    roles: dict[str, float] = {}
    for key, value in after.items():
        if key in before:
            role = key.split(":")[0]
            roles[role] = roles.get(role, 0.0) + value - before[key]
    return roles


async def run_phases(n: int, backend: str) -> dict[str, Any]:
    """Per-step CPU and wall of warm scenes, through the verifier's own two sessions."""
    from verifiers.domains.render import _verifier

    source = _instrumented_worker(_verifier._WORKER_SOURCE.decode()).encode()
    # Shipped and loaded as the verifier ships and loads the real one (compiled on the host).
    code = marshal.dumps(compile(source, "_worker.py", "exec"))
    files = {"_worker.py": source, "_worker.pyc": importlib.util.MAGIC_NUMBER + bytes(12) + code}
    argv = ["python", "-c", _verifier._WORKER_LOADER]
    spec = RenderSpec.model_validate(SPEC)
    limits = BlenderRender()._limits(spec)
    job = {
        "render": {
            "resolution": [64, 64],
            "samples": 8,
            "denoise": False,
            "threads": 1,
            "exr_check": False,
        },
        "mesh_export": None,
    }
    provider = open_provider(backend, SandboxSettings(pool_size=1))  # type: ignore[arg-type]

    def steps(marks: list[list[Any]], run: Any) -> dict[str, float]:
        out = {"to_entry": marks[0][2]}
        for (_, t0, c0), (name, t1, c1) in zip(marks, marks[1:], strict=False):
            out[name] = c1 - c0
            out[name + "_wall"] = t1 - t0
        out["after_last"] = run.cpu_s - marks[-1][2]
        out["job_cpu"], out["job_wall"] = run.cpu_s, run.duration_s
        return out

    rows: list[dict[str, Any]] = []
    before: dict[str, float] = {}
    host = 0.0
    size = []
    for i in range(n + 2):
        if i == 2:
            before, host = _tree_cpu(), _self_cpu()
        async with provider.session(RUNTIME, **limits) as sb:
            await sb.write_files(files, readonly=True)
            await sb.write_files({"scene.py": make_scene(i)})
            for name in ("marks.json", "scene.blend"):  # read back as the verifier does
                sb.prefetch(name, max_bytes=128 << 20)
            run_a = await sb.exec([*argv, "script"], timeout=60)
            marks_a = json.loads(await sb.read_file("marks.json", max_bytes=128 << 20))
            blend = await sb.read_file("scene.blend", max_bytes=128 << 20)
        async with provider.session(RUNTIME, **limits) as sb:
            await sb.write_files(
                {**files, "scene.blend": blend, "job.json": json.dumps(job)}, readonly=True
            )
            for name in ("marks.json", "render.png", "report.json"):
                sb.prefetch(name, max_bytes=64 << 20)
            run_b = await sb.exec([*argv, "judge"], timeout=60)
            marks_b = json.loads(await sb.read_file("marks.json", max_bytes=64 << 20))
            await sb.read_file("render.png", max_bytes=64 << 20)
            await sb.read_file("report.json", max_bytes=64 << 20)
        if i >= 2:
            rows.append({"script": steps(marks_a, run_a), "judge": steps(marks_b, run_b)})
            size.append(len(blend))
    host = (_self_cpu() - host) / n
    roles = {k: v / n for k, v in _roles_cpu(before, _tree_cpu()).items()}
    await provider.close()
    out: dict[str, Any] = {}
    for side in ("script", "judge"):
        out[side] = {
            k: round(statistics.median(r[side][k] for r in rows), 4) for k in rows[0][side]
        }
    out["per_scene_cpu"] = {"host": round(host, 4), **{k: round(v, 4) for k, v in roles.items()}}
    out["blend_kb"] = round(statistics.median(size) / 1024, 1)
    return out


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_usage(pid: int) -> tuple[float, float, int] | None:
    """(user s, system s, minor + major faults) of one live process, from ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2 :].split()
    return int(rest[11]) / _TICK, int(rest[12]) / _TICK, int(rest[7]) + int(rest[9])


def _flat(path: Path) -> dict[str, int]:
    """A cgroup ``key value`` file as a dict ({} when unreadable)."""
    try:
        return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}
    except (OSError, ValueError):
        return {}


def _cgroup_usage(cpu_dir: Path, memory_dir: Path) -> tuple[float, float, int]:
    """(user s, system s, faults) of a cgroup and its children, dead tasks included (v1
    ``cpuacct.stat`` and ``memory.stat``'s ``total_pgfault``, or v2 ``cpu.stat`` and
    ``memory.stat``'s ``pgfault``)."""
    v1 = _flat(cpu_dir / "cpuacct.stat")
    memory = _flat(memory_dir / "memory.stat")
    if v1:
        faults = memory.get("total_pgfault", 0) + memory.get("total_pgmajfault", 0)
        return v1.get("user", 0) / _TICK, v1.get("system", 0) / _TICK, faults
    v2 = _flat(cpu_dir / "cpu.stat")
    faults = memory.get("pgfault", 0) + memory.get("pgmajfault", 0)
    return v2.get("user_usec", 0) / 1e6, v2.get("system_usec", 0) / 1e6, faults


def _descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
            kids = [
                int(k)
                for t in tasks
                for k in Path(f"/proc/{parent}/task/{t}/children").read_text().split()
            ]
        except OSError:
            continue
        found += kids
        pending += kids
    return found


def _split_snapshot(provider: Any, backend: str) -> dict[str, Any]:
    """Usage so far of the host, the sandbox's live processes and the jobs' cgroups."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    groups: list[tuple[Path, Path]] = []
    if backend == "docker":
        pids: list[int] = []
        for cid in provider.container_ids():
            v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}")
            if v1.is_dir():
                groups.append((v1, Path(f"/sys/fs/cgroup/memory/docker/{cid}")))
            else:
                scope = Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope")
                groups.append((scope, scope))
            procs = (groups[-1][0] / "cgroup.procs").read_text().split()
            pids += [int(p) for p in procs]
    else:
        pids = _descendants(os.getpid())
        for slot in provider._pool._slots.values():
            for handle in [*slot.idle, *slot.busy]:
                dirs = handle.cgroup.dirs if handle.cgroup is not None else {}
                cpu = dirs.get("cpuacct", dirs.get("unified"))
                if cpu:
                    groups.append((Path(cpu), Path(dirs.get("memory", cpu))))
    cgroup = [0.0, 0.0, 0]
    for cpu_dir, memory_dir in groups:
        for i, value in enumerate(_cgroup_usage(cpu_dir, memory_dir)):
            cgroup[i] += value
    procs = {pid: usage for pid in pids if (usage := _proc_usage(pid)) is not None}
    return {
        "host": (me.ru_utime, me.ru_stime, me.ru_minflt + me.ru_majflt),
        "procs": procs,
        "cgroup": cgroup,
        "in_cgroup": backend == "docker",
    }


def _split_delta(before: dict[str, Any], after: dict[str, Any], n: int) -> dict[str, Any]:
    """Per scene, by role: ``[user s, system s, faults]``."""
    sandbox = [0.0, 0.0, 0]
    for pid, usage in after["procs"].items():
        if pid in before["procs"]:  # lived through the run: a runner, zygote or launcher
            for i in range(3):
                sandbox[i] += usage[i] - before["procs"][pid][i]
    jobs = [after["cgroup"][i] - before["cgroup"][i] for i in range(3)]
    if after["in_cgroup"]:  # docker: the container's cgroup holds the runner and zygote too
        jobs = [jobs[i] - sandbox[i] for i in range(3)]
    host = [after["host"][i] - before["host"][i] for i in range(3)]
    out = {}
    for role, usage in (("jobs", jobs), ("sandbox", sandbox), ("host", host)):
        out[role] = {"user": usage[0] / n, "sys": usage[1] / n, "faults": usage[2] / n}
    out["all_in"] = {k: sum(out[r][k] for r in ("jobs", "sandbox", "host")) for k in out["host"]}
    return {
        role: {k: round(v, 4 if k != "faults" else 1) for k, v in d.items()}
        for role, d in out.items()
    }


async def run_split(
    scenes: list[str], backend: str, workers: int, in_flight: int
) -> dict[str, Any]:
    """Warm scenes as :func:`run_warm` runs them, with the CPU split of :func:`_split_delta`."""
    verifier = BlenderRender()
    provider = _provider(backend, workers)
    spec = RenderSpec.model_validate(SPEC)
    sem = asyncio.Semaphore(in_flight)

    async def one(script: str) -> str:
        async with sem:
            traj = Trajectory(
                completion=f"```python\n{script}```", task={"verifier": "render.blender"}
            )
            ctx = VerifierContext(
                deadline=time.monotonic() + 300, base_dir=Path("."), sandboxes=provider
            )
            return (await verifier.verify(traj, spec, ctx)).status

    try:
        await asyncio.gather(*(one(scenes[0]) for _ in range(workers)))
        before = _split_snapshot(provider, backend)
        started = time.perf_counter()
        statuses = await asyncio.gather(*(one(s) for s in scenes))
        total = time.perf_counter() - started
        after = _split_snapshot(provider, backend)
    finally:
        await verifier.close()
        await provider.close()
    return {
        "backend": backend,
        "passed": statuses.count("pass"),
        "scenes_per_s": round(len(scenes) / total, 3),
        **_split_delta(before, after, len(scenes)),
    }


def _warm_cpu(warm: dict[str, Any]) -> float:
    """All CPU a warm scene cost: the host's plus the containers' (docker: jobs, runners and
    zygote forks) or, locally, the jobs', the runners' and the zygotes'."""
    cpu = warm["cpu_per_scene"]
    sandbox = cpu.get("containers", cpu["jobs"] + cpu.get("runner", 0.0) + cpu.get("zygote", 0.0))
    return float(cpu["host"]) + float(sandbox)


async def run_ab(
    rounds: int,
    scenes: list[str],
    workers: int,
    in_flight: int,
    backend: str,
    old_images: Path | None,
) -> dict[str, Any]:
    """Interleaved A/B: the old path (no prefetch: one round trip per file read back; with
    ``old_images``, that folder's blender runtime, e.g. main's full-factory preload) and this
    tree, in alternating order, ``rounds`` times each, in one process and one load window."""
    sides: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for i in range(rounds):
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        for side in order:
            if side == "new":
                warm = await run_warm(scenes, backend, workers, in_flight)
            else:
                with _NoPrefetch():
                    warm = await run_warm(scenes, backend, workers, in_flight, old_images)
            sides[side].append(
                {
                    "scenes_per_s": warm["scenes_per_s"],
                    "cpu_all_in": round(_warm_cpu(warm), 4),
                    **warm["cpu_per_scene"],
                }
            )
    out: dict[str, Any] = {}
    for side, runs in sides.items():
        out[side] = {k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]}
        out[side]["runs"] = runs
    out["throughput_gain"] = round(out["new"]["scenes_per_s"] / out["old"]["scenes_per_s"], 3)
    out["cpu_cut"] = round(1 - out["new"]["cpu_all_in"] / out["old"]["cpu_all_in"], 3)
    return out


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
    parser.add_argument(
        "--in-flight",
        type=int,
        default=0,
        help="scenes the warm side has in flight (default: 2 x workers, the engine's own "
        "ratio of concurrency to sandbox pool_size, 8 over 4); still at most --workers jobs "
        "run at once, as the cold peer runs at most --workers Blender processes",
    )
    parser.add_argument("--phases", type=int, default=0, help="profile N warm scenes instead")
    parser.add_argument(
        "--split", type=int, default=0, help="N warm scenes per backend: CPU user/sys, faults"
    )
    parser.add_argument(
        "--ab", type=int, default=0, help="N interleaved rounds of the old and new path"
    )
    parser.add_argument(
        "--old-images",
        type=Path,
        default=None,
        help="--ab: a folder holding the old blender/ runtime definition (built)",
    )
    parser.add_argument(
        "--cpu-pinning",
        choices=["on", "off"],
        default="on",
        help="SandboxSettings.cpu_pinning of the warm side (default on, the default)",
    )
    args = parser.parse_args(argv)
    pinning = args.cpu_pinning == "on"
    in_flight = args.in_flight or 2 * args.workers
    scenes = [make_scene(seed) for seed in range(max(args.scenes, args.split))]
    if args.ab:
        ab = asyncio.run(
            run_ab(args.ab, scenes, args.workers, in_flight, args.backend, args.old_images)
        )
        record = {
            "benchmark": "render-ab",
            "scenes": args.scenes,
            "workers": args.workers,
            "backend": args.backend,
            "in_flight": in_flight,
            "old_images": str(args.old_images) if args.old_images else None,
            **ab,
            "load_avg": [round(x, 2) for x in os.getloadavg()],
        }
        print(json.dumps(record), flush=True)
        return 0
    if args.split:
        rows = []
        for backend in ("local", "docker", "local", "docker"):
            split = asyncio.run(run_split(scenes[: args.split], backend, args.workers, in_flight))
            rows.append({**split, "load_avg": [round(x, 2) for x in os.getloadavg()]})
        print(json.dumps({"benchmark": "render-split", "scenes": args.split, "runs": rows}))
        return 0
    if args.phases:
        phases = asyncio.run(run_phases(args.phases, args.backend))
        record = {
            "benchmark": "render-phases",
            "scenes": args.phases,
            "backend": args.backend,
            **phases,
            "load_avg": [round(x, 2) for x in os.getloadavg()],
        }
        print(json.dumps(record), flush=True)
        return 0
    warm = asyncio.run(run_warm(scenes, args.backend, args.workers, in_flight, pinning=pinning))
    cold = asyncio.run(run_cold(scenes, args.python, args.workers))
    record = {
        "benchmark": "render",
        "scenes": args.scenes,
        "workers": args.workers,
        "in_flight": in_flight,
        "backend": args.backend,
        "cpu_pinning": pinning,
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
